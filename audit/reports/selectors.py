"""Selectors: the commission report, read from the daily rollups.

A year over 10M coups is a few thousand rollup cells (table x gaming day x
croupier x banker seat), so the counts, turnover and commission are a couple
of GROUP BY queries over those, never over the coups. The expected commission
and its band are exact per coup (expectation.py): each coup's levy under its
own house-rules version, on the covered amount actually played. That reads the
period's current coups once, grouped by (table, gaming day, rules version,
tableau, covered amount[, croupier or banker seat]): stakes come in round
amounts, so a table-day is a few dozen groups, and each distinct (version,
covered) is rounded once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import Count, Max, Min, Sum

from audit.models import CagnotteCount
from tables.models import Coup, DailyRollup, HouseRules, Table
from tables.rollups import PLACES
from tables.services import gaming_day_for

from .expectation import CENT, Expectation

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
    """Per table, its rule versions with the gaming day each takes effect (its
    effective_from, else the gaming day it was written: from the table's next
    session, which may be later that day). For the stamp; the expectation
    follows each coup's own version (coup.rules)."""
    out: dict[int, list[tuple[date, HouseRules]]] = defaultdict(list)
    qs = HouseRules.objects.select_related("tableau", "table").order_by(
        "table_id", "version"
    )
    if table_ids is not None:
        qs = qs.filter(table_id__in=table_ids)
    for r in qs:
        start = gaming_day_for(r.created_at, r.gaming_day_cutoff)
        if r.effective_from is not None and r.effective_from > start:
            start = r.effective_from
        out[r.table_id].append((start, r))
    return out


PART_COLUMN = {"croupier": "entered_by_id", "banker": "banker_seat"}


@dataclass
class Expectations:
    """Per table-day cell, and per part of a croupier / banker grouping, the
    expectation of the period's coups; per rules version, its coups."""

    cells: dict[tuple, Expectation] = field(default_factory=dict)
    parts: dict[object, Expectation] = field(default_factory=dict)
    used: dict[int, dict] = field(default_factory=dict)
    rules: dict[int, HouseRules] = field(default_factory=dict)


def coup_expectations(from_day: date, to_day: date, table_ids) -> Expectations:
    """Per house-rules version, the period's coups played under it and the
    days they span (for the report's stamp). The expectation itself is summed
    in the rollups as each coup is written, under the coup's own version
    (tables/rollups.py levy_expectation): the report never weighs coups."""
    coups = Coup.objects.filter(revision=1, gaming_day__gte=from_day,
                                gaming_day__lte=to_day)
    if table_ids:
        coups = coups.filter(shoe__session__table_id__in=table_ids)
    out = Expectations()
    for rules_id, n, first, last in (
        coups.values("rules_id").annotate(n=Count("id"), first=Min("gaming_day"),
                                          last=Max("gaming_day"))
        .values_list("rules_id", "n", "first", "last").order_by()
    ):
        out.used[rules_id] = {"coups": n, "first": _day(first), "last": _day(last)}
    out.rules = {r.pk: r for r in HouseRules.objects.filter(
        pk__in=out.used).select_related("tableau", "table")}
    return out


SUMS = {"s_coups": Sum("coups"), "s_bw": Sum("banker_wins"),
        "s_pw": Sum("punter_wins"), "s_ties": Sum("ties"),
        "s_covered": Sum("covered"), "s_commission": Sum("commission"),
        "s_sq": Sum("covered_sq"), "s_lm": Sum("levy_mean"),
        "s_lv": Sum("levy_var")}


def _sums(base, columns: list[str]):
    """Rows of (*columns, coups, banker_wins, punter_wins, ties, covered,
    commission, covered_sq), summed per group in one query."""
    return (base.values(*columns).annotate(**SUMS)
            .values_list(*columns, *SUMS).order_by(*columns))


