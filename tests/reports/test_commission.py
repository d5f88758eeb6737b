"""The commission report from the rollups: groupings, totals, cagnotte, findings,
expected commission and the 95 % band, rules in force."""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext

import pytest
from django.db.models import Count, Sum
from django.utils import timezone

from audit.models import CagnotteCount
from audit.reports.expectation import Expectation, p_banker, p_banker_play, rules_play
from audit.reports.selectors import commission_report
from tables.models import (
    Coup,
    Finding,
    Table,
    TableDayRollup,
    TableSession,
)
from tables.rollups import current_coups
from tables.services import house_rules_change

from .conftest import DAY1, DAY2, DAY3, at, evening, play

pytestmark = pytest.mark.django_db


def _db_totals(**filters):
    coups = Coup.objects.filter(**filters)
    agg = coups.aggregate(n=Count("id"), covered=Sum("covered"),
                          commission=Sum("commission"))
    return agg["n"], agg["covered"], agg["commission"]


@pytest.mark.parametrize("group_by", ["table", "gaming_day", "croupier", "banker"])
def test_every_grouping_adds_up_to_the_coups(nights, group_by):
    report = commission_report(from_day=DAY1, to_day=DAY3, group_by=group_by)
    n, covered, commission = _db_totals()
    t = report.total
    assert (t.coups, t.covered, t.commission) == (n, covered, commission)
    assert sum(r.coups for r in report.rows) == n
    assert sum(r.commission for r in report.rows) == commission
    assert sum(r.banker_wins + r.punter_wins + r.ties for r in report.rows) == n
    assert t.banker_wins == Coup.objects.filter(outcome="banker").count()
    by_code = dict(Finding.objects.values_list("code").annotate(n=Count("id")))
    assert t.findings == by_code and by_code.get("false_draw", 0) > 0
    assert sum(r.findings.get("false_draw", 0) for r in report.rows) == by_code[
        "false_draw"]
    expected_rows = {
        "table": Table.objects.count(), "gaming_day": 3, "croupier": 2,
        "banker": Coup.objects.values("banker_seat").distinct().count(),
    }[group_by]
    assert len(report.rows) == expected_rows


def test_labels_and_a_period_that_cuts_days(nights, croupier):
    report = commission_report(from_day=DAY2, to_day=DAY2, group_by="croupier")
    assert [r.label for r in report.rows] == ["croupier2"]
    assert report.total.coups == _db_totals(gaming_day=DAY2)[0]
    by_day = commission_report(from_day=DAY1, to_day=DAY3, group_by="gaming_day")
    assert [r.label for r in by_day.rows] == [d.isoformat() for d in (DAY1, DAY2, DAY3)]
    assert [d.label for d in by_day.days] == [r.label for r in by_day.rows]


MODES = {"half_up": ROUND_HALF_UP, "half_even": ROUND_HALF_EVEN, "down": ROUND_DOWN}


def by_hand(coups) -> tuple[Decimal, Decimal]:
    """Mean and variance of the commission, coup by coup: P(banker) of the
    coup's own rules (decks, tableau, prescribed cells) times the levy its
    rate, unit and mode take on its covered amount (rounded here without the
    engine's helper)."""
    mean = var = Decimal("0")
    with localcontext() as ctx:
        ctx.prec = 34
        for c in coups.select_related("rules"):
            r = c.rules
            p = p_banker_play(rules_play(r, c.tableau_version))
            steps = (r.commission_rate * c.covered / r.commission_unit).quantize(
                Decimal(1), rounding=MODES[r.commission_rounding])
            levy = steps * r.commission_unit
            mean += p * levy
            var += p * (1 - p) * levy * levy
    return mean, var


def same(a: Decimal, b: Decimal) -> bool:
    """Equal to the rollups' precision: each coup's expectation is summed to 10
    places (tables/rollups.py), so a report of n coups is within n x 5e-11 of
    the exact sum: 1e-7 holds for the thousands of coups here, and is a
    hundred-thousandth of a cent."""
    return abs(a - b) < Decimal("1e-7")


