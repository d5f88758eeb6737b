"""Stakes, coverage and the garage (docs/rules.md, "Coverage and the garage")."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tables.chemmy import Announcement, CoupError, StakeIn, cover_stakes, seat_rotation

D = Decimal
A = Announcement
TABLE = {"banker_seat": 5, "seats": 9, "minimum_banco": D("100")}


@pytest.fixture(autouse=True)
def _clear_cache():
    # Overrides tests/conftest.py's Django cache fixture: no Django here.
    yield


def cover(stakes, bank="1000", **kw):
    return cover_stakes(stakes, bank=D(bank), **{**TABLE, **kw})


def covered(coverage):
    return [str(s.covered) for s in coverage.stakes]


def declined(coverage):
    return [str(s.declined) for s in coverage.stakes]


# ---------------------------------------------------------------- rotation


def test_rotation_starts_on_the_bankers_right_and_wraps():
    assert seat_rotation(5, 9) == (6, 7, 8, 9, 1, 2, 3, 4)
    assert seat_rotation(9, 9) == (1, 2, 3, 4, 5, 6, 7, 8)
    assert seat_rotation(1, 3) == (2, 3)


def test_plain_stakes_are_covered_in_rotation_order():
    # banker 5 of 9: seat 6 first, then 7; seat 2 comes after the wrap.
    cov = cover(
        [
            StakeIn(D("500"), seat=2),
            StakeIn(D("400"), seat=7),
            StakeIn(D("300"), seat=6),
        ]
    )
    assert covered(cov) == ["300.00", "400.00", "300.00"]
    assert declined(cov) == ["200.00", "0.00", "0.00"]
    assert (cov.covered, cov.garage) == (D("1000"), D("0"))
    assert [s.index for s in cov.stakes] == [0, 1, 2]


def test_rotation_wraps_around_past_the_last_seat():
    # banker 8 of 9: 9, then 1, then 2.
    cov = cover(
        [
            StakeIn(D("600"), seat=2),
            StakeIn(D("600"), seat=1),
            StakeIn(D("600"), seat=9),
        ],
        banker_seat=8,
    )
    assert covered(cov) == ["0.00", "400.00", "600.00"]
    assert cov.punter_seat == 9


def test_standing_players_come_after_every_seat_in_input_order():
    cov = cover(
        [
            StakeIn(D("300"), standing="Mr Blue"),
            StakeIn(D("300"), standing="Mrs Green"),
            StakeIn(D("300"), seat=4),  # last seat in rotation, still before standing
            StakeIn(D("300"), seat=6),
        ]
    )
    assert covered(cov) == ["300.00", "100.00", "300.00", "300.00"]
    assert declined(cov) == ["0.00", "200.00", "0.00", "0.00"]


def test_garage_is_the_uncovered_part_of_the_bank():
    cov = cover([StakeIn(D("200"), seat=6), StakeIn(D("350.50"), standing="x")])
    assert (cov.bank, cov.covered, cov.garage) == (D("1000"), D("550.50"), D("449.50"))
    assert declined(cov) == ["0.00", "0.00"]


def test_crossing_stake_is_partially_covered_and_the_rest_declined():
    cov = cover(
        [
            StakeIn(D("700"), seat=6),
            StakeIn(D("500"), seat=7),
            StakeIn(D("100"), seat=8),
        ]
    )
    assert covered(cov) == ["700.00", "300.00", "0.00"]
    assert declined(cov) == ["0.00", "200.00", "100.00"]
    assert cov.garage == 0


def test_empty_stake_list_covers_nothing():
    cov = cover([])
    assert (cov.covered, cov.garage, cov.stakes) == (D("0"), D("1000"), ())
    assert (cov.punter_index, cov.punter_seat, cov.punter_standing) == (None,) * 3


# ---------------------------------------------------------------- hand holder


def test_highest_covered_stake_holds_the_punter_hand():
    cov = cover(
        [
            StakeIn(D("100"), seat=6),
            StakeIn(D("400"), seat=2),
            StakeIn(D("300"), seat=7),
        ]
    )
    assert (cov.punter_index, cov.punter_seat, cov.punter_standing) == (1, 2, None)


def test_holder_is_judged_on_the_covered_amount_not_the_stake():
    # seat 8's 900 is covered only 200; seat 7's 500 is all covered.
    cov = cover(
        [
            StakeIn(D("300"), seat=6),
            StakeIn(D("500"), seat=7),
            StakeIn(D("900"), seat=8),
        ]
    )
    assert covered(cov) == ["300.00", "500.00", "200.00"]
    assert cov.punter_seat == 7


def test_equal_stakes_the_first_in_rotation_holds_the_hand():
    cov = cover(
        [
            StakeIn(D("200"), seat=3),
            StakeIn(D("200"), seat=9),
            StakeIn(D("200"), seat=7),
        ]
    )
    assert cov.punter_index == 2 and cov.punter_seat == 7


def test_standing_player_can_hold_the_hand():
    cov = cover([StakeIn(D("100"), seat=6), StakeIn(D("300"), standing="Mr Blue")])
    assert (cov.punter_index, cov.punter_seat, cov.punter_standing) == (
        1,
        None,
        "Mr Blue",
    )


# ---------------------------------------------------------------- announcements


def test_banco_solo_takes_the_whole_bank_and_refuses_every_other_stake():
    cov = cover(
        [
            StakeIn(D("300"), seat=6),
            StakeIn(D("1000"), seat=3, announcement=A.BANCO_SOLO),
            StakeIn(D("200"), standing="x"),
        ]
    )
    assert covered(cov) == ["0.00", "1000.00", "0.00"]
    assert declined(cov) == ["300.00", "0.00", "200.00"]
    assert cov.punter_seat == 3


def test_two_banco_solo_the_seat_nearest_the_bankers_right_wins():
    cov = cover(
        [
            StakeIn(D("1000"), seat=2, announcement=A.BANCO_SOLO),
            StakeIn(D("1000"), seat=8, announcement=A.BANCO_SOLO),
        ]
    )
    assert covered(cov) == ["0.00", "1000.00"]
    assert cov.punter_seat == 8


def test_suivi_goes_before_banco_solo():
    cov = cover(
        [
            StakeIn(D("1000"), seat=6, announcement=A.BANCO_SOLO),
            StakeIn(D("1000"), seat=4, announcement=A.SUIVI),
        ],
        suivi_seat=4,
    )
    assert covered(cov) == ["0.00", "1000.00"]
    assert cov.punter_seat == 4


def test_banco_deux_two_punters_take_the_whole_bank():
    cov = cover(
        [
            StakeIn(D("300"), seat=6),
            StakeIn(D("400"), seat=2, announcement="banco_deux"),
            StakeIn(D("600"), seat=9, announcement=A.BANCO_DEUX),
            StakeIn(D("500"), seat=1, announcement=A.BANCO_AVEC),
        ]
    )
    assert covered(cov) == ["0.00", "400.00", "600.00", "0.00"]
    assert cov.garage == 0
    assert cov.punter_seat == 9


def test_banco_deux_equal_halves_first_in_rotation_holds():
    cov = cover(
        [
            StakeIn(D("500"), seat=2, announcement=A.BANCO_DEUX),
            StakeIn(D("500"), seat=9, announcement=A.BANCO_DEUX),
        ]
    )
    assert cov.punter_seat == 9


def test_banco_avec_takes_half_and_the_others_share_the_rest():
    cov = cover(
        [
            StakeIn(D("300"), seat=6),
            StakeIn(D("400"), seat=7),
            StakeIn(D("500"), seat=3, announcement=A.BANCO_AVEC),
        ]
    )
    assert covered(cov) == ["300.00", "200.00", "500.00"]
    assert declined(cov) == ["0.00", "200.00", "0.00"]
    assert cov.punter_seat == 3


def test_announcement_may_be_given_as_its_string_value():
    cov = cover([StakeIn(D("1000"), seat=6, announcement="banco_solo")])
    assert cov.stakes[0].covered == D("1000")


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("stakes", "kw", "field", "words"),
    [
        ([StakeIn(1000.0, seat=6)], {}, "stakes[0].amount", "float"),
        ([StakeIn("100", seat=6)], {}, "stakes[0].amount", "str"),
        ([StakeIn(None, seat=6)], {}, "stakes[0].amount", "NoneType"),
        ([StakeIn(True, seat=6)], {}, "stakes[0].amount", "bool"),
        ([StakeIn(D("0"), seat=6)], {}, "stakes[0].amount", "positive"),
        ([StakeIn(D("-50"), seat=6)], {}, "stakes[0].amount", "positive"),
        ([StakeIn(D("NaN"), seat=6)], {}, "stakes[0].amount", "finite"),
        ([StakeIn(D("Infinity"), seat=6)], {}, "stakes[0].amount", "finite"),
        ([StakeIn(D("10.005"), seat=6)], {}, "stakes[0].amount", "decimal places"),
        ([StakeIn(D("1E+40"), seat=6)], {}, "stakes[0].amount", "too large"),
        (
            [StakeIn(D("50"), seat=6), StakeIn(D("9.99"), seat=7)],
            {},
            "stakes[1].amount",
            "minimum stake 10",
        ),
        ([StakeIn(D("50"), seat=0)], {}, "stakes[0].seat", "1..9"),
        ([StakeIn(D("50"), seat=10)], {}, "stakes[0].seat", "1..9"),
        ([StakeIn(D("50"), seat="3")], {}, "stakes[0].seat", "1..9"),
        ([StakeIn(D("50"), seat=5)], {}, "stakes[0].seat", "holds the bank"),
        (
            [StakeIn(D("50"), seat=6), StakeIn(D("50"), seat=6)],
            {},
            "stakes[1].seat",
            "already",
        ),
        ([StakeIn(D("50"))], {}, "stakes[0].seat", "seat or a standing"),
        ([StakeIn(D("50"), seat=6, standing="x")], {}, "stakes[0].seat", "either"),
        ([StakeIn(D("50"), standing="  ")], {}, "stakes[0].standing", "non-empty"),
        (
            [StakeIn(D("50"), standing="x"), StakeIn(D("50"), standing="x ")],
            {},
            "stakes[1].standing",
            "already",
        ),
        (
            [StakeIn(D("50"), seat=6, announcement="banco")],
            {},
            "stakes[0].announcement",
            "unknown",
        ),
        (["50"], {}, "stakes[0]", "StakeIn"),
        ("50 on 6", {}, "stakes", "list"),
        # banco solo / suivi must be the whole bank
        (
            [StakeIn(D("999"), seat=6, announcement=A.BANCO_SOLO)],
            {},
            "stakes[0].amount",
            "whole bank",
        ),
        (
            [StakeIn(D("1000"), seat=6, announcement=A.SUIVI)],
            {},
            "stakes[0].announcement",
            "no suivi",
        ),
        (
            [StakeIn(D("1000"), seat=6, announcement=A.SUIVI)],
            {"suivi_seat": 7},
            "stakes[0].announcement",
            "only seat 7",
        ),
        (
            [StakeIn(D("1000"), standing="x", announcement=A.SUIVI)],
            {"suivi_seat": 7},
            "stakes[0].announcement",
            "only seat 7",
        ),
        (
            [StakeIn(D("500"), seat=7, announcement=A.SUIVI)],
            {"suivi_seat": 7},
            "stakes[0].amount",
            "whole bank",
        ),
        # banco deux: exactly two, summing to the bank
        (
            [StakeIn(D("1000"), seat=6, announcement=A.BANCO_DEUX)],
            {},
            "stakes[0].announcement",
            "second punter",
        ),
        (
            [
                StakeIn(D("300"), seat=6, announcement=A.BANCO_DEUX),
                StakeIn(D("300"), seat=7, announcement=A.BANCO_DEUX),
                StakeIn(D("400"), seat=8, announcement=A.BANCO_DEUX),
            ],
            {},
            "stakes[2].announcement",
            "third",
        ),
        (
            [
                StakeIn(D("300"), seat=6, announcement=A.BANCO_DEUX),
                StakeIn(D("600"), seat=7, announcement=A.BANCO_DEUX),
            ],
            {},
            "stakes[1].amount",
            "900.00, not the bank in play (1000",
        ),
        # banco avec: half the bank
        (
            [StakeIn(D("400"), seat=6, announcement=A.BANCO_AVEC)],
            {},
            "stakes[0].amount",
            "half the bank",
        ),
        # the table itself
        ([], {"bank": D("0")}, "bank", "positive"),
        ([], {"bank": 1000.0}, "bank", "float"),
        ([], {"minimum_banco": D("-1")}, "minimum_banco", "positive"),
        ([], {"banker_seat": 10}, "banker_seat", "1..9"),
        ([], {"seats": 1, "banker_seat": 1}, "seats", "at least 2"),
        ([], {"suivi_seat": 5}, "suivi_seat", "punter"),
        ([], {"suivi_seat": 12}, "suivi_seat", "punter"),
    ],
)
def test_broken_stakes_are_refused_naming_the_field(stakes, kw, field, words):
    kw = {"bank": D("1000"), **TABLE, **kw}
    with pytest.raises(CoupError) as err:
        cover_stakes(stakes, **kw)
    assert err.value.field == field
    assert words in err.value.message


def test_amounts_with_trailing_zeros_and_ints_are_money():
    cov = cover([StakeIn(D("15.500"), seat=6), StakeIn(20, seat=7)], bank=100)
    assert covered(cov) == ["15.50", "20.00"]
    assert str(cov.covered) == "35.50"


def test_minimum_stake_is_one_tenth_of_the_minimum_banco():
    assert cover([StakeIn(D("10.00"), seat=6)]).covered == D("10")
    with pytest.raises(CoupError):
        cover([StakeIn(D("10.00"), seat=6)], minimum_banco=D("100.10"))


# ---------------------------------------------------------------- properties


@st.composite
def tables(draw):
    seats = draw(st.integers(2, 12))
    banker = draw(st.integers(1, seats))
    others = [s for s in range(1, seats + 1) if s != banker]
    chosen = draw(st.lists(st.sampled_from(others), unique=True, max_size=len(others)))
    cents = st.integers(1_000, 500_000)  # 10.00 .. 5000.00
    stakes = [StakeIn(D(draw(cents)) / 100, seat=s) for s in chosen]
    standing = draw(st.integers(0, 3))
    stakes += [StakeIn(D(draw(cents)) / 100, standing=f"p{i}") for i in range(standing)]
    stakes = draw(st.permutations(stakes))
    bank = D(draw(st.integers(10_000, 2_000_000))) / 100
    return stakes, {
        "bank": bank,
        "banker_seat": banker,
        "seats": seats,
        "minimum_banco": D("100"),
    }


def rotation_key(stake, kw, index):
    if stake.seat is None:
        return kw["seats"] + index
    return (stake.seat - kw["banker_seat"] - 1) % kw["seats"]


@given(tables())
def test_coverage_adds_up(table):
    stakes, kw = table
    cov = cover_stakes(stakes, **kw)
    assert cov.covered + cov.garage == cov.bank
    assert cov.garage >= 0
    assert cov.covered == sum((s.covered for s in cov.stakes), D(0))
    for s, stake in zip(cov.stakes, stakes, strict=True):
        assert s.stake is stake
        assert s.covered + s.declined == stake.amount
        assert 0 <= s.covered <= stake.amount
    # In rotation: fully covered stakes, at most one partial, then nothing.
    ordered = sorted(cov.stakes, key=lambda s: rotation_key(s.stake, kw, s.index))
    states = [
        "full" if s.declined == 0 else "none" if s.covered == 0 else "part"
        for s in ordered
    ]
    assert re.fullmatch("f*p?n*", "".join(x[0] for x in states))
    if cov.garage > 0:
        assert set(states) <= {"full"}
    if stakes:
        holder = cov.stakes[cov.punter_index]
        assert holder.covered == max(s.covered for s in cov.stakes)
        assert (holder.stake.seat, holder.stake.standing) == (
            cov.punter_seat,
            cov.punter_standing,
        )
    else:
        assert cov.punter_index is None
