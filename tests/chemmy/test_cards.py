"""Card codes, points and parsing (docs/rules.md, "Cards and totals")."""

from __future__ import annotations

import pickle

import pytest

from tables.chemmy import (
    ALL_CODES,
    RANKS,
    SUITS,
    CoupError,
    evaluate,
    hand_total,
    parse_card,
    parse_hand,
    point,
)


@pytest.fixture(autouse=True)
def _clear_cache():
    # Overrides tests/conftest.py's Django cache fixture: these tests run without
    # Django (-p no:django) and need no cache.
    yield


def test_all_codes_are_the_52_rank_suit_pairs():
    assert len(ALL_CODES) == 52
    assert set(ALL_CODES) == {r + s for r in "A23456789TJQK" for s in "SHDC"}
    assert RANKS == "A23456789TJQK"
    assert SUITS == "SHDC"


@pytest.mark.parametrize(
    ("rank", "value"),
    [("A", 1), ("2", 2), ("3", 3), ("4", 4), ("5", 5), ("6", 6), ("7", 7)]
    + [("8", 8), ("9", 9), ("T", 0), ("J", 0), ("Q", 0), ("K", 0)],
)
def test_point_values(rank, value):
    for suit in "SHDC":
        assert point(rank + suit) == value


@pytest.mark.parametrize(
    ("cards", "total"),
    [
        (["AS", "2H"], 3),
        (["9S", "9H"], 8),
        (["KS", "QH"], 0),
        (["7S", "8D", "5C"], 0),
        (["6S", "TD", "4C"], 0),
        (["9S", "AD"], 0),
        (["5S", "4D", "9C"], 8),
    ],
)
def test_hand_total_is_the_sum_modulo_ten(cards, total):
    assert hand_total(cards) == total


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("TH", "TH"),
        ("th", "TH"),
        ("tH", "TH"),
        ("Th", "TH"),
        ("10h", "TH"),
        ("10H", "TH"),
        (" 9d ", "9D"),
        ("\t9d", "9D"),
        ("as", "AS"),
        ("kc", "KC"),
        ("qD", "QD"),
        ("jS", "JS"),
    ],
)
def test_parse_card_accepts_lower_case_and_ten(raw, canonical):
    assert parse_card(raw) == canonical


@pytest.mark.parametrize(
    "raw", ["", "1H", "11H", "0H", "HT", "TX", "ZZ", "A", "AHS", "10", "1 0H", "T H"]
)
def test_parse_card_refuses_unknown_codes(raw):
    with pytest.raises(CoupError) as err:
        parse_card(raw, field="banker[1]")
    assert err.value.field == "banker[1]"
    assert repr(raw) in err.value.message


@pytest.mark.parametrize("raw", [None, 10, 1.5, b"TH", ["TH"], ("T", "H")])
def test_parse_card_refuses_non_strings(raw):
    with pytest.raises(CoupError) as err:
        parse_card(raw)
    assert err.value.field == "card"


def test_coup_error_carries_field_and_message():
    err = CoupError("punter[1]", "unknown card code 'ZZ'")
    assert isinstance(err, ValueError)
    assert err.field == "punter[1]"
    assert err.message == "unknown card code 'ZZ'"
    assert str(err) == "punter[1]: unknown card code 'ZZ'"
    assert err.to_dict() == {"field": "punter[1]", "message": "unknown card code 'ZZ'"}
    again = pickle.loads(pickle.dumps(err))
    assert (again.field, again.message, str(again)) == (
        err.field,
        err.message,
        str(err),
    )


def test_parse_hand_returns_canonical_tuple():
    assert parse_hand(["th", "10c", " 9d "], field="punter") == ("TH", "TC", "9D")
    assert parse_hand(("AS", "KH"), field="banker") == ("AS", "KH")


@pytest.mark.parametrize("cards", [[], ["AS"], ["AS", "2S", "3S", "4S"]])
def test_parse_hand_counts_name_the_field(cards):
    with pytest.raises(CoupError) as err:
        parse_hand(cards, field="punter")
    assert err.value.field == "punter"
    assert str(len(cards)) in err.value.message


@pytest.mark.parametrize("cards", ["ASKD", None, {"AS", "KD"}, 7])
def test_parse_hand_wants_a_list(cards):
    with pytest.raises(CoupError) as err:
        parse_hand(cards, field="banker")
    assert err.value.field == "banker"


def test_parse_hand_names_the_bad_card():
    with pytest.raises(CoupError) as err:
        parse_hand(["AS", "XX", "2S"], field="punter")
    assert err.value.field == "punter[1]"
    with pytest.raises(CoupError) as err:
        parse_hand(["AS", "2S", None], field="banker")
    assert err.value.field == "banker[2]"


@pytest.mark.parametrize(
    ("punter", "banker", "field"),
    [
        (["AS"], ["2S", "3S"], "punter"),
        (["AS", "2S"], ["2S", "3S", "4S", "5S"], "banker"),
        (["AS", "1S"], ["2S", "3S"], "punter[1]"),
        (["AS", "2S"], ["2S", "3S", "ZZ"], "banker[2]"),
        (["AS", "2S", "3S"], ["2S", ["3S"]], "banker[1]"),
        ("AS 2S", ["2S", "3S"], "punter"),
        # punter is checked first
        (["XX", "2S"], ["YY", "3S"], "punter[0]"),
    ],
)
def test_evaluate_names_the_broken_field(punter, banker, field):
    with pytest.raises(CoupError) as err:
        evaluate(punter, banker)
    assert err.value.field == field


def test_evaluate_returns_canonical_codes():
    verdict = evaluate(["10h", "4s", "2c"], ["kd", " 7c"])
    assert verdict.punter == ("TH", "4S", "2C")
    assert verdict.banker == ("KD", "7C")
