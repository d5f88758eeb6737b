"""Selectors: the commission report, read from the daily rollups.

A year over 10M coups is a few thousand rollup cells (table x gaming day x
croupier x banker seat), so a report is a couple of GROUP BY queries over
those, never over the coups. Expected commission needs each table-day's house
rules (decks, tableau, rate); the rules in force are mapped onto the rollups in
SQL (a CASE over each table's rule versions) so that grouping by croupier or
banker seat still returns few rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db import connection
from django.db.models import Case, IntegerField, Q, Sum, Value, When

from audit.models import CagnotteCount
from tables.models import DailyRollup, HouseRules, Table
from tables.services import gaming_day_for

from .expectation import CENT, Expectation, p_banker

GROUPS = {
    "table": "table_id",
    "gaming_day": "gaming_day",
    "croupier": "croupier_id",
    "banker": "banker_seat",
}
SUMS = ("coups", "banker_wins", "punter_wins", "ties", "covered", "covered_sq",
        "commission")


@dataclass
class Row:
    key: object
    label: str
    coups: int = 0
    banker_wins: int = 0
    punter_wins: int = 0
    ties: int = 0
    covered: Decimal = Decimal("0")
    commission: Decimal = Decimal("0")
    counted: Decimal | None = None  # cagnotte counted (table-day groupings)
    cagnotte_variance: Decimal | None = None
    findings: dict[str, int] = field(default_factory=dict)
    exp: Expectation = field(default_factory=Expectation)

    @property
    def expected(self) -> Decimal:
        return self.exp.expected

    @property
    def band_low(self) -> Decimal:
        return self.exp.low

    @property
    def band_high(self) -> Decimal:
        return self.exp.high

    @property
    def z(self) -> Decimal | None:
        return self.exp.z(self.commission)

    @property
    def outside(self) -> bool:
        return self.exp.outside(self.commission)

    def add(self, d: dict) -> None:
        for name in ("coups", "banker_wins", "punter_wins", "ties"):
            setattr(self, name, getattr(self, name) + (d[name] or 0))
        # Money sums are exact on PostgreSQL; SQLite adds them as doubles, so
        # bring them back to cents.
        self.covered += Decimal(d["covered"] or 0).quantize(CENT)
        self.commission += Decimal(d["commission"] or 0).quantize(CENT)


@dataclass
class CommissionReport:
    from_day: date
    to_day: date
    group_by: str
    rows: list[Row]
    total: Row
    cells: list[Row]  # table x gaming day, for the band flags
    days: list[Row]  # gaming day totals, for the chart
    rules: list[dict]  # house rules in force over the period

    @property
    def flagged(self) -> list[Row]:
        return [c for c in self.cells if c.outside]

    @property
    def finding_codes(self) -> list[str]:
        return sorted(self.total.findings)


def rules_periods(table_ids) -> dict[int, list[tuple[date, HouseRules]]]:
    """Per table, its rule versions with the gaming day each takes effect
    (a change made during a gaming day governs that whole day)."""
    out: dict[int, list[tuple[date, HouseRules]]] = defaultdict(list)
    qs = HouseRules.objects.select_related("tableau", "table").order_by(
        "table_id", "version"
    )
    if table_ids is not None:
        qs = qs.filter(table_id__in=table_ids)
    for r in qs:
        out[r.table_id].append((gaming_day_for(r.created_at, r.gaming_day_cutoff), r))
    return out


def _rules_case(periods) -> Case:
    whens = []
    for table_id, versions in periods.items():
        for i, (start, rules) in enumerate(versions):
            cond = Q(table_id=table_id)
            if i > 0:
                cond &= Q(gaming_day__gte=start)
            nxt = versions[i + 1][0] if i + 1 < len(versions) else None
            if nxt is not None:
                cond &= Q(gaming_day__lt=nxt)
            whens.append(When(cond, then=Value(rules.pk)))
    return Case(*whens, default=Value(0), output_field=IntegerField())


def _labels(group_by: str, keys) -> dict:
    if group_by == "table":
        return dict(Table.objects.filter(pk__in=keys).values_list("pk", "name"))
    if group_by == "croupier":
        from django.contrib.auth import get_user_model

        users = get_user_model().objects.filter(pk__in=keys)
        return dict(users.values_list("pk", "username"))
    if group_by == "banker":
        return {k: f"seat {k}" for k in keys}
    return {k: k.isoformat() for k in keys}


def commission_report(
    *,
    from_day: date,
    to_day: date,
    group_by: str = "table",
    table_ids: list[int] | None = None,
) -> CommissionReport:
    base = DailyRollup.objects.filter(gaming_day__gte=from_day, gaming_day__lte=to_day)
    if table_ids:
        base = base.filter(table_id__in=table_ids)
    periods = rules_periods(table_ids or None)
    rules_by_pk = {r.pk: r for v in periods.values() for _, r in v}
    rules_case = _rules_case(periods)
    sums = {name: Sum(name) for name in SUMS}
    p_cache: dict[int, Decimal] = {}

    def expectation_of(rules_pk: int, d: dict) -> Expectation:
        exp = Expectation()
        rules = rules_by_pk.get(rules_pk)
        if rules is None or not d["covered"]:
            return exp
        if rules_pk not in p_cache:
            p_cache[rules_pk] = p_banker(rules.decks, rules.tableau.version)
        exp.add(rate=rules.commission_rate, p=p_cache[rules_pk],
                covered=d["covered"], covered_sq=d["covered_sq"])
        return exp

    # 1. table x gaming day cells: flags, the chart, cagnotte counts
    cell_rows = (
        base.annotate(rules_pk=rules_case)
        .values("table_id", "gaming_day", "rules_pk")
        .annotate(**sums)
        .order_by("gaming_day", "table_id")
    )
    cells: dict[tuple, Row] = {}
    for d in cell_rows:
        key = (d["table_id"], d["gaming_day"])
        cell = cells.setdefault(key, Row(key, ""))
        cell.add(d)
        cell.exp.merge(expectation_of(d["rules_pk"], d))
    counts = cagnotte_counts(from_day, to_day, table_ids)
    names = _labels("table", {k[0] for k in cells} | {k[0] for k in counts})
    for key, cell in cells.items():
        cell.label = f"{names.get(key[0], key[0])} {key[1].isoformat()}"
    for key, (counted, variance) in counts.items():
        cell = cells.setdefault(key, Row(key, f"{names.get(key[0])} {key[1]}"))
        cell.counted, cell.cagnotte_variance = counted, variance
    findings = findings_by(base, ["table_id", "gaming_day"])
    for key, codes in findings.items():
        if key in cells:
            cells[key].findings = codes

    # 2. the requested grouping
    if group_by in ("table", "gaming_day"):
        index = 0 if group_by == "table" else 1
        groups: dict = {}
        for key, cell in cells.items():
            g = groups.setdefault(key[index], Row(key[index], ""))
            _fold(g, cell)
    else:
        column = GROUPS[group_by]
        groups = {}
        grouped = (
            base.annotate(rules_pk=rules_case)
            .values(column, "rules_pk")
            .annotate(**sums)
            .order_by(column)
        )
        for d in grouped:
            g = groups.setdefault(d[column], Row(d[column], ""))
            g.add(d)
            g.exp.merge(expectation_of(d["rules_pk"], d))
        for key, codes in findings_by(base, [column]).items():
            if key[0] in groups:
                groups[key[0]].findings = codes
    labels = _labels(group_by, list(groups))
    rows = sorted(groups.values(), key=lambda r: (str(labels.get(r.key, r.key))))
    if group_by == "gaming_day":
        rows = sorted(groups.values(), key=lambda r: r.key)
    for r in rows:
        r.label = str(labels.get(r.key, r.key))
    total = Row("total", "Total")
    for cell in cells.values():
        _fold(total, cell)
    days: dict[date, Row] = {}
    for (_, day), cell in sorted(cells.items(), key=lambda kv: kv[0][1]):
        _fold(days.setdefault(day, Row(day, day.isoformat())), cell)
    return CommissionReport(
        from_day=from_day, to_day=to_day, group_by=group_by, rows=rows, total=total,
        cells=sorted(cells.values(), key=lambda c: (c.key[1], c.label)),
        days=list(days.values()), rules=rules_in_force(periods, from_day, to_day),
    )


def _fold(into: Row, cell: Row) -> None:
    for name in ("coups", "banker_wins", "punter_wins", "ties", "covered",
                 "commission"):
        setattr(into, name, getattr(into, name) + getattr(cell, name))
    into.exp.merge(cell.exp)
    for code, n in cell.findings.items():
        into.findings[code] = into.findings.get(code, 0) + n
    if cell.counted is not None:
        into.counted = (into.counted or Decimal("0")) + cell.counted
        into.cagnotte_variance = (
            (into.cagnotte_variance or Decimal("0")) + cell.cagnotte_variance
        )


def findings_by(base, columns: list[str]) -> dict[tuple, dict[str, int]]:
    """Sum the rollups' {code: n} maps per group, in the database (json_each)."""
    qs = base.exclude(findings={}).values_list("pk", flat=True)
    inner, params = qs.query.sql_with_params()
    cols = ", ".join(f"r.{c}" for c in columns)
    if connection.vendor == "postgresql":
        each, value = "jsonb_each_text(r.findings)", "CAST(j.value AS integer)"
    else:
        each, value = "json_each(r.findings)", "j.value"
    sql = (
        f"SELECT {cols}, j.key, SUM({value}) FROM {DailyRollup._meta.db_table} r, "
        f"{each} j WHERE r.id IN ({inner}) GROUP BY {cols}, j.key"
    )
    out: dict[tuple, dict[str, int]] = defaultdict(dict)
    with connection.cursor() as cur:
        cur.execute(sql, params)
        for row in cur.fetchall():
            key = tuple(_day(v) for v in row[: len(columns)])
            if int(row[-1]):
                out[key][row[-2]] = int(row[-1])
    return out