def test_expected_commission_and_band(nights):
    report = commission_report(from_day=DAY1, to_day=DAY3)
    p = p_banker(6, "chemmy-standard-1")
    assert Decimal("0.45") < p < Decimal("0.46")
    t = report.total
    mean, var = by_hand(current_coups())
    # exact to the rollups' 10 places per coup (same())
    assert same(t.exp.mean, mean) and same(t.exp.var, var)
    assert t.expected == mean.quantize(Decimal("0.01"))
    # rounding to 0.10 half up is not rate x C: on these stakes it adds a little
    assert t.exp.mean != Decimal("0.05") * p * t.covered
    sd = var.sqrt()
    assert abs(t.band_high - (t.exp.mean + Decimal("1.96") * sd)) < Decimal("0.01")
    assert t.band_low < t.expected < t.band_high
    # simulated play is fair: the total is within a few standard deviations
    assert abs(t.z) < 3
    # every grouping splits the same coups: the same expectation in total
    for group_by in ("table", "gaming_day", "croupier", "banker"):
        rows = commission_report(from_day=DAY1, to_day=DAY3, group_by=group_by).rows
        assert same(sum(r.exp.mean for r in rows), mean), group_by


@pytest.mark.tampers  # moves a rollup's commission without a coup
def test_a_cell_outside_the_band_is_flagged(croupier):
    """A table-day whose commission is far below what its coups imply."""
    play(croupier, DAY1, seed=5, prefix="Band")
    play(croupier, DAY2, seed=6, prefix="Band")
    table = Table.objects.get(name="Band 5-1")
    assert commission_report(from_day=DAY1, to_day=DAY2).flagged == []
    # the report's table-day row (its grain for the band)
    TableDayRollup.objects.filter(table=table, gaming_day=DAY1).update(
        commission=Decimal("0.10"))
    report = commission_report(from_day=DAY1, to_day=DAY2)
    assert [c.key for c in report.flagged] == [(table.pk, DAY1)]
    bad = report.flagged[0]
    assert bad.z < Decimal("-1.96") and bad.outside
    assert bad.label == f"{table.name} {DAY1.isoformat()}"
    assert bad.commission == Decimal("0.10") and bad.coups > 0
    # every flagged cell is outside, every other cell inside, by the exact
    # test in Python (Expectation.outside) over the same rows
    every = [(r.table_id, r.gaming_day, r) for r in TableDayRollup.objects.all()]
    outside = sorted((t, d) for t, d, r in every
                     if Expectation(r.levy_mean, r.levy_var).outside(r.commission))
    assert outside == [(table.pk, DAY1)]


@pytest.mark.tampers  # writes records directly, not through the services
def test_cagnotte_counted_and_variance_per_table_day(nights, pitboss):
    sessions = TableSession.objects.filter(gaming_day=DAY1).order_by("id")
    s1 = sessions[0]
    computed = Coup.objects.filter(shoe__session=s1).aggregate(s=Sum("commission"))["s"]
    now = timezone.now()
    CagnotteCount.objects.create(session=s1, counted=computed - 10, computed=computed,
                                 variance=Decimal("-10"), counted_by=pitboss,
                                 counted_at=now)
    # a recount replaces the count
    CagnotteCount.objects.create(session=s1, counted=computed, computed=computed,
                                 variance=Decimal("0"), counted_by=pitboss,
                                 counted_at=now + timedelta(minutes=5))
    report = commission_report(from_day=DAY1, to_day=DAY1, group_by="table")
    row = next(r for r in report.rows if r.key == s1.table_id)
    assert row.counted == computed and row.cagnotte_variance == 0
    others = [r for r in report.rows if r.key != s1.table_id]
    assert all(r.counted is None for r in others)
    assert report.total.counted == computed
    # not attributable to a croupier or a seat
    by_croupier = commission_report(from_day=DAY1, to_day=DAY1, group_by="croupier")
    assert by_croupier.rows[0].counted is None and by_croupier.total.counted == computed


