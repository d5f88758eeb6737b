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

from django.db import connection, transaction
from django.db.models import Sum

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


class Coefficients:
    """Per table and gaming day, the constants of the rules in force:
    k1 = rate x P(banker) and k2 = rate^2 x P(banker) x (1 - P(banker)), so
    that mean = k1 x covered and variance = k2 x sum(covered^2). The database
    only adds plain sums; these few multiplications happen here."""

    def __init__(self, periods) -> None:
        p_cache: dict[tuple, Decimal] = {}
        self.by_table: dict[int, list[tuple[date, Decimal, Decimal]]] = {}
        for table_id, versions in periods.items():
            out = []
            for start, rules in versions:
                key = (rules.decks, rules.tableau.version)
                if key not in p_cache:
                    p_cache[key] = p_banker(*key)
                p, rate = p_cache[key], rules.commission_rate
                out.append((start, rate * p, rate * rate * p * (1 - p)))
            self.by_table[table_id] = out

    def varies_within(self, from_day: date, to_day: date) -> bool:
        """True if some table changed rules inside the period."""
        return any(start > from_day and start <= to_day
                   for versions in self.by_table.values()
                   for start, _, _ in versions[1:])

    def __call__(self, table_id: int, day: date | None) -> tuple[Decimal, Decimal]:
        versions = self.by_table.get(table_id)
        if not versions:
            return Decimal("0"), Decimal("0")
        found = versions[0]
        if day is not None:
            for version in versions[1:]:
                if version[0] <= day:
                    found = version
        return found[1], found[2]


SUMS = {"s_coups": Sum("coups"), "s_bw": Sum("banker_wins"),
        "s_pw": Sum("punter_wins"), "s_ties": Sum("ties"),
        "s_covered": Sum("covered"), "s_commission": Sum("commission"),
        "s_sq": Sum("covered_sq")}


def _sums(base, columns: list[str]):
    """Rows of (*columns, coups, banker_wins, punter_wins, ties, covered,
    commission, covered_sq), summed per group in one query."""
    return (base.values(*columns).annotate(**SUMS)
            .values_list(*columns, *SUMS).order_by(*columns))


def _row(key, label: str, v, k1: Decimal, k2: Decimal) -> Row:
    """A Row from summed numbers. PostgreSQL sums NUMERIC exactly; SQLite adds
    doubles, so there money is brought back to cents."""
    covered, commission = v[4] or ZERO, v[5] or ZERO
    if type(covered) is not Decimal or covered.as_tuple().exponent != -2:
        covered = Decimal(covered).quantize(CENT)
        commission = Decimal(commission).quantize(CENT)
    return Row(key, label, coups=v[0] or 0, banker_wins=v[1] or 0,
               punter_wins=v[2] or 0, ties=v[3] or 0, covered=covered,
               commission=commission,
               exp=Expectation(mean=k1 * covered, var=k2 * _dec(v[6])))


def _dec(v) -> Decimal:
    return v if type(v) is Decimal else Decimal(v or 0)


ZERO = Decimal("0")


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
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # A year is ~200k rollup cells: let the GROUP BY hash them in
            # memory instead of spilling batches to disk (4 MB default).
            with connection.cursor() as cur:
                cur.execute("SET LOCAL work_mem = '64MB'")
        return _commission_report(from_day=from_day, to_day=to_day,
                                  group_by=group_by, table_ids=table_ids)


def _commission_report(*, from_day, to_day, group_by, table_ids) -> CommissionReport:
    base = DailyRollup.objects.filter(gaming_day__gte=from_day, gaming_day__lte=to_day)
    if table_ids:
        base = base.filter(table_id__in=table_ids)
    periods = rules_periods(table_ids or None)
    coef = Coefficients(periods)

    # 1. table x gaming day cells: the band flags, the chart, cagnotte counts
    column = GROUPS[group_by]
    parts = None
    if group_by not in ("table", "gaming_day"):
        # per table (and per day only if some table changed rules meanwhile),
        # so each part is weighed with its own rules
        by_day = coef.varies_within(from_day, to_day)
        parts = [column, "table_id"] + (["gaming_day"] if by_day else [])
    raw, part_rows, cell_codes, part_codes = _scan(base, from_day, to_day,
                                                   table_ids, parts)
    counts = cagnotte_counts(from_day, to_day, table_ids)
    names = _labels("table", {r[0] for r in raw} | {k[0] for k in counts})
    cells: dict[tuple, Row] = {}
    for r in raw:
        key = (r[0], r[1])
        cells[key] = _row(key, f"{names.get(r[0], r[0])} {r[1].isoformat()}", r[2:],
                          *coef(r[0], r[1]))
    for key, (counted, variance) in counts.items():
        cell = cells.get(key) or cells.setdefault(
            key, Row(key, f"{names.get(key[0], key[0])} {key[1].isoformat()}"))
        cell.counted, cell.cagnotte_variance = counted, variance
    for key, codes in cell_codes.items():
        if key in cells:
            cells[key].findings = codes

    # 2. the requested grouping
    groups: dict = {}
    if group_by in ("table", "gaming_day"):
        index = 0 if group_by == "table" else 1
        for key, cell in cells.items():
            _fold(groups.setdefault(key[index], Row(key[index], "")), cell)
    else:
        for r in part_rows:
            k1, k2 = coef(r[1], r[2] if by_day else from_day)
            part = _row(r[0], "", r[len(parts):], k1, k2)
            _fold(groups.setdefault(r[0], Row(r[0], "")), part)
        for key, codes in part_codes.items():
            if key[0] in groups:
                groups[key[0]].findings = codes
    labels = _labels(group_by, list(groups))
    for r in groups.values():
        r.label = str(labels.get(r.key, r.key))
    if group_by == "gaming_day":
        rows = sorted(groups.values(), key=lambda r: r.key)
    else:
        rows = sorted(groups.values(), key=lambda r: r.label)
    total = Row("total", "Total")
    days: dict[date, Row] = {}
    for (_, day), cell in sorted(cells.items(), key=lambda kv: kv[0][1]):
        _fold(total, cell)
        _fold(days.setdefault(day, Row(day, day.isoformat())), cell)
    return CommissionReport(
        from_day=from_day, to_day=to_day, group_by=group_by, rows=rows, total=total,
        cells=sorted(cells.values(), key=lambda c: (c.key[1], c.label)),
        days=list(days.values()), rules=rules_in_force(periods, from_day, to_day),
    )


