"""Settlement, commission and the banker turn's ledger (docs/rules.md, "Settlement"
and "Banker turns and the suite"). Exact Decimals throughout."""

from __future__ import annotations

from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tables.chemmy import (
    Coverage,
    CoveredStake,
    Outcome,
    StakeIn,
    bank_mismatch_finding,
    cagnotte_variance_finding,
    cover_stakes,
    round_money,
    settle,
    turn_ledger,
)

D = Decimal


@pytest.fixture(autouse=True)
def _clear_cache():
    # Overrides tests/conftest.py's Django cache fixture: no Django here.
    yield


def coverage_of(c: str, bank: str | None = None) -> Coverage:
    """One stake covered for ``c`` out of ``bank`` (default: the whole bank)."""
    return cover_stakes(
        [StakeIn(D(c), seat=2)],
        bank=D(bank or c),
        banker_seat=1,
        seats=9,
        minimum_banco=D("0.10"),
    )


# ---------------------------------------------------------------- round_money


@pytest.mark.parametrize(
    ("amount", "unit", "rounding", "expected"),
    [
        ("1.25", "0.10", None, "1.30"),
        ("1.24", "0.10", None, "1.20"),
        ("1.249", "0.10", None, "1.20"),
        ("0.05", "0.10", None, "0.10"),
        ("0.0499", "0.10", None, "0.00"),
        ("61.728", "0.10", None, "61.70"),
        ("-1.25", "0.10", None, "-1.30"),
        ("1.23", "0.05", None, "1.25"),
        ("1.22", "0.05", None, "1.20"),
        ("2.50", "1", None, "3.00"),
        ("2.499", "0.01", None, "2.50"),
        ("7", "0.10", None, "7.00"),
        ("1.25", "0.10", ROUND_HALF_EVEN, "1.20"),
        ("1.35", "0.10", ROUND_HALF_EVEN, "1.40"),
        ("1.29", "0.10", ROUND_DOWN, "1.20"),
    ],
)
def test_round_money(amount, unit, rounding, expected):
    args = () if rounding is None else (rounding,)
    result = round_money(D(amount), D(unit), *args)
    assert str(result) == expected  # the exact Decimal, 2 places


@pytest.mark.parametrize(
    ("amount", "unit", "rounding", "error"),
    [
        (1.25, D("0.10"), "ROUND_HALF_UP", TypeError),
        (D("1.25"), 0.1, "ROUND_HALF_UP", TypeError),
        (D("1.25"), D("0"), "ROUND_HALF_UP", ValueError),
        (D("1.25"), D("-0.10"), "ROUND_HALF_UP", ValueError),
        (D("1.25"), D("0.001"), "ROUND_HALF_UP", ValueError),
        (D("1.25"), D("0.10"), "half up", ValueError),
        (D("NaN"), D("0.10"), "ROUND_HALF_UP", ValueError),
    ],
)
def test_round_money_refuses(amount, unit, rounding, error):
    with pytest.raises(error):
        round_money(amount, unit, rounding)


# ---------------------------------------------------------------- settle


@pytest.mark.parametrize(
    ("c", "rate", "commission", "bank_after"),
    [
        ("1234.56", "0.05", "61.70", "2407.42"),  # 61.728 -> 61.70
        ("1", "0.05", "0.10", "1.90"),  # 0.05 half up -> 0.10
        ("1000", "0.05", "50.00", "1950.00"),
        ("1000", "0", "0.00", "2000.00"),  # UK club gaming: no deduction
        ("1000", "0.0500", "50.00", "1950.00"),  # as a DecimalField gives it
        ("333.33", "0.025", "8.30", "658.36"),  # 8.33325 -> 8.30
    ],
)
def test_banker_win(c, rate, commission, bank_after):
    s = settle(Outcome.BANKER, coverage_of(c), commission_rate=D(rate))
    assert s.outcome is Outcome.BANKER
    assert str(s.commission) == commission
    assert str(s.bank_after) == bank_after
    assert s.covered == D(c)
    assert s.banker_net == D(c)
    assert s.payouts == (-D(c),)
    assert s.turn_ends is False