def test_rules_in_force_follow_each_version(croupier, manager):
    play(croupier, DAY1, seed=4, prefix="R")
    table = Table.objects.get(name="R 4-1")
    with at(evening(DAY2, 8)):
        house_rules_change(table=table, user=manager, reason="eight decks", decks=8,
                           commission_rate=Decimal("0.04"))
    play(croupier, DAY2, seed=4, prefix="R")
    report = commission_report(from_day=DAY1, to_day=DAY2, group_by="gaming_day")
    assert [(r["version"], r["decks"]) for r in report.rules] == [(1, 6), (2, 8)]
    assert report.rules[1]["from_day"] == DAY2.isoformat()
    assert [r["coups"] for r in report.rules] == [
        Coup.objects.filter(gaming_day=d).count() for d in (DAY1, DAY2)]
    day1, day2 = report.rows
    # each day's coups weighed under their own version (6 decks at 5 %, then
    # 8 decks at 4 %)
    assert same(day1.exp.mean, by_hand(current_coups().filter(gaming_day=DAY1))[0])
    assert same(day2.exp.mean, by_hand(current_coups().filter(gaming_day=DAY2))[0])
    assert {c.rules.decks for c in Coup.objects.filter(gaming_day=DAY2)} == {8}
    # grouped by croupier, each part is still weighed with its own day's rules
    by_croupier = commission_report(from_day=DAY1, to_day=DAY2, group_by="croupier")
    assert same(by_croupier.total.exp.mean, report.total.exp.mean)
    assert same(by_croupier.rows[0].exp.mean, day1.exp.mean + day2.exp.mean)
    only_day1 = commission_report(from_day=DAY1, to_day=DAY1)
    assert [r["version"] for r in only_day1.rules] == [1]


def test_an_empty_period_is_an_empty_report(db):
    report = commission_report(from_day=DAY1, to_day=DAY1)
    assert report.rows == [] and report.total.coups == 0
    assert report.total.expected == 0 and not report.flagged


@pytest.fixture
def months(croupier, croupier2):
    """Coups on both sides of two month boundaries: Feb 27, Mar 1, Mar 31,
    Apr 1 and Apr 30 of 2025, two croupiers, a few false draws."""
    from datetime import date

    days = [date(2025, 2, 27), date(2025, 3, 1), date(2025, 3, 31),
            date(2025, 4, 1), date(2025, 4, 30)]
    for i, day in enumerate(days):
        play(croupier if i % 2 else croupier2, day, seed=40 + i, rate=0.05,
             prefix=f"M{i}")
    return days


def _coup_groups(column: str, first, last) -> dict:
    coups = Coup.objects.filter(gaming_day__gte=first, gaming_day__lte=last)
    key = {"croupier": "entered_by_id", "banker": "banker_seat"}[column]
    return {k: (n, c) for k, n, c in coups.values(key).annotate(
        n=Count("id"), c=Sum("commission")).values_list(key, "n", "c")}


@pytest.mark.parametrize("group_by", ["croupier", "banker"])
@pytest.mark.parametrize("period", [
    ("2025-02-27", "2025-04-30"),  # a cut month, two whole months
    ("2025-02-28", "2025-03-31"),  # a cut day of February, March whole
    ("2025-03-01", "2025-03-31"),  # one whole month
    ("2025-03-02", "2025-04-01"),  # no whole month: the cells only
    ("2025-03-31", "2025-04-30"),  # a cut day of March, April whole
])
def test_croupier_and_banker_groupings_across_months(months, group_by, period):
    """The months a period covers whole come from their month rows, the cut
    days from the cells: the sums equal the coups', whatever the cut."""
    from datetime import date

    first, last = (date.fromisoformat(d) for d in period)
    report = commission_report(from_day=first, to_day=last, group_by=group_by)
    got = {r.key: (r.coups, r.commission) for r in report.rows}
    assert got == _coup_groups(group_by, first, last)
    n, _, commission = _db_totals(gaming_day__gte=first, gaming_day__lte=last)
    assert (report.total.coups, report.total.commission) == (n, commission)
    codes = dict(Finding.objects.filter(
        coup__gaming_day__gte=first, coup__gaming_day__lte=last,
    ).values_list("code").annotate(n=Count("id")))
    assert report.total.findings == codes
    assert {c: sum(r.findings.get(c, 0) for r in report.rows) for c in codes} == codes


