"""The coup detail export: every current coup revision of a period, streamed.

Rows come from a server-side cursor (PostgreSQL) in chunks and go straight to
the file, so memory stays flat however many coups there are; progress is
reported every PROGRESS_EVERY rows (a write per row would cost more than the
row itself).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from datetime import date

from django.db.models import Sum

from tables.models import DailyRollup
from tables.rollups import current_coups

from .writers import stamp_lines

PROGRESS_EVERY = 5000
FIELDS = (
    ("gaming_day", "gaming_day"),
    ("table", "shoe__session__table__name"),
    ("session", "shoe__session_id"),
    ("shoe", "shoe__number"),
    ("seq", "seq"),
    ("revision", "revision"),
    ("recorded_at", "created_at"),
    ("croupier", "entered_by__username"),
    ("banker_seat", "banker_seat"),
    ("punter_seat", "punter_seat"),
    ("punter_cards", "punter_cards"),
    ("banker_cards", "banker_cards"),
    ("punter_total", "punter_total"),
    ("banker_total", "banker_total"),
    ("outcome", "outcome"),
    ("natural", "natural"),
    ("bank_before", "bank_before"),
    ("covered", "covered"),
    ("garage", "garage"),
    ("commission", "commission"),
    ("bank_after", "bank_after"),
    ("findings", "finding_count"),
    ("tableau", "tableau_version"),
)


def coups_expected(params: dict) -> int:
    """How many rows the export will have, from the rollups (cheap)."""
    qs = DailyRollup.objects.filter(
        gaming_day__gte=params["from_day"], gaming_day__lte=params["to_day"]
    )
    if params.get("tables"):
        qs = qs.filter(table_id__in=params["tables"])
    return qs.aggregate(n=Sum("coups"))["n"] or 0


def coup_rows(params: dict) -> Iterator[tuple]:
    qs = current_coups().filter(
        gaming_day__gte=date.fromisoformat(params["from_day"]),
        gaming_day__lte=date.fromisoformat(params["to_day"]),
    )
    if params.get("tables"):
        qs = qs.filter(shoe__session__table_id__in=params["tables"])
    qs = qs.order_by("gaming_day", "shoe_id", "seq").values_list(
        *(f for _, f in FIELDS)
    )
    return qs.iterator(chunk_size=PROGRESS_EVERY)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return " ".join(v)  # cards: "9H KD 2C"
    return v if isinstance(v, str) else str(v)


def write_coups_csv(
    params: dict, path, *, stamp: dict, progress: Callable[[int], None] | None = None
) -> int:
    n = 0
    with open(path, "w", newline="", encoding="utf-8", buffering=1 << 20) as f:
        w = csv.writer(f)
        for key, value in stamp_lines(stamp):
            w.writerow([key, value])
        w.writerow([])
        w.writerow([name for name, _ in FIELDS])
        cell = _cell
        for row in coup_rows(params):
            w.writerow([cell(v) for v in row])
            n += 1
            if progress is not None and n % PROGRESS_EVERY == 0:
                progress(n)
    return n