def _fold(into: Row, cell: Row) -> None:
    into.coups += cell.coups
    into.banker_wins += cell.banker_wins
    into.punter_wins += cell.punter_wins
    into.ties += cell.ties
    into.covered += cell.covered
    into.commission += cell.commission
    into.exp.merge(cell.exp)
    for code, n in cell.findings.items():
        into.findings[code] = into.findings.get(code, 0) + n
    if cell.counted is not None:
        into.counted = (into.counted or Decimal("0")) + cell.counted
        into.cagnotte_variance = (
            (into.cagnotte_variance or Decimal("0")) + cell.cagnotte_variance
        )


def _scan(base, from_day, to_day, table_ids, parts):
    """Sums and finding counts per table-day cell, and per part of the
    requested grouping. On PostgreSQL each is one scan of the rollups
    (GROUPING SETS); elsewhere one query per grouping."""
    cell_cols = ["table_id", "gaming_day"]
    if connection.vendor != "postgresql":
        cells = list(_sums(base, cell_cols))
        cell_codes = findings_by(from_day, to_day, table_ids, cell_cols)
        if parts is None:
            return cells, [], cell_codes, {}
        return (cells, list(_sums(base, parts)), cell_codes,
                findings_by(from_day, to_day, table_ids, parts[:1]))
    where, params = _where(from_day, to_day, table_ids)
    table = DailyRollup._meta.db_table
    sets = "(r.table_id, r.gaming_day)"
    cols = "r.table_id, r.gaming_day"
    flag = "0"
    if parts is not None:
        sets += ", (" + ", ".join(f"r.{c}" for c in parts) + ")"
        cols += f", r.{parts[0]}"
        flag = f"GROUPING(r.{parts[0]})"
    cells, part_rows = [], []
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT {flag}, {cols}, SUM(r.coups), SUM(r.banker_wins), "
            f"SUM(r.punter_wins), SUM(r.ties), SUM(r.covered), SUM(r.commission), "
            f"SUM(r.covered_sq) FROM {table} r WHERE {where} "
            f"GROUP BY GROUPING SETS ({sets})", params)
        for row in cur.fetchall():
            if parts is None or row[0] == 1:
                cells.append((row[1], row[2], *row[-7:]))
            else:
                key = {"table_id": row[1], "gaming_day": row[2], parts[0]: row[3]}
                part_rows.append((*(key[c] for c in parts), *row[-7:]))
        cur.execute(
            f"SELECT {flag}, {cols}, j.key, SUM(CAST(j.value AS integer)) "
            f"FROM {table} r, jsonb_each_text(r.findings) j "
            f"WHERE {where} AND r.findings <> '{{}}'::jsonb "
            f"GROUP BY GROUPING SETS ("
            + ", ".join(f"({c}, j.key)" for c in
                        ["r.table_id, r.gaming_day"]
                        + ([f"r.{parts[0]}"] if parts is not None else []))
            + ")", params)
        cell_codes: dict = defaultdict(dict)
        part_codes: dict = defaultdict(dict)
        for row in cur.fetchall():
            if not row[-1]:
                continue
            if parts is None or row[0] == 1:
                cell_codes[(row[1], row[2])][row[-2]] = int(row[-1])
            else:
                part_codes[(row[3],)][row[-2]] = int(row[-1])
    part_rows.sort(key=lambda r: r[: len(parts)] if parts else ())
    return cells, part_rows, cell_codes, part_codes


def _where(from_day, to_day, table_ids) -> tuple[str, list]:
    where = "r.gaming_day >= %s AND r.gaming_day <= %s"
    params: list = [from_day, to_day]
    if table_ids:
        where += f" AND r.table_id IN ({', '.join(['%s'] * len(table_ids))})"
        params += list(table_ids)
    return where, params


def findings_by(from_day, to_day, table_ids, columns: list[str]
                ) -> dict[tuple, dict[str, int]]:
    """Sum the rollups' {code: n} maps per group, in the database (json_each);
    only the cells with findings are read."""
    cols = ", ".join(f"r.{c}" for c in columns)
    where, params = _where(from_day, to_day, table_ids)
    if connection.vendor == "postgresql":
        each, value = "jsonb_each_text(r.findings)", "CAST(j.value AS integer)"
        where += " AND r.findings <> '{}'::jsonb"
    else:
        each, value = "json_each(r.findings)", "j.value"
    sql = (
        f"SELECT {cols}, j.key, SUM({value}) FROM {DailyRollup._meta.db_table} r, "
        f"{each} j WHERE {where} GROUP BY {cols}, j.key"
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
