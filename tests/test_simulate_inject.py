"""`simulate --inject`: each planted pattern is in the database as intended
with a fixed seed, within a tolerance derived from the binomial; and a run
without injections stays honest (no finding, every shoe's count true)."""

from __future__ import annotations

import math
from collections import Counter
from datetime import date, timedelta

import pytest
from django.core.management import CommandError, call_command

from audit.models import Flag
from tables.models import BankerTurn, Coup, Finding, Shoe, ShoeFinding, Stake
from tables.sim_patterns import (
    BANKER_WIN_SHARE,
    Injection,
    bias_for,
    injection_parse,
)
from tables.simulation import simulate
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
DAY = date(2026, 11, 19)


def sd(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n)


def banker_share(coups) -> tuple[float, int]:
    outcomes = [c.outcome for c in coups]
    return outcomes.count("banker") / len(outcomes), len(outcomes)


def within(share: float, n: int, target: float, slack: float = 0.01) -> bool:
    """|share - target| under 3 binomial standard deviations (plus `slack`
    for the tableau's free choices, which move the odds a few tenths)."""
    return abs(share - target) <= 3 * sd(target, n) + slack


@pytest.fixture
def dealers(db):
    return [make_user(f"dealer{i}", "croupier") for i in range(1, 5)]


# -- parsing --------------------------------------------------------------------

def test_the_options_parse():
    inj = injection_parse([
        "croupier-false-draw=3", "banker-win=0.52",
        "table-banker-share=0.42@2026-11-20", "short-shoe=9x4",
    ])
    assert (inj.croupier_false_draw, inj.banker_win, inj.table_banker_share,
            inj.table_from, inj.short_rank, inj.short_count) == (
        3.0, 0.52, 0.42, date(2026, 11, 20), "9", 4)
    assert injection_parse(["short-shoe=10x2"]).short_rank == "T"
    assert not injection_parse([]).any


@pytest.mark.parametrize("spec", [
    "banker-win", "banker-win=", "banker-win=52", "banker-win=x",
    "table-banker-share=0.42@20-11-2026", "short-shoe=9", "short-shoe=Zx4",
    "short-shoe=9x0", "croupier-false-draw=0.5", "croupier-false-draw=x",
    "dealer-tips=3",
])
def test_a_bad_option_is_refused_by_name(spec):
    with pytest.raises(ValueError, match=spec.partition("=")[0]):
        injection_parse([spec])


def test_the_bias_moves_the_share_to_its_target():
    up, q = bias_for(0.52)
    assert up == "up" and BANKER_WIN_SHARE + (1 - BANKER_WIN_SHARE) * q == (
        pytest.approx(0.52))
    down, q = bias_for(0.42)
    assert down == "down" and BANKER_WIN_SHARE * (1 - q) == pytest.approx(0.42)


# -- honest runs -------------------------------------------------------------------

def test_an_honest_run_stays_honest(croupier, dealers):
    report = simulate(user=croupier, croupiers=dealers, tables=2, shoes=2, seed=3,
                      days=2, start=DAY)
    assert report.coups == Coup.objects.count() > 400
    assert not Finding.objects.exists() and not ShoeFinding.objects.exists()
    assert not Flag.objects.exists() and report.shoe_findings == 0
    assert report.injected == {}
    for shoe in Shoe.objects.all():
        assert shoe.left_counted == shoe.cards_left < 7  # the true count
    # every banker and every punter is a card, seat for seat, day after day
    for turn in BankerTurn.objects.select_related("session"):
        table_no = int(turn.session.table.name.rsplit("-", 1)[1])
        assert turn.player_card == f"P{table_no:02d}{turn.seat:02d}"
    assert not Stake.objects.filter(player_card="").exists()
    # two gaming days, both croupiers' coups in each, on the days' own times
    assert set(Coup.objects.values_list("gaming_day", flat=True)) == {
        DAY, DAY + timedelta(days=1)}
    assert set(Coup.objects.values_list("entered_by", flat=True)) == {
        d.pk for d in dealers}
    for coup in Coup.objects.all()[:50]:
        assert coup.created_at.date() == coup.gaming_day


# -- the four patterns -----------------------------------------------------------

def test_a_croupier_false_draws_three_times_the_floors_rate(croupier, dealers):
    report = simulate(
        user=croupier, croupiers=dealers, tables=2, shoes=8, seed=21, days=2,
        start=DAY, false_draw_rate=0.05,
        inject=Injection(croupier_false_draw=3),
    )
    assert report.injected["croupier"] == {
        "user": "dealer1", "rate": pytest.approx(0.15), "floor_rate": 0.05}
    fd = set(Finding.objects.filter(code="false_draw")
             .values_list("coup_id", flat=True))
    coups = Counter()
    drawn = Counter()
    for coup_id, who in Coup.objects.values_list("pk", "entered_by__username"):
        coups[who] += 1
        drawn[who] += coup_id in fd
    p1, n1 = drawn["dealer1"] / coups["dealer1"], coups["dealer1"]
    n0 = sum(coups.values()) - n1
    p0 = (sum(drawn.values()) - drawn["dealer1"]) / n0
    ratio = p1 / p0
    # the delta method's standard deviation of a ratio of two shares
    sd_ratio = ratio * math.sqrt((1 - p1) / (n1 * p1) + (1 - p0) / (n0 * p0))
    assert n1 > 300 and n0 > 900
    # a false draw's share of coups is not quite linear in the rate per
    # decision (a coup has one or two of them): 0.1 of slack
    assert abs(ratio - 3) <= 3 * sd_ratio + 0.1, (ratio, sd_ratio)
    for who in ("dealer2", "dealer3", "dealer4"):  # the others: the floor's
        assert abs(drawn[who] / coups[who] - p0) <= 3 * sd(p0, coups[who])


