"""Keeping the rollups in step with the coups.

Each coup revision adds to one row of every grain (GRAINS: the finest
DailyRollup cell, and the coarser rows the reports read), in the coup's own
transaction. `rollup_apply(coup, codes, sign=+1)` adds a coup revision; a
correction applies the old revision with sign=-1 and the new with +1;
`rollup_apply_many` adds a whole shoe's new coups at once; the PostgreSQL
fast path writes the same rows as upserts (services/ledger_pg.py).
`rollup_recompute` computes a grain from the current revisions and
`rollups_hold` compares every grain with it (the proof tests).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal, localcontext
from functools import lru_cache

from django.db.models import Exists, F, OuterRef

from .chemmy.odds import house_odds, levy
from .models import (
    Coup,
    CroupierMonthRollup,
    DailyRollup,
    Finding,
    SeatMonthRollup,
    TableDayRollup,
)

OUTCOME_FIELD = {"banker": "banker_wins", "punter": "punter_wins", "tie": "ties"}


PLACES = Decimal("1e-10")


@lru_cache(maxsize=256)
def _p_banker(decks: int, tableau: str, punter_five: str, cells: tuple) -> Decimal:
    """P(banker wins) for a house's play (tables/chemmy/odds.py), exact, as a
    Decimal of 34 digits; a few milliseconds once per play and process."""
    from .services.facts import tableau_for

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

    def merge(self, other: _Delta) -> None:
        self.coups += other.coups
        for field, n in other.outcomes.items():
            self.outcomes[field] += n
        self.covered += other.covered
        self.covered_sq += other.covered_sq
        self.commission += other.commission
        self.levy_mean += other.levy_mean
        self.levy_var += other.levy_var
        self.codes.extend(other.codes)

    def apply(self, cell) -> None:
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


class Grain:
    """One rollup table and how a coup finds its row there: the key columns
    (besides table_id) and their values for a coup."""

    def __init__(self, model, fields: tuple[str, ...], values):
        self.model = model
        self.fields = fields  # key columns after table_id, as model attnames
        self.values = values  # coup -> the values of those columns

    def key(self, coup: Coup) -> tuple:
        return self.values(coup)

    def filters(self, table_id: int, key: tuple) -> dict:
        return {"table_id": table_id, **dict(zip(self.fields, key, strict=True))}

    @property
    def unique(self) -> list[str]:
        return ["table", *(f.removesuffix("_id") for f in self.fields)]


def month_of(day) -> object:
    """A gaming day's gaming month, as its first day."""
    return day.replace(day=1)


# Every grain a coup adds to, finest first. DailyRollup is the cell the ledger
# check re-computes; the others are what the reports read (selectors.py):
# a table-day per house-rules version, a croupier's and a banker seat's month.
GRAINS = (
    Grain(DailyRollup, ("gaming_day", "croupier_id", "banker_seat"),
          lambda c: (c.gaming_day, c.entered_by_id, c.banker_seat)),
    Grain(TableDayRollup, ("gaming_day", "rules_id"),
          lambda c: (c.gaming_day, c.rules_id)),
    Grain(CroupierMonthRollup, ("month", "croupier_id"),
          lambda c: (month_of(c.gaming_day), c.entered_by_id)),
    Grain(SeatMonthRollup, ("month", "banker_seat"),
          lambda c: (month_of(c.gaming_day), c.banker_seat)),
)
GRAIN_BY_MODEL = {g.model: g for g in GRAINS}


def rollup_apply(coup: Coup, codes: Iterable[str], *, table_id: int, sign: int = 1):
    """Add (sign=+1) or remove (sign=-1) one coup revision from its row of
    every grain. Each row is locked, so concurrent writers never lose a count."""
    delta = _Delta()
    delta.add(coup, codes, sign)
    for grain in GRAINS:
        _apply_one(grain, grain.filters(table_id, grain.key(coup)), delta,
                   OUTCOME_FIELD[coup.outcome], sign)


