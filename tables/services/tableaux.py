"""Banker's tableaux as versions (docs/rules.md, "Tableau versions").

Tableaux are versioned data: a variant is a new row, never an edit, made from
an existing version by changing cells; a table moves to it through
house_rules_change (from a date, never retroactively), and every coup keeps
the version it was checked against.

A cell is named ``"<banker total>/<column>"``: the banker's two-card total
0..7, then the punter's third card 0..9 or ``stood`` ("3/9": the banker on 3
against a 9; "6/stood": the banker on 6 when the punter stood).
"""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.utils import timezone

from casino.bounds import check_start_day
from casino.changelog import log_action

from .. import chemmy
from ..errors import Invalid
from ..models import HouseRules, Table, TableauVersion

STOOD = "stood"
# Column names in the order of a row: stood, then the punter's third card 0..9.
COLUMN_NAMES: tuple[str, ...] = (STOOD, *(str(v) for v in range(10)))
BANKER_TOTALS = tuple(range(8))
CELL_VALUES = tuple(a.value for a in chemmy.Action)


def cell_key(total: int, column: int) -> str:
    return f"{total}/{COLUMN_NAMES[column]}"


def parse_cell(key: object) -> tuple[int, int]:
    """``"3/9"`` -> (3, 10): the row and the column index in it. ValueError
    when the key names no cell."""
    if not isinstance(key, str):
        raise ValueError(f"{key!r} is not a cell")
    total, sep, col = key.partition("/")
    if (
        not sep
        or not (total.isascii() and total.isdigit())
        or int(total) not in BANKER_TOTALS
        or col not in COLUMN_NAMES
    ):
        raise ValueError(
            f"{key!r} is not a cell: a banker total 0-7, a slash, and the "
            "punter's third card 0-9 or 'stood' (such as '3/9')"
        )
    return int(total), COLUMN_NAMES.index(col)


def tableau_create(
    *, version: str, rows: dict, user, reason: str, description: str = "",
    device: str = "", source: str = "", cells: dict | None = None,
) -> TableauVersion:
    reason = (reason or "").strip() if isinstance(reason, str) else ""
    if not reason:
        raise Invalid("reason", "a new tableau needs a reason")
    version = (version or "").strip() if isinstance(version, str) else ""
    if not version or len(version) > 64:
        raise Invalid("version", "a name of 1 to 64 characters")
    if not isinstance(description, str):
        raise Invalid("description", "must be text")
    if len(description) > 200:
        raise Invalid("description", "at most 200 characters")
    try:
        engine = chemmy.Tableau.from_dict({"version": version, "rows": rows})
    except ValueError as exc:
        raise Invalid("rows", str(exc)) from None
    with transaction.atomic():
        if TableauVersion.objects.filter(version=version).exists():
            raise Invalid("version", f"tableau {version!r} already exists")
        row = TableauVersion.objects.create(
            version=version, description=description.strip(),
            rows=engine.to_dict()["rows"])
        new = {"version": version, "rows": row.rows, "description": row.description}
        if source:
            new |= {"from_version": source, "cells": cells or {}}
        log_action(action="tables.tableau.created", user=user, device=device,
                   obj=row, reason=reason, new=new)
    return row


def tableau_derive(
    *, from_version: str, version: str, cells: object, user, reason: str,
    description: str = "", device: str = "",
) -> TableauVersion:
    """A new version made from ``from_version`` with some cells changed
    (``{"3/9": "S", "5/4": "D"}``). Every refusal names its field and writes
    nothing: an unknown source, a cell key or value that is not one, no
    change at all, a name taken, no reason."""
    if not isinstance(reason, str) or not reason.strip():
        raise Invalid("reason", "a new tableau needs a reason")
    source = TableauVersion.objects.filter(
        version=from_version if isinstance(from_version, str) else "").first()
    if source is None:
        raise Invalid("from_version", f"unknown tableau {from_version!r}")
    rows = {str(t): list(source.as_engine().to_dict()["rows"][str(t)])
            for t in BANKER_TOTALS}
    if not isinstance(cells, dict) or not cells:
        raise Invalid("cells", "name at least one cell to change, such as "
                      '{"3/9": "S"}')
    changed: dict[str, dict[str, str]] = {}
    for key, value in cells.items():
        try:
            total, column = parse_cell(key)
        except ValueError as exc:
            raise Invalid("cells", str(exc)) from None
        if value not in CELL_VALUES:
            raise Invalid("cells", f"{key}: {value!r} is not one of D, S, O")
        old = rows[str(total)][column]
        if old != value:
            rows[str(total)][column] = value
            changed[cell_key(total, column)] = {"from": old, "to": value}
    if not changed:
        raise Invalid("cells", f"no cell differs from {source.version}: "
                      "a new version must change at least one")
    return tableau_create(
        version=version, rows=rows, user=user, reason=reason,
        description=description, device=device, source=source.version,
        cells=changed)


def tableau_diff(a: TableauVersion, b: TableauVersion) -> list[dict]:
    """The cells where ``b`` differs from ``a``, row by row: each with its
    key, banker total, column and both values."""
    ra, rb = a.as_engine().rows, b.as_engine().rows
    return [
        {"cell": cell_key(t, c), "banker": t, "column": COLUMN_NAMES[c],
         "from": ra[t][c].value, "to": rb[t][c].value}
        for t in BANKER_TOTALS for c in range(len(COLUMN_NAMES))
        if ra[t][c] != rb[t][c]
    ]


def rules_in_force_now(table: Table) -> HouseRules | None:
    """The house rules the table plays now: its open session's, else the
    version a session opened now would play."""
    from .facts import gaming_day_for
    from .house import rules_in_force

    session = table.sessions.filter(closed_at__isnull=True).first()
    if session is not None:
        return session.house_rules
    if table.rules is None:
        return None
    return rules_in_force(table, gaming_day_for(timezone.now(),
                                                table.rules.gaming_day_cutoff))


def tableau_in_force(table: Table) -> TableauVersion | None:
    rules = rules_in_force_now(table)
    return rules.tableau if rules else None


def tableau_assign(
    *, table: Table, tableau_version: object, user, reason: str,
    effective_from: date | None = None, device: str = "",
) -> HouseRules:
    """Move a table to a tableau version from a gaming day: a new version of
    its house rules (house_rules_change), every other rule kept. Never
    retroactive: a day before the current gaming day is refused."""
    from .facts import gaming_day_for
    from .house import house_rules_change

    if not isinstance(tableau_version, str) or not TableauVersion.objects.filter(
            version=tableau_version).exists():
        raise Invalid("tableau_version", f"unknown tableau {tableau_version!r}")
    if effective_from is not None:
        if not isinstance(effective_from, date):
            raise Invalid("effective_from", "must be a date")
        cutoff = table.rules.gaming_day_cutoff if table.rules else 6
        today = gaming_day_for(timezone.now(), cutoff)
        if effective_from < today:
            raise Invalid(
                "effective_from",
                f"never retroactive: {effective_from} is before the current "
                f"gaming day ({today}); coups already played keep their tableau",
            )
        check_start_day("effective_from", effective_from, today=today)
    return house_rules_change(
        table=table, user=user, reason=reason, device=device,
        effective_from=effective_from, tableau_version=tableau_version)
