"""Periods and table lists as the requests name them (a report, a re-audit,
a surveillance run, an evidence bundle): checked once, here, below every
service that takes them; a bad one is refused naming its field."""

from __future__ import annotations

from datetime import date, datetime

from casino.api import MAX_ID
from casino.bounds import check_day
from casino.errors import Invalid
from tables.models import Table

# A report's longest period (ten years of gaming days).
MAX_DAYS = 3660


def parse_day(value, field: str) -> date:
    if isinstance(value, datetime):
        raise Invalid(field, "must be a gaming day (YYYY-MM-DD), not a time")
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise Invalid(field, "must be a gaming day as YYYY-MM-DD") from None


def check_period(from_day, to_day, *, max_days: int = MAX_DAYS,
                 what: str = "a report") -> tuple[date, date]:
    """A period of gaming days, from_day to to_day included, at most max_days
    long; a bad one names its field (the surveillance's runs use it too)."""
    start, end = parse_day(from_day, "from_day"), parse_day(to_day, "to_day")
    check_day("from_day", start)  # 2000 to a year ahead (casino/bounds.py)
    check_day("to_day", end)
    if end < start:
        raise Invalid("to_day", "must be on or after from_day")
    if (end - start).days >= max_days:
        raise Invalid("to_day", f"{what} covers at most {max_days} gaming days")
    return start, end


def check_tables(table_ids) -> list[int]:
    if not table_ids:
        return []
    if not isinstance(table_ids, list | tuple) or not all(
        type(t) is int and 1 <= t <= MAX_ID for t in table_ids
    ):
        raise Invalid("tables", "must be a list of table ids")
    found = set(Table.objects.filter(pk__in=table_ids).values_list("pk", flat=True))
    missing = sorted(set(table_ids) - found)
    if missing:
        raise Invalid("tables", f"no table with id {missing[0]}")
    return sorted(found)
