"""The shoe: the seven-card rule and card counts (docs/rules.md, "The shoe")."""

from __future__ import annotations

import pytest

from tables.chemmy import CoupError, cards_left, shoe_findings


@pytest.fixture(autouse=True)
def _clear_cache():
    # Overrides tests/conftest.py's Django cache fixture: no Django here.
    yield


def findings(decks=6, burned=0, dealt_before=0, seen=None, new_cards=("AS", "KH")):
    return shoe_findings(
        decks=decks,
        burned=burned,
        dealt_before=dealt_before,
        seen=seen or {},
        new_cards=list(new_cards),
    )


def test_cards_left():
    assert cards_left(6, 0, 0) == 312
    assert cards_left(6, 5, 100) == 207
    assert cards_left(1, 10, 35) == 7
    assert cards_left(1, 10, 50) == -8


@pytest.mark.parametrize(
    ("decks", "burned", "dealt"), [(0, 0, 0), (9, 0, 0), (6, -1, 0), (6, 0, -1)]
)
def test_cards_left_refuses_nonsense(decks, burned, dealt):
    with pytest.raises(ValueError):
        cards_left(decks, burned, dealt)


def test_seven_cards_left_is_enough():
    assert findings(decks=1, burned=10, dealt_before=35) == []


def test_six_cards_left_is_deal_below_seven():
    (f,) = findings(decks=1, burned=10, dealt_before=36)
    assert (f.code, f.severity, f.side) == ("deal_below_seven", "warning", None)
    assert dict(f.detail) == {"cards_left": 6}
    assert "6 cards left" in f.message


def test_deal_below_seven_in_a_six_deck_shoe():
    assert findings(burned=8, dealt_before=297) == []  # 312 - 305 = 7
    (f,) = findings(burned=8, dealt_before=298)
    assert f.detail["cards_left"] == 6


def test_card_count_exceeded_is_critical():
    (f,) = findings(decks=1, seen={"AS": 1}, new_cards=["as", "KH"])
    assert (f.code, f.severity, f.side) == ("card_count_exceeded", "critical", None)
    assert dict(f.detail) == {"card": "AS", "count": 2, "decks": 1}


def test_card_count_at_the_limit_is_fine():
    assert (
        findings(decks=6, seen={"AS": 5, "KH": 4}, new_cards=["AS", "KH", "KH"]) == []
    )


def test_card_count_within_one_coup_and_each_code_once():
    out = findings(
        decks=2, seen={"QD": 2, "2C": 1}, new_cards=["2c", "QD", "2C", "QD", "3S"]
    )
    assert [(f.detail["card"], f.detail["count"]) for f in out] == [
        ("2C", 3),
        ("QD", 4),
    ]


def test_both_shoe_findings_together():
    out = findings(decks=1, burned=0, dealt_before=50, seen={"AS": 1}, new_cards=["AS"])
    assert [f.code for f in out] == ["deal_below_seven", "card_count_exceeded"]


@pytest.mark.parametrize("decks", [0, 9, -1, "6", 6.0])
def test_decks_must_be_one_to_eight(decks):
    with pytest.raises(ValueError):
        findings(decks=decks)


def test_bad_cards_name_the_field():
    with pytest.raises(CoupError) as err:
        findings(new_cards=["AS", "ZZ"])
    assert err.value.field == "new_cards[1]"
    with pytest.raises(CoupError) as err:
        findings(seen={"1H": 1})
    assert err.value.field == "seen"