def _row(key, label: str, v) -> Row:
    """A Row from summed numbers, its expectation the rollups' sums of each
    coup's expected levy and variance. PostgreSQL sums NUMERIC exactly; SQLite
    adds doubles, so there money is brought back to cents (and the
    expectation to its 10 places)."""
    covered, commission = v[4] or ZERO, v[5] or ZERO
    if type(covered) is not Decimal or covered.as_tuple().exponent != -2:
        covered = Decimal(covered).quantize(CENT)
        commission = Decimal(commission).quantize(CENT)
    mean, var = _dec(v[7]), _dec(v[8])
    if type(v[7]) is not Decimal:
        mean, var = mean.quantize(PLACES), var.quantize(PLACES)
    return Row(key, label, coups=v[0] or 0, banker_wins=v[1] or 0,
               punter_wins=v[2] or 0, ties=v[3] or 0, covered=covered,
               commission=commission, exp=Expectation(mean, var))


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
    expect = coup_expectations(from_day, to_day, table_ids or None)

    # 1. table x gaming day cells: the band flags, the chart, cagnotte counts
    column = GROUPS[group_by]
    # a croupier / banker grouping is summed per group (its expectation is
    # each coup's own, from coup_expectations)
    parts = None if group_by in ("table", "gaming_day") else [column]
    raw, part_rows, cell_codes, part_codes = _scan(base, from_day, to_day,
                                                   table_ids, parts)
    counts = cagnotte_counts(from_day, to_day, table_ids)
    names = _labels("table", {r[0] for r in raw} | {k[0] for k in counts})
    cells: dict[tuple, Row] = {}
    for r in raw:
        key = (r[0], r[1])
        cells[key] = _row(key, f"{names.get(r[0], r[0])} {r[1].isoformat()}", r[2:])
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
            part = _row(r[0], "", r[len(parts):])
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
        days=list(days.values()),
        rules=rules_used(rules_in_force(periods, from_day, to_day), expect),
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
            f"SUM(r.covered_sq), SUM(r.levy_mean), SUM(r.levy_var) "
            f"FROM {table} r WHERE {where} "
            f"GROUP BY GROUPING SETS ({sets})", params)
        for row in cur.fetchall():
            if parts is None or row[0] == 1:
                cells.append((row[1], row[2], *row[-9:]))
            else:
                key = {"table_id": row[1], "gaming_day": row[2], parts[0]: row[3]}
                part_rows.append((*(key[c] for c in parts), *row[-9:]))
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
            out.append({**rules_stamp(r), "from_day": start.isoformat() if i else None})
    return out


def rules_stamp(r: HouseRules) -> dict:
    """A version's rules as a report states them (money as decimal text)."""
    return {
        "table": r.table.name, "version": r.version, "decks": r.decks,
        "commission_rate": str(r.commission_rate),
        "commission_unit": str(r.commission_unit),
        "commission_rounding": r.commission_rounding,
        "minimum_banco": str(r.minimum_banco),
        "maximum_bank": None if r.maximum_bank is None else str(r.maximum_bank),
        "tableau": r.tableau.version,
        "punter_five": r.punter_five,
        "banker_prescriptions": dict(sorted((r.banker_prescriptions or {}).items())),
        "tie_rule": r.tie_rule, "cover_rule": r.cover_rule,
        "gaming_day_cutoff": r.gaming_day_cutoff,
    }


def rules_used(in_force: list[dict], expect: Expectations) -> list[dict]:
    """The versions in force over the period, each with the number of the
    period's coups played under it (the expectation weighed them so), and any
    version coups were played under that the periods do not list (a session
    opened before a change keeps its version), with the days it was played."""
    out, seen = [], set()
    by_key = {(r.table.name, r.version): (pk, r) for pk, r in expect.rules.items()}
    for entry in in_force:
        pk = by_key.get((entry["table"], entry["version"]), (None,))[0]
        used = expect.used.get(pk, {})
        out.append({**entry, "coups": used.get("coups", 0)})
        seen.add(pk)
    for pk, used in sorted(expect.used.items()):
        if pk not in seen:
            out.append({**rules_stamp(expect.rules[pk]),
                        "from_day": used["first"].isoformat(), "coups": used["coups"]})
    return out
