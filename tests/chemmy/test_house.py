"""House-rule variants in the engine (docs/rules.md, "House rules"): rounding
modes, cover, the maximum bank and prescribed choices in optional cells."""

from __future__ import annotations

import decimal
import random
from decimal import Decimal

import pytest

from tables import chemmy
from tables.chemmy import (
    PUNTO_BANCO_TABLEAU,
    STANDARD_TABLEAU,
    Choice,
    CoupError,
    Prescriptions,
    StakeIn,
    cover_stakes,
    evaluate,
    house_findings,
    rounding_mode,
)


def test_rounding_modes_by_name():
    assert rounding_mode("half_up") == decimal.ROUND_HALF_UP
    assert rounding_mode("half_even") == decimal.ROUND_HALF_EVEN
    assert rounding_mode("down") == decimal.ROUND_DOWN
    with pytest.raises(ValueError, match="commission_rounding: 'bankers'"):
        rounding_mode("bankers")


@pytest.mark.parametrize(
    "mode, levy",
    [("half_up", "53.80"), ("half_even", "53.80"), ("down", "53.70")],
)
def test_each_rounding_mode_on_the_levy(mode, levy):
    amount = Decimal("0.05") * Decimal("1075.00")  # 53.75
    got = chemmy.round_money(amount, Decimal("0.10"), rounding_mode(mode))
    assert got == Decimal(levy)


def cover(stakes, bank="1000.00", banker_seat=5, **kw):
    return cover_stakes(
        [StakeIn(amount=Decimal(a), seat=s) for s, a in stakes],
        bank=Decimal(bank),
        banker_seat=banker_seat,
        seats=9,
        minimum_banco=Decimal("100.00"),
        **kw,
    )


def test_partial_cover_is_the_default():
    c = cover([(2, "600.00"), (6, "600.00")])
    assert [s.covered for s in c.stakes] == [Decimal("400.00"), Decimal("600.00")]
    assert [s.declined for s in c.stakes] == [Decimal("200.00"), Decimal("0.00")]
    assert c.garage == Decimal("0.00")


def test_all_or_nothing_declines_a_stake_that_does_not_fit_whole():
    c = cover([(2, "600.00"), (6, "600.00")], cover="all_or_nothing")
    assert [s.covered for s in c.stakes] == [Decimal("0.00"), Decimal("600.00")]
    assert [s.declined for s in c.stakes] == [Decimal("600.00"), Decimal("0.00")]
    assert (c.covered, c.garage) == (Decimal("600.00"), Decimal("400.00"))
    assert c.punter_seat == 6


def test_all_or_nothing_goes_on_to_the_next_stake():
    c = cover([(6, "700.00"), (7, "500.00"), (8, "300.00")], cover="all_or_nothing")
    assert [s.covered for s in c.stakes] == [
        Decimal("700.00"),
        Decimal("0.00"),
        Decimal("300.00"),
    ]
    assert c.covered == Decimal("1000.00")


def test_an_unknown_cover_rule_is_refused_naming_it():
    with pytest.raises(CoupError) as e:
        cover([(6, "100.00")], cover="most")
    assert e.value.field == "cover"


def test_maximum_bank_caps_what_is_in_play_and_garages_the_rest():
    c = cover(
        [(2, "2500.00")], bank="5000.00", banker_seat=1, maximum_bank=Decimal(2000)
    )
    assert (c.bank, c.covered, c.garage) == (
        Decimal("5000.00"),
        Decimal("2000.00"),
        Decimal("3000.00"),
    )
    # a banco solo takes the whole bank in play: the maximum, not the declared bank
    solo = StakeIn(
        amount=Decimal("2000.00"), seat=2, announcement=chemmy.Announcement.BANCO_SOLO
    )
    c = cover_stakes(
        [solo],
        bank=Decimal("5000.00"),
        banker_seat=1,
        seats=9,
        minimum_banco=Decimal("100.00"),
        maximum_bank=Decimal("2000.00"),
    )
    assert c.covered == Decimal("2000.00")


A = chemmy.Announcement