def test_banker_win_commission_unit_and_rounding_are_house_rules():
    cov = coverage_of("1")
    s = settle(Outcome.BANKER, cov, commission_unit=D("0.10"), rounding=ROUND_HALF_EVEN)
    assert str(s.commission) == "0.00"
    s = settle(Outcome.BANKER, cov, commission_unit=D("0.01"))
    assert str(s.commission) == "0.05"
    s = settle(Outcome.BANKER, coverage_of("1234.56"), commission_unit=D("1.00"))
    assert str(s.commission) == "62.00"


def test_punter_win_pays_every_covered_stake_and_loses_the_bank():
    cov = cover_stakes(
        [
            StakeIn(D("700"), seat=2),
            StakeIn(D("500"), seat=3),
            StakeIn(D("100"), seat=4),
        ],
        bank=D("1000"),
        banker_seat=1,
        seats=9,
        minimum_banco=D("100"),
    )
    s = settle(Outcome.PUNTER, cov)
    assert [str(p) for p in s.payouts] == ["700.00", "300.00", "0.00"]
    assert (s.commission, s.bank_after, s.banker_net) == (D(0), D(0), D("-1000"))
    assert s.turn_ends is True


def test_banker_win_takes_the_covered_part_only():
    cov = cover_stakes(
        [
            StakeIn(D("700"), seat=2),
            StakeIn(D("500"), seat=3),
            StakeIn(D("100"), seat=4),
        ],
        bank=D("1000"),
        banker_seat=1,
        seats=9,
        minimum_banco=D("100"),
    )
    s = settle(Outcome.BANKER, cov)
    assert [str(p) for p in s.payouts] == ["-700.00", "-300.00", "0.00"]
    assert str(s.bank_after) == "1950.00"


def test_tie_moves_no_money_and_carries_the_covered_bank():
    cov = coverage_of("400", bank="1000")
    s = settle(Outcome.TIE, cov)
    assert (s.bank_before, s.covered, s.garage) == (D("1000"), D("400"), D("600"))
    assert (s.commission, s.bank_after, s.banker_net) == (D(0), D("400"), D(0))
    assert [str(p) for p in s.payouts] == ["0.00"]
    assert s.turn_ends is False


def test_garage_is_withdrawn_and_not_at_risk():
    s = settle(Outcome.BANKER, coverage_of("400", bank="1000"))
    assert (s.garage, s.bank_after, s.commission) == (D("600"), D("780.00"), D("20.00"))
    s = settle(Outcome.PUNTER, coverage_of("400", bank="1000"))
    assert (s.garage, s.bank_after) == (D("600"), D("0"))


def test_settle_accepts_the_outcome_value():
    assert settle("punter", coverage_of("10")).outcome is Outcome.PUNTER


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"commission_rate": 0.05}, TypeError),
        ({"commission_rate": D("-0.01")}, ValueError),
        ({"commission_rate": D("1")}, ValueError),
        ({"commission_unit": D("0")}, ValueError),
        ({"commission_unit": 0.1}, TypeError),
        ({"rounding": "nearest"}, ValueError),
    ],
)
def test_settle_refuses_bad_house_rules(kw, error):
    for outcome in Outcome:
        with pytest.raises(error):
            settle(outcome, coverage_of("10"), **kw)


def test_settle_refuses_what_is_not_a_coverage():
    with pytest.raises(ValueError):
        settle("draw", coverage_of("10"))
    with pytest.raises(TypeError):
        settle(Outcome.TIE, {"covered": D("10")})


# ---------------------------------------------------------------- turn ledger


def test_turn_ledger_when_the_banker_passes():
    s1 = settle(Outcome.BANKER, coverage_of("1000"))  # 1000 -> 1950
    s2 = settle(Outcome.TIE, coverage_of("1500", bank="1950"))  # garage 450
    s3 = settle(Outcome.BANKER, coverage_of("1500", bank="1500"))  # -> 2925
    ledger = turn_ledger(D("1000"), [s1, s2, s3])
    assert (ledger.opening, ledger.bank, ledger.coups, ledger.lost) == (
        D("1000"),
        D("2925.00"),
        3,
        False,
    )
    assert ledger.garage_total == D("450")
    assert ledger.commission_total == D("125.00")
    assert ledger.closing() == D("3375.00")