def _day(v):
    # SQLite hands dates back as text from raw SQL
    return date.fromisoformat(v) if isinstance(v, str) else v


def cagnotte_counts(from_day, to_day, table_ids) -> dict[tuple, tuple]:
    """(table, gaming day) -> (counted, counted - computed), from the latest
    count of each session of that gaming day (a recount replaces a count)."""
    qs = CagnotteCount.objects.filter(
        session__gaming_day__gte=from_day, session__gaming_day__lte=to_day
    )
    if table_ids:
        qs = qs.filter(session__table_id__in=table_ids)
    latest: dict[int, CagnotteCount] = {}
    for c in qs.select_related("session").order_by("session_id", "counted_at", "id"):
        latest[c.session_id] = c
    out: dict[tuple, tuple] = {}
    for c in latest.values():
        key = (c.session.table_id, c.session.gaming_day)
        counted, variance = out.get(key, (Decimal("0"), Decimal("0")))
        out[key] = (counted + c.counted, variance + c.variance)
    return out


def rules_in_force(periods, from_day: date, to_day: date) -> list[dict]:
    """The rule versions that governed some day of the period, for the stamp."""
    out = []
    for versions in periods.values():
        for i, (start, r) in enumerate(versions):
            nxt = versions[i + 1][0] if i + 1 < len(versions) else None
            if (i > 0 and start > to_day) or (nxt is not None and nxt <= from_day):
                continue
            out.append({
                "table": r.table.name, "version": r.version, "decks": r.decks,
                "commission_rate": str(r.commission_rate),
                "commission_unit": str(r.commission_unit),
                "minimum_banco": str(r.minimum_banco),
                "tableau": r.tableau.version,
                "gaming_day_cutoff": r.gaming_day_cutoff,
                "from_day": start.isoformat() if i else None,
            })
    return out
