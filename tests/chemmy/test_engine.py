"""evaluate(): the banker's 88 cells, the punter's rule, naturals, ties, and
properties of coups dealt from random shoes (docs/rules.md, "Outcome")."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tables.chemmy import ALL_CODES, Finding, Outcome, Verdict, evaluate


@pytest.fixture(autouse=True)
def _clear_cache():
    # Overrides tests/conftest.py's Django cache fixture: no Django here.
    yield


# docs/rules.md, "The banker's tableau", pasted verbatim (columns: stood, then the
# punter's third card 0..9). Independent of the engine's own copy.
RULES_MD_TABLE = """
| 0, 1, 2 | D | D | D | D | D | D | D | D | D | D | D |
| 3 | D | D | D | D | D | D | D | D | D | S | O |
| 4 | D | S | S | D | D | D | D | D | D | S | S |
| 5 | D | S | S | S | S | O | D | D | D | S | S |
| 6 | S | S | S | S | S | S | S | D | D | S | S |
| 7 | S | S | S | S | S | S | S | S | S | S | S |
"""
TABLE: dict[tuple[int, int | None], str] = {}
for _line in RULES_MD_TABLE.strip().splitlines():
    _head, *_cells = [c.strip() for c in _line.strip().strip("|").split("|")]
    for _total in _head.split(","):
        for _col, _cell in enumerate(_cells):
            TABLE[int(_total), None if _col == 0 else _col - 1] = _cell
assert len(TABLE) == 88
# docs/rules.md, "The punter's rule".
PUNTER_RULE = {0: "D", 1: "D", 2: "D", 3: "D", 4: "D", 5: "O", 6: "S", 7: "S"}

RANK_FOR_POINT = "TA23456789"  # a rank whose point value is the index
PTS = {r: (0 if r in "TJQK" else 1 if r == "A" else int(r)) for r in "A23456789TJQK"}


def two_cards(total: int, suit: str) -> list[str]:
    """Two cards making ``total``, never a natural by accident of construction."""
    return ["K" + suit, RANK_FOR_POINT[total] + suit]


def card(value: int, suit: str = "C") -> str:
    return RANK_FOR_POINT[value] + suit


# ---------------------------------------------------------------- banker cells

CELLS = sorted(
    TABLE.items(), key=lambda kv: (kv[0][0], -1 if kv[0][1] is None else kv[0][1])
)


@pytest.mark.parametrize("banker_draws", [True, False], ids=["draws", "stands"])
@pytest.mark.parametrize(
    ("cell", "rule"),
    CELLS,
    ids=[f"banker{t}-{'stood' if v is None else v}" for (t, v), _ in CELLS],
)
def test_banker_cell(cell, rule, banker_draws):
    total, third = cell
    if third is None:
        punter = two_cards(6, "H")  # 6 must stand: the punter is legal
    else:
        punter = two_cards(2, "H") + [card(third, "D")]  # 2 must draw
    banker = two_cards(total, "S") + (["3C"] if banker_draws else [])
    verdict = evaluate(punter, banker)

    assert verdict.natural is None
    assert verdict.punter_third == third
    assert verdict.punter_choice is None
    legal = rule == "O" or (rule == "D") == banker_draws
    if rule == "O":
        assert verdict.banker_choice == ("draw" if banker_draws else "stand")
    else:
        assert verdict.banker_choice is None
    if legal:
        assert verdict.findings == ()
        return
    (finding,) = verdict.findings
    assert finding.code == "false_draw"
    assert finding.severity == "warning"
    assert finding.side == "banker"
    assert dict(finding.detail) == {
        "punter_total": 6 if third is None else 2,
        "banker_total": total,
        "punter_third": third,
        "required": "draw" if rule == "D" else "stand",
        "actual": "draw" if banker_draws else "stand",
    }
    assert finding.message.startswith(
        f"Banker {'drew' if banker_draws else 'stood'} on {total} "
    )


def test_banker_false_draw_message():
    verdict = evaluate(["KH", "2H", "6D"], ["KS", "5S"])
    (finding,) = verdict.findings
    assert (
        finding.message == "Banker stood on 5 against a 6: the tableau requires a draw."
    )
    verdict = evaluate(["KH", "7H"], ["KS", "6S", "AC"])
    (finding,) = verdict.findings
    assert finding.message == (
        "Banker drew on 6 with the punter standing: the tableau requires standing."
    )


# ---------------------------------------------------------------- punter rule


@pytest.mark.parametrize("punter_draws", [True, False], ids=["draws", "stands"])
@pytest.mark.parametrize("total", range(8))
def test_punter_rule(total, punter_draws):
    punter = two_cards(total, "H") + (["2C"] if punter_draws else [])
    banker = ["KS", "7S"]  # 7 stands in every column: only the punter can err
    verdict = evaluate(punter, banker)
    rule = PUNTER_RULE[total]
    assert verdict.banker_choice is None
    if rule == "O":
        assert verdict.findings == ()
        assert verdict.punter_choice == ("draw" if punter_draws else "stand")
        return
    assert verdict.punter_choice is None
    if (rule == "D") == punter_draws:
        assert verdict.findings == ()
        return
    (finding,) = verdict.findings
    assert (finding.code, finding.side, finding.severity) == (
        "false_draw",
        "punter",
        "warning",
    )
    assert dict(finding.detail) == {
        "punter_total": total,
        "banker_total": 7,
        "punter_third": None,
        "required": "draw" if rule == "D" else "stand",
        "actual": "draw" if punter_draws else "stand",
    }
    verb, needs = ("drew", "standing") if punter_draws else ("stood", "a draw")
    assert finding.message == f"Punter {verb} on {total}: the rule requires {needs}."


def test_punter_false_draw_still_counts_his_card_and_the_banker_follows_it():
    # Punter drew on 7 (false); the 4 counts: 7 + 4 = 1. Banker 5 against a 4 is
    # optional, so the banker is not at fault whatever he does.
    verdict = evaluate(["KH", "7H", "4D"], ["KS", "5S"])
    assert verdict.punter_total == 1
    assert verdict.punter_third == 4
    assert verdict.banker_choice == "stand"
    assert [f.side for f in verdict.findings] == ["punter"]
    assert verdict.outcome is Outcome.BANKER


def test_both_sides_can_err_in_one_coup():
    # Punter stood on 3 (must draw), banker drew on 7 (must stand).
    verdict = evaluate(["KH", "3H"], ["KS", "7S", "2C"])
    assert [(f.side, f.detail["required"]) for f in verdict.findings] == [
        ("punter", "draw"),
        ("banker", "stand"),
    ]
    assert (verdict.punter_total, verdict.banker_total) == (3, 9)


# ---------------------------------------------------------------- naturals


@pytest.mark.parametrize(
    ("punter", "banker", "natural", "totals", "outcome"),
    [
        (["KH", "8H"], ["KS", "5S"], "punter", (8, 5), Outcome.PUNTER),
        (["4H", "5H"], ["KS", "5S"], "punter", (9, 5), Outcome.PUNTER),
        (["KH", "3H"], ["4S", "4D"], "banker", (3, 8), Outcome.BANKER),
        (["KH", "6H"], ["9S", "KD"], "banker", (6, 9), Outcome.BANKER),
        # punter checked first, even when the banker's natural beats it
        (["KH", "8H"], ["9S", "KD"], "punter", (8, 9), Outcome.BANKER),
        (["9H", "KH"], ["9S", "KD"], "punter", (9, 9), Outcome.TIE),
        (["4H", "4C"], ["8S", "KD"], "punter", (8, 8), Outcome.TIE),
    ],
)
def test_naturals(punter, banker, natural, totals, outcome):
    verdict = evaluate(punter, banker)
    assert verdict.natural == natural
    assert (verdict.punter_total, verdict.banker_total) == totals
    assert verdict.outcome is outcome
    assert verdict.findings == ()
    assert (verdict.punter_third, verdict.punter_choice, verdict.banker_choice) == (
        None,
        None,
        None,
    )


def test_banker_natural_stops_the_punters_third_card():
    # The punter at 3 must draw, but the banker's 8 ends the coup first.
    verdict = evaluate(["KH", "3H"], ["4S", "4D"])
    assert verdict.natural == "banker"
    assert verdict.findings == ()


@pytest.mark.parametrize(
    ("punter", "banker", "side", "natural", "totals", "outcome"),
    [
        # a third card to the punter after the banker's natural: the 6 would
        # make 9 and win; it does not count.
        (["KH", "3H", "6C"], ["4S", "4D"], "punter", "banker", (3, 8), Outcome.BANKER),
        # a third card to the banker after the punter's natural: 7 + 2 = 9 would
        # beat the 8; it does not count.
        (["KH", "8H"], ["5S", "2D", "2C"], "banker", "punter", (8, 7), Outcome.PUNTER),
        # the natural side itself drew
        (["KH", "9H", "AC"], ["5S", "2D"], "punter", "punter", (9, 7), Outcome.PUNTER),
    ],
)
def test_draw_after_natural(punter, banker, side, natural, totals, outcome):
    verdict = evaluate(punter, banker)
    (finding,) = verdict.findings
    assert (finding.code, finding.severity, finding.side) == (
        "draw_after_natural",
        "warning",
        side,
    )
    third = (punter if side == "punter" else banker)[2]
    assert dict(finding.detail) == {"natural": natural, "card": third}
    assert third in finding.message
    assert verdict.natural == natural
    assert (verdict.punter_total, verdict.banker_total) == totals
    assert verdict.outcome is outcome
    assert verdict.punter_third is None


def test_draw_after_natural_on_both_sides():
    verdict = evaluate(["KH", "8H", "AC"], ["5S", "2D", "2C"])
    assert [(f.code, f.side) for f in verdict.findings] == [
        ("draw_after_natural", "punter"),
        ("draw_after_natural", "banker"),
    ]
    assert (verdict.punter_total, verdict.banker_total) == (8, 7)


# ---------------------------------------------------------------- outcome


@pytest.mark.parametrize(
    ("punter", "banker", "totals", "outcome"),
    [
        (["KH", "6H"], ["KS", "6S"], (6, 6), Outcome.TIE),
        (["KH", "7H"], ["3S", "4S"], (7, 7), Outcome.TIE),
        (["KH", "AH", "5D"], ["KS", "4S", "2C"], (6, 6), Outcome.TIE),
        (["KH", "AH", "5D"], ["KS", "4S", "3C"], (6, 7), Outcome.BANKER),
        (["KH", "AH", "7D"], ["KS", "4S", "3C"], (8, 7), Outcome.PUNTER),
        (["KH", "QH", "KD"], ["KS", "JS", "TC"], (0, 0), Outcome.TIE),
    ],
)
def test_outcome_compares_the_totals_that_count(punter, banker, totals, outcome):
    verdict = evaluate(punter, banker)
    assert (verdict.punter_total, verdict.banker_total) == totals
    assert verdict.outcome is outcome
    assert verdict.findings == ()


def test_verdict_to_dict_is_json():
    verdict = evaluate(["5h", "10d", "6S"], ["2s", "3c"])
    data = json.loads(json.dumps(verdict.to_dict()))
    assert data == {
        "punter": ["5H", "TD", "6S"],
        "banker": ["2S", "3C"],
        "punter_total": 1,
        "banker_total": 5,
        "outcome": "banker",
        "natural": None,
        "punter_third": 6,
        "punter_choice": "draw",
        "banker_choice": None,
        "tableau_version": "chemmy-standard-1",
        "findings": [
            {
                "code": "false_draw",
                "severity": "warning",
                "side": "banker",
                "punter_total": 5,
                "banker_total": 5,
                "punter_third": 6,
                "required": "draw",
                "actual": "stand",
                "message": (
                    "Banker stood on 5 against a 6: the tableau requires a draw."
                ),
            }
        ],
    }


def test_verdict_and_finding_are_frozen():
    verdict = evaluate(["KH", "3H"], ["KS", "7S", "2C"])
    with pytest.raises(AttributeError):
        verdict.outcome = Outcome.PUNTER  # type: ignore[misc]
    with pytest.raises(TypeError):
        verdict.findings[0].detail["required"] = "stand"  # type: ignore[index]
    assert isinstance(verdict, Verdict)


def test_verdict_survives_json_pickle_and_deepcopy():
    verdict = evaluate(["KH", "3H"], ["KS", "7S", "2C"])
    detail = verdict.findings[0].detail
    assert json.loads(json.dumps(detail)) == dict(detail)  # a JSONField takes it
    for again in (pickle.loads(pickle.dumps(verdict)), copy.deepcopy(verdict)):
        assert again == verdict
        with pytest.raises(TypeError):
            again.findings[1].detail.update(actual="stand")  # type: ignore[attr-defined]


def test_finding_checks_its_code_and_severity():
    f = Finding("bank_mismatch", "critical", "banker", {"declared_bank": "1"}, "m")
    assert f.to_dict() == {
        "code": "bank_mismatch",
        "severity": "critical",
        "side": "banker",
        "declared_bank": "1",
        "message": "m",
    }
    with pytest.raises(ValueError, match="code"):
        Finding("nonsense", "warning", None, {}, "m")
    with pytest.raises(ValueError, match="severity"):
        Finding("false_draw", "critical", "punter", {}, "m")
    with pytest.raises(ValueError, match="side"):
        Finding("false_draw", "warning", "croupier", {}, "m")
    with pytest.raises(ValueError, match="reserved"):
        Finding("false_draw", "warning", "punter", {"message": "x"}, "m")


# ---------------------------------------------------------------- properties


def deal(shoe: list[str], choices: list[bool], flip: str | None = None):
    """Deal one coup by docs/rules.md from ``shoe`` (independently of the engine).

    ``choices`` settle the optional cells; ``flip`` names a side whose
    mandatory decision is reversed. Returns (punter, banker, flipped).
    """
    cards = iter(shoe)
    punter, banker = [next(cards), next(cards)], [next(cards), next(cards)]
    punter[1], banker[0] = banker[0], punter[1]  # P1 B1 P2 B2: order of the deal
    p2 = sum(PTS[c[0]] for c in punter) % 10
    b2 = sum(PTS[c[0]] for c in banker) % 10
    if p2 >= 8 or b2 >= 8:
        return punter, banker, False
    flipped = False
    rule = PUNTER_RULE[p2]
    draw = choices[0] if rule == "O" else rule == "D"
    if flip == "punter" and rule != "O":
        draw, flipped = not draw, True
    if draw:
        punter.append(next(cards))
    third = PTS[punter[2][0]] if len(punter) == 3 else None
    rule = TABLE[b2, third]
    draw = choices[1] if rule == "O" else rule == "D"
    if flip == "banker" and rule != "O":
        draw, flipped = not draw, True
    if draw:
        banker.append(next(cards))
    return punter, banker, flipped


SHOES = st.lists(st.sampled_from(ALL_CODES), min_size=6, max_size=6)
CHOICES = st.lists(st.booleans(), min_size=2, max_size=2)


@given(shoe=SHOES, choices=CHOICES)
def test_a_coup_dealt_by_the_rules_has_no_finding(shoe, choices):
    punter, banker, _ = deal(shoe, choices)
    verdict = evaluate(punter, banker)
    assert verdict.findings == ()
    p = sum(PTS[c[0]] for c in punter) % 10
    b = sum(PTS[c[0]] for c in banker) % 10
    assert (verdict.punter_total, verdict.banker_total) == (p, b)
    assert verdict.outcome is (
        Outcome.PUNTER if p > b else Outcome.BANKER if b > p else Outcome.TIE
    )


@given(shoe=SHOES, choices=CHOICES, side=st.sampled_from(["punter", "banker"]))
def test_flipping_one_mandatory_decision_gives_exactly_one_false_draw(
    shoe, choices, side
):
    punter, banker, flipped = deal(shoe, choices, flip=side)
    assume(flipped)
    verdict = evaluate(punter, banker)
    (finding,) = verdict.findings
    assert finding.code == "false_draw"
    assert finding.side == side
    hand = punter if side == "punter" else banker
    assert finding.detail["actual"] == ("draw" if len(hand) == 3 else "stand")
    assert finding.detail["required"] != finding.detail["actual"]