def test_whole_months():
    from datetime import date

    from audit.reports.selectors import whole_months

    d = date.fromisoformat
    assert whole_months(d("2025-01-01"), d("2025-12-31")) == (d("2025-01-01"),
                                                              d("2025-12-01"))
    assert whole_months(d("2025-01-02"), d("2025-12-30")) == (d("2025-02-01"),
                                                              d("2025-11-01"))
    assert whole_months(d("2025-02-01"), d("2025-02-28")) == (d("2025-02-01"),
                                                              d("2025-02-01"))
    assert whole_months(d("2024-02-01"), d("2024-02-28")) is None  # leap year
    assert whole_months(d("2025-01-15"), d("2025-02-14")) is None


@pytest.mark.parametrize("group_by", ["table", "gaming_day", "croupier", "banker"])
def test_the_report_reads_rollups_not_coups(months, group_by):
    """Its queries touch no coup, stake or finding row, and their number does
    not grow with the period's rows: the report's time follows the rollup
    rows of the grain it reads, never the coups."""
    from datetime import date

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        report = commission_report(from_day=date(2025, 2, 27),
                                   to_day=date(2025, 4, 30), group_by=group_by)
    assert report.total.coups == Coup.objects.count()
    sql = [q["sql"] for q in queries]
    for name in ("tables_coup", "tables_stake", "tables_finding"):
        assert not any(f'"{name}"' in q or f" {name} " in q for q in sql), name
    assert len(sql) <= 16, sql


@pytest.mark.tampers  # writes the table-day rows directly
def test_a_table_day_of_two_versions_is_flagged_as_one_cell(manager):
    """A table that played two house-rules versions on one gaming day has two
    table-day rows: its band is tested on their sum, not row by row. At a
    table of one version each row is its cell."""
    from tables.services import table_create

    two = table_create(user=manager, name="Two versions", device="t")
    v1 = two.rules
    with at(evening(DAY1, 8)):
        v2 = house_rules_change(table=two, user=manager, reason="eight decks",
                                decks=8)
    one = table_create(user=manager, name="One version", device="t")

    def row(table, rules, commission, day=DAY1):
        return TableDayRollup.objects.create(
            table=table, gaming_day=day, rules=rules, coups=100, banker_wins=46,
            punter_wins=45, ties=9, covered=Decimal("10000"),
            covered_sq=Decimal("1000000"), commission=Decimal(commission),
            levy_mean=Decimal("230"), levy_var=Decimal("1241.1"))

    # sd = sqrt(1241.1) = 35.23, band 230 +/- 69.05 per row
    row(two, v1, "100.00")  # alone: outside (below)
    row(two, v2, "360.00")  # alone: outside (above); the day's sum 460 = 2 x 230
    row(two, v1, "230.00", day=DAY2)
    row(two, v2, "20.00", day=DAY2)  # the day: 250 against 460 +/- 97.6: outside
    row(one, one.rules, "100.00")  # outside
    row(one, one.rules, "240.00", day=DAY2)  # inside

    report = commission_report(from_day=DAY1, to_day=DAY2)
    flagged = {(c.key[0], c.key[1]): c for c in report.flagged}
    assert set(flagged) == {(two.pk, DAY2), (one.pk, DAY1)}
    assert flagged[(two.pk, DAY2)].commission == Decimal("250.00")
    assert flagged[(two.pk, DAY2)].coups == 200
    # by hand: the cells the report flags are those the exact test flags
    cells: dict = {}
    for r in TableDayRollup.objects.all():
        e = cells.setdefault((r.table_id, r.gaming_day), [Decimal(0), Expectation()])
        e[0] += r.commission
        e[1].merge(Expectation(r.levy_mean, r.levy_var))
    assert {k for k, (c, e) in cells.items() if e.outside(c)} == set(flagged)