def capped(*stakes, suivi_seat=None):
    """A bank of 2,110.50 at a table whose maximum bank is 2,000.00."""
    return cover_stakes(
        list(stakes),
        bank=Decimal("2110.50"),
        banker_seat=4,
        seats=9,
        minimum_banco=Decimal("100.00"),
        maximum_bank=Decimal("2000.00"),
        suivi_seat=suivi_seat,
    )


@pytest.mark.parametrize(
    ("stakes", "suivi"),
    [
        ([StakeIn(Decimal("2000.00"), seat=5, announcement=A.BANCO_SOLO)], None),
        ([StakeIn(Decimal("2000.00"), seat=6, announcement=A.SUIVI)], 6),
        (
            [
                StakeIn(Decimal("1000.00"), seat=5, announcement=A.BANCO_AVEC),
                StakeIn(Decimal("1500.00"), seat=7),
            ],
            None,
        ),
        (
            [
                StakeIn(Decimal("1200.00"), seat=5, announcement=A.BANCO_DEUX),
                StakeIn(Decimal("800.00"), seat=8, announcement=A.BANCO_DEUX),
            ],
            None,
        ),
    ],
    ids=["banco solo", "suivi", "banco avec", "banco deux"],
)
def test_an_announcement_above_the_maximum_is_worth_the_maximum(stakes, suivi):
    # docs/rules.md, "Stakes and announcements": the bank in play
    c = capped(*stakes, suivi_seat=suivi)
    assert (c.covered, c.garage) == (Decimal("2000.00"), Decimal("110.50"))


@pytest.mark.parametrize(
    ("stakes", "suivi", "field", "said"),
    [
        (
            [StakeIn(Decimal("2110.50"), seat=5, announcement=A.BANCO_SOLO)],
            None,
            "stakes[0].amount",
            "banco solo takes the whole bank in play (2000.00, the house maximum), "
            "not 2110.50",
        ),
        (
            [StakeIn(Decimal("2110.50"), seat=6, announcement=A.SUIVI)],
            6,
            "stakes[0].amount",
            "suivi takes the whole bank in play (2000.00, the house maximum), "
            "not 2110.50",
        ),
        (
            [StakeIn(Decimal("1055.25"), seat=5, announcement=A.BANCO_AVEC)],
            None,
            "stakes[0].amount",
            "banco avec takes half the bank in play (1000.00, the house maximum), "
            "not 1055.25",
        ),
        (
            [
                StakeIn(Decimal("1055.25"), seat=5, announcement=A.BANCO_DEUX),
                StakeIn(Decimal("1055.25"), seat=6, announcement=A.BANCO_DEUX),
            ],
            None,
            "stakes[1].amount",
            "banco deux stakes[0] and stakes[1] total 2110.50, not the bank in "
            "play (2000.00, the house maximum)",
        ),
    ],
    ids=["banco solo", "suivi", "banco avec", "banco deux"],
)
def test_an_announcement_of_the_whole_bank_above_the_maximum_is_refused(
    stakes, suivi, field, said
):
    with pytest.raises(CoupError) as e:
        capped(*stakes, suivi_seat=suivi)
    assert (e.value.field, e.value.message) == (field, said)


def test_random_stakes_keep_covered_plus_garage_equal_to_the_bank():
    rng = random.Random(13)
    for _ in range(2000):
        seats = rng.sample(range(2, 10), rng.randint(0, 6))
        stakes = [(s, f"{rng.randint(1, 80) * 10}.00") for s in seats]
        mode = rng.choice(["partial", "all_or_nothing"])
        top = rng.choice([None, Decimal(rng.randint(5, 30) * 100)])
        c = cover(
            stakes,
            bank=f"{rng.randint(1, 40) * 50}.00",
            banker_seat=1,
            cover=mode,
            maximum_bank=top,
        )
        assert c.covered + c.garage == c.bank
        assert top is None or c.covered <= top
        for s in c.stakes:
            assert s.covered + s.declined == s.stake.amount
            if mode == "all_or_nothing":
                assert s.covered in (0, s.stake.amount)


# ---- prescriptions ----------------------------------------------------------


def test_free_everywhere_is_the_default_and_finds_nothing():
    v = evaluate(["5S", "KH", "2D"], ["3C", "QD"])  # punter drew on 5
    assert v.punter_choice == "draw"
    assert house_findings(v, Prescriptions()) == ()