def _apply_one(grain: Grain, key: dict, delta: _Delta, field: str, sign: int) -> None:
    model = grain.model
    if not delta.codes:
        # The common case, in one statement: no JSON to merge.
        updated = model.objects.filter(**key).update(
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
    cell = model.objects.select_for_update(no_key=True).filter(**key).first()
    if cell is None:
        cell = model(**key, findings={})
    delta.apply(cell)
    cell.save()


ROLLUP_SUMS = [
    "coups", *OUTCOME_FIELD.values(), "covered", "covered_sq", "commission",
    "levy_mean", "levy_var", "findings",
]


def rollup_apply_many(coups: Iterable[tuple[Coup, Iterable[str]]], *, table_id: int):
    """Add many new coups (with their finding codes) to their rows of every
    grain: summed per row first, then per grain one locking read and one
    write for the rows that exist, one insert for those that do not, however
    many coups (a whole shoe recorded by shoe_play)."""
    coups = list(coups)
    if not coups:
        return
    deltas: list[_Delta] = []
    for coup, codes in coups:
        delta = _Delta()
        delta.add(coup, codes)
        deltas.append(delta)
    for grain in GRAINS:
        per_key: dict[tuple, _Delta] = {}
        for (coup, _), delta in zip(coups, deltas, strict=True):
            per_key.setdefault(grain.key(coup), _Delta()).merge(delta)
        _apply_grain(grain, table_id, per_key)


def _apply_grain(grain: Grain, table_id: int, per_key: dict[tuple, _Delta]) -> None:
    model = grain.model
    # A table-day holds a few rows per grain: read (and lock) the few that
    # might be ours with IN lists, cheaper to build than one condition per row.
    ins = {f"{f}__in": {k[i] for k in per_key} for i, f in enumerate(grain.fields)}
    rows = {
        tuple(getattr(r, f) for f in grain.fields): r
        for r in model.objects.select_for_update(no_key=True)
        .filter(table_id=table_id, **ins).order_by()
    }
    changed, created = [], []
    for key, delta in per_key.items():
        row = rows.get(key)
        if row is None:
            row = model(**grain.filters(table_id, key), covered_sq=Decimal("0"),
                        findings={})
            created.append(row)
        else:
            changed.append(row)
        delta.apply(row)
    if changed:
        # Their rows are locked and the new sums computed: one upsert writes
        # them all (cheaper to build than bulk_update's CASE per column).
        model.objects.bulk_create(changed, update_conflicts=True,
                                  unique_fields=grain.unique,
                                  update_fields=ROLLUP_SUMS)
    if created:
        # A plain insert: a row someone else created meanwhile is an
        # IntegrityError, never a count overwritten.
        model.objects.bulk_create(created)


def current_coups(gaming_day=None):
    """Coups that no later revision supersedes. ``gaming_day``: that day's
    only, the later revisions looked for among that day's coups (a revision
    keeps its coup's gaming day: services/corrections.py), so the database
    reads the day's coups, not every coup (the anti-join otherwise scanned
    the whole table: 0.7 s a day at 1.8 million coups, bench_floor.py)."""
    newer = Coup.objects.filter(
        shoe=OuterRef("shoe"), seq=OuterRef("seq"), revision__gt=OuterRef("revision")
    )
    coups = Coup.objects.all()
    if gaming_day is not None:
        newer = newer.filter(gaming_day=gaming_day)
        coups = coups.filter(gaming_day=gaming_day)
    return coups.filter(~Exists(newer))


def _empty_cell() -> dict:
    return {"coups": 0, "banker_wins": 0, "punter_wins": 0, "ties": 0,
            "covered": Decimal("0"), "covered_sq": Decimal("0"),
            "commission": Decimal("0"), "levy_mean": Decimal("0"),
            "levy_var": Decimal("0"), "findings": {}}


def rollup_recompute(model=DailyRollup, **filters) -> dict[tuple, dict]:
    """A grain's rows computed from scratch from the current revisions, keyed
    (table_id, *the grain's key)."""
    grain = GRAIN_BY_MODEL[model]
    cells: dict[tuple, dict] = {}
    coups = current_coups().filter(**filters).select_related("shoe__session", "rules")
    finding_codes: dict[int, list[str]] = {}
    for f in Finding.objects.filter(coup__in=coups).values("coup_id", "code"):
        finding_codes.setdefault(f["coup_id"], []).append(f["code"])
    for c in coups.iterator():
        key = (c.shoe.session.table_id, *grain.key(c))
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = _empty_cell()
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


def rollup_snapshot(model=DailyRollup, **filters) -> dict[tuple, dict]:
    """A grain's stored rows, in the same shape as rollup_recompute (rows left
    empty by corrections are skipped)."""
    grain = GRAIN_BY_MODEL[model]
    out = {}
    for r in model.objects.filter(**filters):
        if r.coups == 0:
            continue
        out[(r.table_id, *(getattr(r, f) for f in grain.fields))] = {
            name: (dict(r.findings) if name == "findings" else getattr(r, name))
            for name in ROLLUP_SUMS
        }
    return out


def rollups_hold(**filters) -> list[str]:
    """Every grain's stored rows against a recomputation from the coups: the
    grains that differ (empty when all hold). ``filters`` apply to the coups
    and the rows alike (e.g. table=...)."""
    coup_filters = {("shoe__session__" + k if k.startswith("table") else k): v
                    for k, v in filters.items()}
    return [g.model.__name__ for g in GRAINS
            if rollup_snapshot(g.model, **filters)
            != rollup_recompute(g.model, **coup_filters)]