def test_turn_ledger_when_the_bank_is_lost():
    s1 = settle(Outcome.BANKER, coverage_of("600", bank="1000"))  # garage 400
    s2 = settle(Outcome.PUNTER, coverage_of("1170"))
    ledger = turn_ledger(D("1000"), [s1, s2])
    assert ledger.lost is True
    assert ledger.bank == D("0")
    assert ledger.closing() == D("400")
    assert ledger.commission_total == D("30.00")


def test_turn_ledger_of_no_coup_closes_on_the_opening_bank():
    ledger = turn_ledger(D("500"), [])
    assert (ledger.coups, ledger.closing()) == (0, D("500"))


def test_nothing_follows_a_lost_bank():
    lost = settle(Outcome.PUNTER, coverage_of("100"))
    with pytest.raises(ValueError, match="lost"):
        turn_ledger(D("100"), [lost, settle(Outcome.TIE, coverage_of("100"))])


@pytest.mark.parametrize("opening", [D("0"), D("-5"), 100.0])
def test_turn_ledger_refuses_a_bad_opening(opening):
    with pytest.raises((ValueError, TypeError)):
        turn_ledger(opening, [])


# ---------------------------------------------------------------- bank, cagnotte


def test_bank_mismatch_finding():
    assert bank_mismatch_finding(declared=D("1950"), carried=D("1950.00")) is None
    f = bank_mismatch_finding(declared=D("2000"), carried=D("1950.00"))
    assert (f.code, f.severity, f.side) == ("bank_mismatch", "critical", "banker")
    assert dict(f.detail) == {
        "declared_bank": "2000",
        "carried_forward": "1950.00",
        "difference": "50.00",
    }


def test_cagnotte_variance_finding():
    assert cagnotte_variance_finding(counted=D("125.00"), computed=D("125")) is None
    f = cagnotte_variance_finding(counted=D("120.00"), computed=D("125.00"))
    assert (f.code, f.severity, f.side) == ("cagnotte_variance", "critical", None)
    assert f.detail["difference"] == "-5.00"


# ---------------------------------------------------------------- properties

CENTS = st.integers(1, 10_000_000).map(lambda n: D(n) / 100)
RATES = st.integers(0, 2000).map(lambda n: D(n) / 10_000)  # 0 .. 20 %
UNITS = st.sampled_from([D("0.01"), D("0.05"), D("0.10"), D("0.50"), D("1.00")])


@given(c=CENTS, extra=CENTS, rate=RATES, unit=UNITS)
def test_banker_win_properties(c, extra, rate, unit):
    cov = coverage_of(str(c), bank=str(c + extra))
    assert cov.covered + cov.garage == cov.bank
    s = settle(Outcome.BANKER, cov, commission_rate=rate, commission_unit=unit)
    assert s.bank_after == 2 * s.covered - s.commission
    assert s.commission % unit == 0
    assert abs(s.commission - rate * c) <= unit / 2
    assert s.commission.as_tuple().exponent == -2
    assert s.payouts == (-c,)


@given(c=CENTS, rate=RATES, unit=UNITS, outcome=st.sampled_from(Outcome))
def test_money_is_conserved(c, rate, unit, outcome):
    s = settle(outcome, coverage_of(str(c)), commission_rate=rate, commission_unit=unit)
    # what the punters lose, the bank gains, less what the house takes
    assert s.bank_after - s.covered == -sum(s.payouts) - s.commission
    assert s.banker_net == -sum(s.payouts)


def test_coverage_types_are_frozen():
    cov = coverage_of("10")
    assert isinstance(cov.stakes[0], CoveredStake)
    with pytest.raises(AttributeError):
        cov.covered = D("5")  # type: ignore[misc]