def test_a_prescribed_punter_five_not_taken_is_a_house_choice():
    stood = evaluate(["5S", "KH"], ["6C", "QD"])
    drew = evaluate(["5S", "KH", "2D"], ["6C", "QD"])
    rules = Prescriptions(punter_five=Choice.DRAW)
    (f,) = house_findings(stood, rules)
    assert (f.code, f.severity, f.side) == ("house_choice", "warning", "punter")
    assert f.detail["house_rule"] == "punter_five"
    assert (f.detail["required"], f.detail["actual"]) == ("draw", "stand")
    assert "prescribes a draw" in f.message
    assert house_findings(drew, rules) == ()


def test_a_prescribed_banker_cell_not_taken_is_a_house_choice():
    # banker 3 against a 9: optional in the standard tableau
    stood = evaluate(["2S", "KH", "9D"], ["3C", "QD"])
    drew = evaluate(["2S", "KH", "9D"], ["3C", "QD", "4H"])
    rules = Prescriptions(banker={"3/9": "stand"})
    assert house_findings(stood, rules) == ()
    (f,) = house_findings(drew, rules)
    assert (f.side, f.detail["house_rule"], f.detail["punter_third"]) == (
        "banker",
        "3/9",
        9,
    )
    # the other optional cell (5 against a 4) stays free
    five_four = evaluate(["2S", "KH", "4D"], ["5C", "QD"])
    assert five_four.banker_choice == "stand"
    assert house_findings(five_four, rules) == ()


def test_a_false_draw_or_a_natural_is_never_also_a_house_choice():
    rules = Prescriptions(
        punter_five=Choice.STAND, banker={"3/9": "draw", "5/4": "draw"}
    )
    false_draw = evaluate(["2S", "KH", "9D"], ["7C", "QD", "4H"])  # banker drew on 7
    natural = evaluate(["5S", "3H"], ["3C", "QD"])
    assert [f.code for f in false_draw.findings] == ["false_draw"]
    assert house_findings(false_draw, rules) == ()
    assert house_findings(natural, rules) == ()


def test_prescriptions_name_the_broken_field():
    with pytest.raises(ValueError, match="punter_five: 'sometimes'"):
        Prescriptions(punter_five="sometimes")
    with pytest.raises(ValueError, match=r"banker_prescriptions: '8/1' is not a cell"):
        Prescriptions(banker={"8/1": "draw"})
    with pytest.raises(ValueError, match=r"banker_prescriptions\[3/9\]: 'maybe'"):
        Prescriptions(banker={"3/9": "maybe"})


def test_only_an_optional_cell_of_the_tableau_may_be_prescribed():
    rules = Prescriptions(banker={"3/9": "draw"})
    rules.check_against(STANDARD_TABLEAU)
    with pytest.raises(
        ValueError, match=r"banker_prescriptions\[3/9\]: not an optional"
    ):
        rules.check_against(PUNTO_BANCO_TABLEAU)
    with pytest.raises(ValueError, match=r"\[6/stood\]"):
        Prescriptions(banker={"6/stood": "draw"}).check_against(STANDARD_TABLEAU)


def test_every_optional_cell_and_both_choices_against_every_prescription():
    """Exhaustive over the standard tableau's optional cells: a finding exactly
    when the choice made is not the one prescribed."""
    optional = [
        (b, t)
        for b in range(8)
        for t in [None, *range(10)]
        if STANDARD_TABLEAU.banker_action(b, t) is chemmy.Action.OPTIONAL
    ]
    assert optional == [(3, 9), (5, 4)]
    ranks = "KA23456789"
    for b, t in optional:
        punter = ["2S", "KH"] + ([] if t is None else [ranks[t] + "D"])
        for wanted in ("draw", "stand"):
            rules = Prescriptions(banker={chemmy.cell_key(b, t): wanted})
            for draws in (False, True):
                banker = [ranks[b] + "C", "QD"] + (["4H"] if draws else [])
                v = evaluate(punter, banker)
                made = "draw" if draws else "stand"
                assert v.banker_choice == made
                found = house_findings(v, rules)
                assert bool(found) == (made != wanted), (b, t, wanted, made)
