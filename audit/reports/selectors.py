"""Selectors: the commission report, read from the rollups, never the coups.

Each coup adds, in its own transaction, to one row of every rollup grain
(tables/rollups.py GRAINS). The report reads the grain its question needs:
- a table-day per house-rules version (TableDayRollup): the table and gaming
  day groupings, the total, the day chart, the band flags of each table-day
  and the coups played under each version;
- a croupier's or a banker seat's month (CroupierMonthRollup,
  SeatMonthRollup) for the months the period covers whole, and the finest
  cells (DailyRollup) for the days of a month it cuts.
A year is a few thousand table-day rows and a few hundred month rows, however
many coups they sum, so the report's time does not grow with the coups. The
band test of each table-day runs in the database and only the cells outside
their band come back. The expected commission and its band are each coup's
expected levy under its own house rules, summed as it was written
(tables/rollups.py levy_expectation).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from django.db import connections, transaction
from django.db.models import (
    DecimalField,
    Exists,
    ExpressionWrapper,
    F,
    Max,
    Min,
    OuterRef,
    Q,
    Sum,
    Value,
)

from audit.models import CagnotteCount
from casino import replica
from tables.models import (
    CroupierMonthRollup,
    DailyRollup,
    HouseRules,
    SeatMonthRollup,
    Table,
    TableDayRollup,
)
from tables.rollups import PLACES, month_of
from tables.services import gaming_day_for

from .expectation import CENT, Z95, Expectation

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
    flagged: list[Row]  # the table-days outside their band
    days: list[Row]  # gaming day totals, for the chart
    rules: list[dict]  # house rules in force over the period

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


@dataclass
class Expectations:
    """Per house-rules version, the period's coups played under it and the
    gaming days they span (the report's stamp)."""

    used: dict[int, dict] = field(default_factory=dict)
    rules: dict[int, HouseRules] = field(default_factory=dict)


def versions_used(days) -> Expectations:
    """From the table-day rows (one per house-rules version played that day):
    each version's coups, first and last gaming day."""
    out = Expectations()
    for rules_id, n, first, last in (
        days.filter(coups__gt=0).values("rules_id")
        .annotate(n=Sum("coups"), first=Min("gaming_day"), last=Max("gaming_day"))
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
    commission, covered_sq, levy_mean, levy_var), summed per group in one
    query."""
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
    # One transaction on the connection reads go to (the reports replica
    # inside casino.replica.reading(), else default): every query sees the
    # same rollups.
    alias = replica.read_alias()
    connection = connections[alias]
    with transaction.atomic(using=alias):
        if connection.vendor == "postgresql":
            # A year is thousands of table-day groups: let the GROUP BY hash
            # them in memory instead of spilling batches to disk (4 MB
            # default; the planner guesses few groups).
            with connection.cursor() as cur:
                cur.execute("SET LOCAL work_mem = '64MB'")
        return _commission_report(from_day=from_day, to_day=to_day,
                                  group_by=group_by, table_ids=table_ids or None)


def _commission_report(*, from_day, to_day, group_by, table_ids) -> CommissionReport:
    days_q = _rows(TableDayRollup, "gaming_day", from_day, to_day, table_ids)
    counts = _latest_counts(from_day, to_day, table_ids)

    # the day chart and the total: one row per gaming day
    days = [_row(_day(v[0]), _day(v[0]).isoformat(), v[1:])
            for v in _sums(days_q, ["gaming_day"])]
    _attach(days, findings_by(days_q, ["gaming_day"]),
            cagnotte_by(counts, ["gaming_day"]))
    total = Row("total", "Total")
    for d in days:
        _fold(total, d)

    # the requested grouping
    if group_by == "gaming_day":
        rows = days
    elif group_by == "table":
        rows = [_row(v[0], "", v[1:]) for v in _sums(days_q, ["table_id"])]
        _attach(rows, findings_by(days_q, ["table_id"]),
                cagnotte_by(counts, ["table_id"]))
    else:
        rows = _part_rows(GROUPS[group_by], from_day, to_day, table_ids)
    labels = _labels(group_by, [r.key for r in rows])
    for r in rows:
        r.label = str(labels.get(r.key, r.key))
    if group_by != "gaming_day":
        rows = sorted(rows, key=lambda r: r.label)

    used = versions_used(days_q)
    return CommissionReport(
        from_day=from_day, to_day=to_day, group_by=group_by, rows=rows, total=total,
        flagged=_flagged(days_q, used, counts), days=days,
        rules=rules_of_period(from_day, to_day, table_ids, used),
    )


def rules_of_period(from_day: date, to_day: date, table_ids,
                    used: Expectations | None = None) -> list[dict]:
    """The stamp's house rules for a period's coups: the versions in force
    over it and every version its coups were played under, each with its
    coups (from the table-day rollups, or `used` when the caller has read
    them; no coup is read)."""
    if used is None:
        used = versions_used(_rows(TableDayRollup, "gaming_day", from_day, to_day,
                                   table_ids))
    return rules_used(rules_in_force(rules_periods(table_ids), from_day, to_day),
                      used)


def _rows(model, day_column: str, first: date, last: date, table_ids):
    rows = model.objects.filter(**{f"{day_column}__gte": first,
                                   f"{day_column}__lte": last})
    if table_ids:
        rows = rows.filter(table_id__in=table_ids)
    return rows


def _attach(rows: list[Row], findings: dict, counts: dict) -> None:
    for r in rows:
        r.findings = findings.get((r.key,), {})
        if (r.key,) in counts:
            r.counted, r.cagnotte_variance = counts[(r.key,)]


def whole_months(first: date, last: date) -> tuple[date, date] | None:
    """The first days of the first and last months the period covers whole,
    or None when it covers none."""
    start = month_of(first)
    if start != first:
        start = month_of(start + timedelta(days=31))
    end = month_of(month_of(last + timedelta(days=1)) - timedelta(days=1))
    return (start, end) if end >= start else None


def _part_rows(column: str, from_day: date, to_day: date, table_ids) -> list[Row]:
    """A croupier or banker seat grouping: the months the period covers whole
    from their month rows, the days of a month it cuts from the finest cells."""
    model = CroupierMonthRollup if column == "croupier_id" else SeatMonthRollup
    months = whole_months(from_day, to_day)
    sources = []
    if months is None:
        sources.append(_rows(DailyRollup, "gaming_day", from_day, to_day, table_ids))
    else:
        first, last = months
        sources.append(_rows(model, "month", first, last, table_ids))
        if from_day < first:
            sources.append(_rows(DailyRollup, "gaming_day", from_day,
                                 first - timedelta(days=1), table_ids))
        after = month_of(last + timedelta(days=31))
        if after <= to_day:
            sources.append(_rows(DailyRollup, "gaming_day", after, to_day, table_ids))
    groups: dict = {}
    for source in sources:
        for v in _sums(source, [column]):
            _fold(groups.setdefault(v[0], Row(v[0], "")), _row(v[0], "", v[1:]))
        for (key,), codes in findings_by(source, [column]).items():
            into = groups[key].findings
            for code, n in codes.items():
                into[code] = into.get(code, 0) + n
    return list(groups.values())


def _flagged(days_q, used: Expectations, counts) -> list[Row]:
    """The table-days whose commission lies outside its 95 % band, tested in
    the database: (commission - mean)^2 > 1.96^2 variance, exact in NUMERIC
    on PostgreSQL (the same test as Expectation.outside); only those rows come
    back, with their findings and cagnotte counts. A table-day is one row per
    house-rules version played that day: at a table that played one version
    over the period each row is its table-day, tested as it is; the tables
    that played several have their rows summed per table-day first."""
    versions: dict[int, int] = defaultdict(int)
    for r in used.rules.values():
        versions[r.table_id] += 1
    several = sorted(t for t, n in versions.items() if n > 1)
    out = []
    single = days_q.exclude(table_id__in=several) if several else days_q
    columns = ["coups", "banker_wins", "punter_wins", "ties", "covered",
               "commission", "covered_sq", "levy_mean", "levy_var"]
    single_rows = _outside(single.filter(levy_var__gt=0), ["id", *columns],
                           "commission", "levy_mean", "levy_var")
    out += [v[:2] + v[3:] for v in single_rows]
    ids = {(v[0], _day(v[1])): v[2] for v in single_rows}
    if several:
        grouped = (days_q.filter(table_id__in=several)
                   .values("table_id", "gaming_day").annotate(**SUMS))
        out += _outside(grouped.filter(s_lv__gt=0), list(SUMS), "s_commission",
                        "s_lm", "s_lv")
    rows = [_row((v[0], _day(v[1])), "", v[2:]) for v in out]
    # SQLite compares doubles: keep only what the exact test says
    rows = [r for r in rows if r.outside]
    if not rows:
        return []
    # their findings and cagnotte counts: those table-days' rows only (by id
    # where a table-day is one row)
    keys = {r.key for r in rows}
    tables, days = {k[0] for k in keys}, {k[1] for k in keys}
    cells = Q(pk__in=[ids[k] for k in keys if k in ids])
    if several:
        cells |= Q(table_id__in=several, gaming_day__in=days)
    findings = findings_by(days_q.filter(cells), ["table_id", "gaming_day"])
    counted = cagnotte_by(counts.filter(session__table_id__in=tables,
                                        session__gaming_day__in=days),
                          ["table_id", "gaming_day"])
    names = _labels("table", tables)
    for r in rows:
        r.label = f"{names.get(r.key[0], r.key[0])} {r.key[1].isoformat()}"
        r.findings = findings.get(r.key, {})
        if r.key in counted:
            r.counted, r.cagnotte_variance = counted[r.key]
    return sorted(rows, key=lambda r: (r.key[1], r.label))


def _outside(rows, columns: list[str], commission: str, mean: str, var: str):
    gap = F(commission) - F(mean)
    return list(
        rows.annotate(
            gap2=ExpressionWrapper(gap * gap, output_field=DecimalField()),
            limit=ExpressionWrapper(Value(Z95 * Z95) * F(var),
                                    output_field=DecimalField()))
        .filter(gap2__gt=F("limit"))
        .values_list("table_id", "gaming_day", *columns).order_by())


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


def findings_by(rows, columns: list[str]) -> dict[tuple, dict[str, int]]:
    """Sum the rollup rows' {code: n} maps per group, in the database
    (jsonb_each / json_each); only the rows with findings are read."""
    connection = connections[replica.read_alias()]
    sql, params = rows.filter(~Q(findings={})).values("id").query.sql_with_params()
    table = rows.model._meta.db_table
    cols = ", ".join(f"r.{c}" for c in columns)
    if connection.vendor == "postgresql":
        each, value = "jsonb_each_text(r.findings)", "CAST(j.value AS integer)"
    else:
        each, value = "json_each(r.findings)", "j.value"
    out: dict[tuple, dict[str, int]] = defaultdict(dict)
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT {cols}, j.key, SUM({value}) FROM {table} r, {each} j "
            f"WHERE r.id IN ({sql}) GROUP BY {cols}, j.key", params)
        for row in cur.fetchall():
            key = tuple(_day(v) for v in row[: len(columns)])
            if int(row[-1]):
                out[key][row[-2]] = int(row[-1])
    return out


def _day(v):
    # SQLite hands dates back as text from raw SQL
    return date.fromisoformat(v) if isinstance(v, str) else v


def _latest_counts(from_day, to_day, table_ids):
    """The latest cagnotte count of each session of the period (a recount
    replaces a count)."""
    later = CagnotteCount.objects.filter(session=OuterRef("session")).filter(
        Q(counted_at__gt=OuterRef("counted_at"))
        | Q(counted_at=OuterRef("counted_at"), pk__gt=OuterRef("pk")))
    latest = CagnotteCount.objects.filter(
        ~Exists(later), session__gaming_day__gte=from_day,
        session__gaming_day__lte=to_day)
    if table_ids:
        latest = latest.filter(session__table_id__in=table_ids)
    return latest


def cagnotte_by(counts, columns: list[str]) -> dict[tuple, tuple]:
    """(group) -> (counted, counted - computed), summed in the database per
    table, gaming day or table-day of the counted sessions."""
    paths = [f"session__{c}" for c in columns]
    rows = (counts.values(*paths).annotate(c=Sum("counted"), v=Sum("variance"))
            .values_list(*paths, "c", "v").order_by())
    return {tuple(_day(k) for k in r[:-2]): (_money(r[-2]), _money(r[-1]))
            for r in rows}


def _money(v) -> Decimal:
    v = _dec(v)
    return v if v.as_tuple().exponent == -2 else v.quantize(CENT)


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
