"""Keeping DailyRollup in step with the coups.

`rollup_apply(coup, codes, sign=+1)` adds a coup revision to its cell;
a correction applies the old revision with sign=-1 and the new with +1, in
the same transaction; `rollup_apply_many` adds a whole shoe's new coups at
once. `rollup_rebuild` recomputes cells from the current revisions (for the
proof test and for repairs).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, localcontext
from functools import lru_cache

from django.db.models import Exists, F, OuterRef

from .chemmy.odds import house_odds, levy
from .models import Coup, DailyRollup, Finding

OUTCOME_FIELD = {"banker": "banker_wins", "punter": "punter_wins", "tie": "ties"}


PLACES = Decimal("1e-10")


@lru_cache(maxsize=256)
def _p_banker(decks: int, tableau: str, punter_five: str, cells: tuple) -> Decimal:
    """P(banker wins) for a house's play (tables/chemmy/odds.py), exact, as a
    Decimal of 34 digits; a few milliseconds once per play and process."""
    from .services.ledger_store import tableau_for

    odds = house_odds(decks=decks, tableau=tableau_for(tableau),
                      punter_five=punter_five, banker_prescriptions=dict(cells))
    p = odds.p_banker
    with localcontext() as ctx:
        ctx.prec = 34
        return Decimal(p.numerator) / Decimal(p.denominator)


def levy_expectation(coup: Coup) -> tuple[Decimal, Decimal]:
    """The expected levy of a coup and its variance, under its own house rules
    (levy_expectation_of)."""
    return levy_expectation_of(coup.rules, coup.tableau_version, coup.covered)


def levy_expectation_of(rules, tableau_version: str, covered: Decimal
                        ) -> tuple[Decimal, Decimal]:
    """P(banker) x the commission a banker win on ``covered`` takes (the
    house's rate, unit and rounding), and P(1 - P) x that squared; each to 10
    places, so that every writer and every re-computation sums the same."""
    p = _p_banker(rules.decks, tableau_version, rules.punter_five,
                  tuple(sorted((rules.banker_prescriptions or {}).items())))
    win = levy(covered, rate=rules.commission_rate, unit=rules.commission_unit,
               rounding=rules.commission_rounding)
    with localcontext() as ctx:
        ctx.prec = 34
        return ((p * win).quantize(PLACES),
                (p * (1 - p) * win * win).quantize(PLACES))


class _Delta:
    """What some coup revisions add to (or take from) one cell."""

    __slots__ = ("coups", "outcomes", "covered", "covered_sq", "commission",
                 "levy_mean", "levy_var", "codes")

    def __init__(self) -> None:
        self.coups = 0
        self.outcomes = dict.fromkeys(OUTCOME_FIELD.values(), 0)
        self.covered = Decimal("0")
        self.covered_sq = Decimal("0")
        self.commission = Decimal("0")
        self.levy_mean = Decimal("0")
        self.levy_var = Decimal("0")
        self.codes: list[tuple[str, int]] = []

    def add(self, coup: Coup, codes: Iterable[str], sign: int = 1) -> None:
        self.coups += sign
        self.outcomes[OUTCOME_FIELD[coup.outcome]] += sign
        self.covered += sign * coup.covered
        self.covered_sq += sign * coup.covered * coup.covered
        self.commission += sign * coup.commission
        mean, var = levy_expectation(coup)
        self.levy_mean += sign * mean
        self.levy_var += sign * var
        self.codes.extend((code, sign) for code in codes)

    def apply(self, cell: DailyRollup) -> None:
        cell.coups += self.coups
        for field, n in self.outcomes.items():
            setattr(cell, field, getattr(cell, field) + n)
        cell.covered += self.covered
        cell.covered_sq += self.covered_sq
        cell.commission += self.commission
        cell.levy_mean = Decimal(cell.levy_mean) + self.levy_mean
        cell.levy_var = Decimal(cell.levy_var) + self.levy_var
        findings = dict(cell.findings)
        for code, sign in self.codes:
            findings[code] = findings.get(code, 0) + sign
            if findings[code] == 0:
                del findings[code]
        cell.findings = findings


def rollup_apply(coup: Coup, codes: Iterable[str], *, table_id: int, sign: int = 1):
    """Add (sign=+1) or remove (sign=-1) one coup revision from its cell.
    The cell row is locked, so concurrent writers never lose a count."""
    key = {
        "table_id": table_id,
        "gaming_day": coup.gaming_day,
        "croupier_id": coup.entered_by_id,
        "banker_seat": coup.banker_seat,
    }
    delta = _Delta()
    delta.add(coup, codes, sign)
    if not delta.codes:
        # The common case, in one statement: no JSON to merge.
        field = OUTCOME_FIELD[coup.outcome]
        updated = DailyRollup.objects.filter(**key).update(
            coups=F("coups") + sign,
            **{field: F(field) + sign},
            covered=F("covered") + delta.covered,
            covered_sq=F("covered_sq") + delta.covered_sq,
            commission=F("commission") + delta.commission,
            levy_mean=F("levy_mean") + delta.levy_mean,
            levy_var=F("levy_var") + delta.levy_var,
        )
        if updated:
            return
    cell = DailyRollup.objects.select_for_update().filter(**key).first()
    if cell is None:
        cell = DailyRollup(**key, findings={})
    delta.apply(cell)
    cell.save()


ROLLUP_SUMS = [
    "coups", *OUTCOME_FIELD.values(), "covered", "covered_sq", "commission",
    "levy_mean", "levy_var", "findings",
]


def rollup_apply_many(coups: Iterable[tuple[Coup, Iterable[str]]], *, table_id: int):
    """Add many new coups (with their finding codes) to their cells: summed
    per cell first, then one locking read and one write for the cells that
    exist, one insert for those that do not, however many coups and cells
    (a whole shoe recorded by shoe_play)."""
    deltas: dict[tuple, _Delta] = {}
    for coup, codes in coups:
        key = (coup.gaming_day, coup.entered_by_id, coup.banker_seat)
        delta = deltas.get(key)
        if delta is None:
            delta = deltas[key] = _Delta()
        delta.add(coup, codes)
    if not deltas:
        return
    # A table-day holds a few cells: read (and lock) the few that might be
    # ours with IN lists, cheaper to build than one condition per cell.
    days, croupiers, seats = (set(k[i] for k in deltas) for i in range(3))
    cells = {
        (c.gaming_day, c.croupier_id, c.banker_seat): c
        for c in DailyRollup.objects.select_for_update()
        .filter(
            table_id=table_id,
            gaming_day__in=days,
            croupier_id__in=croupiers,
            banker_seat__in=seats,
        )
        .order_by()
    }
    changed, created = [], []
    for key, delta in deltas.items():
        cell = cells.get(key)
        if cell is None:
            day, croupier_id, seat = key
            cell = DailyRollup(
                table_id=table_id,
                gaming_day=day,
                croupier_id=croupier_id,
                banker_seat=seat,
                covered_sq=Decimal("0"),
                findings={},
            )
            created.append(cell)
        else:
            changed.append(cell)
        delta.apply(cell)
    if changed:
        # Their rows are locked and the new sums computed: one upsert writes
        # them all (cheaper to build than bulk_update's CASE per column).
        DailyRollup.objects.bulk_create(
            changed,
            update_conflicts=True,
            unique_fields=["table", "gaming_day", "croupier", "banker_seat"],
            update_fields=ROLLUP_SUMS,
        )
    if created:
        # A plain insert: a cell someone else created meanwhile is an
        # IntegrityError, never a count overwritten.
        DailyRollup.objects.bulk_create(created)


def current_coups():
    """Coups that no later revision supersedes."""
    newer = Coup.objects.filter(
        shoe=OuterRef("shoe"), seq=OuterRef("seq"), revision__gt=OuterRef("revision")
    )
    return Coup.objects.filter(~Exists(newer))


def rollup_recompute(**filters) -> dict[tuple, dict]:
    """Cells computed from scratch from the current revisions."""
    cells: dict[tuple, dict] = {}
    coups = current_coups().filter(**filters).select_related("shoe__session", "rules")
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
                "levy_mean": Decimal("0"),
                "levy_var": Decimal("0"),
                "findings": {},
            },
        )
        mean, var = levy_expectation(c)
        cell["levy_mean"] += mean
        cell["levy_var"] += var
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
            "levy_mean": r.levy_mean,
            "levy_var": r.levy_var,
            "findings": dict(r.findings),
        }
    return out