@pytest.mark.parametrize("target", [0.52, 0.62])
def test_a_banker_wins_his_share(croupier, target):
    report = simulate(user=croupier, tables=1, shoes=24, seed=8,
                      inject=Injection(banker_win=target))
    card = report.injected["banker"]["player_card"]
    assert card == "P0101"
    his = Coup.objects.filter(turn__player_card=card)
    rest = Coup.objects.exclude(turn__player_card=card)
    share, n = banker_share(his)
    assert n > 150
    assert within(share, n, target), (share, n)
    other, m = banker_share(rest)
    assert within(other, m, BANKER_WIN_SHARE), (other, m)
    assert not Finding.objects.exists()  # every coup a real deal by the rules


@pytest.mark.parametrize("target", [0.42, 0.32])
def test_a_tables_banker_wins_fall_from_a_day(croupier, target):
    start = DAY + timedelta(days=1)
    report = simulate(
        user=croupier, tables=2, shoes=8, seed=5, days=2, start=DAY,
        inject=Injection(table_banker_share=target, table_from=start),
    )
    name = report.injected["table"]["name"]
    assert name == "Sim 5-2" and report.injected["table"]["from"] == "2026-11-20"
    table = Coup.objects.filter(shoe__session__table__name=name)
    share, n = banker_share(table.filter(gaming_day=start))
    assert n > 300 and within(share, n, target), (share, n)
    before, m = banker_share(table.filter(gaming_day=DAY))
    assert within(before, m, BANKER_WIN_SHARE), (before, m)
    other, k = banker_share(Coup.objects.exclude(shoe__session__table__name=name))
    assert within(other, k, BANKER_WIN_SHARE), (other, k)
    assert not Finding.objects.exists()


def test_a_shoe_short_of_four_nines(croupier):
    report = simulate(user=croupier, tables=1, shoes=2, seed=13,
                      inject=Injection(short_rank="9", short_count=4))
    (short,) = report.injected["short_shoes"]
    assert len(short["missing"]) == 4 and {c[0] for c in short["missing"]} == {"9"}
    shoe = Shoe.objects.get(pk=short["shoe"])
    assert shoe.number == 1
    finding = ShoeFinding.objects.get()
    assert finding.shoe == shoe and finding.detail["difference"] == -4
    assert shoe.left_counted == shoe.cards_left - 4
    nines = sum(card[0] == "9" for p, b in shoe.coups.values_list(
        "punter_cards", "banker_cards") for card in p + b)
    assert nines <= 6 * 4 - 4
    assert Flag.objects.get().kind == "shoe" and report.shoe_findings == 1
    other = Shoe.objects.exclude(pk=shoe.pk).get()
    assert other.left_counted == other.cards_left and not other.findings.exists()
    assert not Finding.objects.exists()


# -- the command --------------------------------------------------------------------

def test_the_command_takes_the_injections(db, capsys):
    call_command(
        "simulate", "--seed", "4", "--shoes", "1", "--tables", "2",
        "--inject", "croupier-false-draw=3", "--inject", "short-shoe=9x4",
        "--inject", "banker-win=0.52", "--inject",
        "table-banker-share=0.42@2026-11-20", "--days", "2", "--start", "2026-11-19",
    )
    out = capsys.readouterr().out
    assert "injected croupier" in out and "injected short_shoes" in out
    assert "shoe findings 1" in out
    assert set(Coup.objects.values_list("entered_by__username", flat=True)) <= {
        f"sim-croupier-{i}" for i in range(1, 5)}
    assert ShoeFinding.objects.count() == 1


@pytest.mark.parametrize("args", [
    ["--inject", "banker-win=2"], ["--inject", "nothing=1"],
    ["--start", "yesterday"], ["--days", "0"],
    ["--inject", "croupier-false-draw=3", "--croupiers", "1"],
])
def test_the_command_refuses_bad_options(db, args):
    with pytest.raises(CommandError):
        call_command("simulate", *args)


def test_a_past_day_holds_only_so_many_shoes(croupier):
    with pytest.raises(ValueError, match="shoes a simulated day"):
        simulate(user=croupier, tables=26, shoes=10, seed=1, start=DAY)
    assert not Coup.objects.exists()
