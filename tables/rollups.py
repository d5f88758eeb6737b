"""Keeping DailyRollup in step with the coups.

`rollup_apply(coup, codes, sign=+1)` adds a coup revision to its cell;
a correction applies the old revision with sign=-1 and the new with +1, in
the same transaction. `rollup_rebuild` recomputes cells from the current
revisions (for the proof test and for repairs).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Exists, F, OuterRef

from .models import Coup, DailyRollup, Finding

OUTCOME_FIELD = {"banker": "banker_wins", "punter": "punter_wins", "tie": "ties"}


def rollup_apply(coup: Coup, codes: Iterable[str], *, table_id: int, sign: int = 1):
    """Add (sign=+1) or remove (sign=-1) one coup revision from its cell.
    The cell row is locked, so concurrent writers never lose a count."""
    key = {
        "table_id": table_id,
        "gaming_day": coup.gaming_day,
        "croupier_id": coup.entered_by_id,
        "banker_seat": coup.banker_seat,
    }
    codes = list(codes)
    field = OUTCOME_FIELD[coup.outcome]
    if not codes:
        # The common case, in one statement: no JSON to merge.
        updated = DailyRollup.objects.filter(**key).update(
            coups=F("coups") + sign,
            **{field: F(field) + sign},
            covered=F("covered") + sign * coup.covered,
            covered_sq=F("covered_sq") + sign * coup.covered * coup.covered,
            commission=F("commission") + sign * coup.commission,
        )
        if updated:
            return
    cell = DailyRollup.objects.select_for_update().filter(**key).first()
    if cell is None:
        cell = DailyRollup(**key, findings={})
    cell.coups += sign
    setattr(cell, field, getattr(cell, field) + sign)
    cell.covered += sign * coup.covered
    cell.covered_sq += sign * coup.covered * coup.covered
    cell.commission += sign * coup.commission
    findings = dict(cell.findings)
    for code in codes:
        findings[code] = findings.get(code, 0) + sign
        if findings[code] == 0:
            del findings[code]
    cell.findings = findings
    cell.save()


def current_coups():
    """Coups that no later revision supersedes."""
    newer = Coup.objects.filter(
        shoe=OuterRef("shoe"), seq=OuterRef("seq"), revision__gt=OuterRef("revision")
    )
    return Coup.objects.filter(~Exists(newer))


def rollup_recompute(**filters) -> dict[tuple, dict]:
    """Cells computed from scratch from the current revisions."""
    cells: dict[tuple, dict] = {}
    coups = current_coups().filter(**filters).select_related("shoe__session")
    finding_codes: dict[int, list[str]] = {}
    for f in Finding.objects.filter(coup__in=coups).values("coup_id", "code"):
        finding_codes.setdefault(f["coup_id"], []).append(f["code"])
    for c in coups.iterator():
        key = (c.shoe.session.table_id, c.gaming_day, c.entered_by_id, c.banker_seat)
        cell = cells.setdefault(
            key,
            {
                "coups": 0,
                "banker_wins": 0,
                "punter_wins": 0,
                "ties": 0,
                "covered": Decimal("0"),
                "covered_sq": Decimal("0"),
                "commission": Decimal("0"),
                "findings": {},
            },
        )
        cell["coups"] += 1
        cell[OUTCOME_FIELD[c.outcome]] += 1
        cell["covered"] += c.covered
        cell["covered_sq"] += c.covered * c.covered
        cell["commission"] += c.commission
        for code in finding_codes.get(c.pk, []):
            cell["findings"][code] = cell["findings"].get(code, 0) + 1
    return cells


def rollup_snapshot(**filters) -> dict[tuple, dict]:
    """The stored cells, in the same shape as rollup_recompute (empty cells
    left by corrections are skipped)."""
    out = {}
    for r in DailyRollup.objects.filter(**filters):
        if r.coups == 0:
            continue
        out[(r.table_id, r.gaming_day, r.croupier_id, r.banker_seat)] = {
            "coups": r.coups,
            "banker_wins": r.banker_wins,
            "punter_wins": r.punter_wins,
            "ties": r.ties,
            "covered": r.covered,
            "covered_sq": r.covered_sq,
            "commission": r.commission,
            "findings": dict(r.findings),
        }
    return out
