"""A floor's mix of free choices (issue 27): ``house_odds(..., mix=...)``
plays each free cell as a mixed strategy. Checked against an enumeration
written here from docs/rules.md alone (ordered cards dealt one by one, each
with its chance given the cards left; the mixed choices as chances), not
the module's code path."""

from __future__ import annotations

from fractions import Fraction
from math import lcm

import pytest

from tables.chemmy.odds import compute_odds, house_odds

# docs/rules.md, "The banker's tableau": stood, then the punter's third 0..9
RULE_BOOK = {
    0: "DDDDDDDDDDD", 1: "DDDDDDDDDDD", 2: "DDDDDDDDDDD", 3: "DDDDDDDDDSO",
    4: "DSSDDDDDDSS", 5: "DSSSSODDDSS", 6: "SSSSSSSDDSS", 7: "SSSSSSSSSSS",
}


def by_hand(decks: int, five: Fraction,
            banker: dict[str, Fraction]) -> tuple[Fraction, ...]:
    """P(banker), P(punter), P(tie): every ordered deal of point values,
    the chance of each card the number of its value left over the cards
    left; at the punter's 5 he draws with chance ``five``, at an "O" cell
    the banker draws with chance banker["total/third"] (absent: draws)."""
    left = [16 * decks] + [4 * decks] * 9
    size = 52 * decks
    # one common denominator: the chances become integers
    unit = lcm(five.denominator, *(f.denominator for f in banker.values()))
    out = [0, 0, 0]  # banker, punter, tie, over size^(6) * unit^2 below

    def share(cell: str, column: str) -> int:
        action = RULE_BOOK[int(cell.split("/")[0])]["s0123456789".index(column)]
        if action == "D":
            return unit
        if action == "S":
            return 0
        return int(banker.get(cell, Fraction(1)) * unit)

    def settle(bt: int, pt: int, weight: int) -> None:
        out[0 if bt > pt else 1 if pt > bt else 2] += weight

    def take(v: int) -> int:
        n = left[v]
        left[v] -= 1
        return n

    for p1 in range(10):
        w1 = take(p1)
        for b1 in range(10):
            w2 = w1 * take(b1)
            for p2 in range(10):
                w3 = w2 * take(p2)
                for b2 in range(10):
                    w4 = w3 * take(b2)
                    if w4:
                        _after_four(p1 + p2, b1 + b2, w4, size, five, unit,
                                    left, share, settle, take)
                    left[b2] += 1
                left[p2] += 1
            left[b1] += 1
        left[p1] += 1
    scale = _falling(size, 6) * unit * unit
    return tuple(Fraction(x, scale) for x in out)  # type: ignore[return-value]


def _falling(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= n - i
    return out


def _after_four(p, b, w4, size, five, unit, left, share, settle, take):
    pt, bt = p % 10, b % 10
    # a coup that ends after k cards: the 6 - k cards after it, any of them
    rest = {4: _falling(size - 4, 2), 5: size - 5, 6: 1}
    if pt >= 8 or bt >= 8:
        settle(bt, pt, w4 * rest[4] * unit * unit)
        return
    draw = unit if pt <= 4 else int(five * unit) if pt == 5 else 0
    if unit - draw:  # the punter stands
        w = w4 * (unit - draw)
        d = share(f"{bt}/stood", "s")
        if unit - d:
            settle(bt, pt, w * (unit - d) * rest[4])
        if d:
            for v in range(10):
                n = take(v)
                settle((bt + v) % 10, pt, w * d * n * rest[5])
                left[v] += 1
    if draw:
        for v in range(10):
            n = take(v)
            if n:
                w = w4 * draw * n
                pf = (pt + v) % 10
                d = share(f"{bt}/{v}", str(v))
                if unit - d:
                    settle(bt, pf, w * (unit - d) * rest[5])
                if d:
                    for u in range(10):
                        m = take(u)
                        settle((bt + u) % 10, pf, w * d * m)
                        left[u] += 1
            left[v] += 1


@pytest.mark.parametrize(("decks", "five", "banker"), [
    # a floor that stands often
    (6, Fraction(2, 5), {"3/9": Fraction(3, 4), "5/4": Fraction(1, 3)}),
    # punters who draw, bankers who stand at 3/9
    (8, Fraction(9, 10), {"3/9": Fraction(1, 7)}),
])
def test_the_mixed_strategy_is_the_exact_enumeration(decks, five, banker):
    got = house_odds(decks=decks, mix={"punter": five, **banker})
    want = by_hand(decks, five, banker)
    assert (got.p_banker, got.p_punter, got.p_tie) == want
    assert sum(want) == 1


def test_the_hand_enumeration_gives_the_pure_strategies():
    """The reference itself against the pure strategies (published counts
    for punto banco are tested in tests/reports): stand on 5 is 0.46171."""
    stand = compute_odds(decks=6, punter_draws_on_5=False)
    assert by_hand(6, Fraction(0), {})[0] == stand.p_banker
    assert round(float(stand.p_banker), 5) == 0.46171


def test_a_mix_lies_between_its_pure_strategies_linearly():
    draw = house_odds(decks=6)
    stand = house_odds(decks=6, punter_five="stand")
    mixed = house_odds(decks=6, mix={"punter": Fraction(1, 4)})
    quarter = Fraction(1, 4)
    assert mixed.p_banker == quarter * draw.p_banker + (1 - quarter) * stand.p_banker
    assert dict(mixed.mix) == {"punter": "1/4"}


def test_a_prescribed_cell_keeps_its_prescription_whatever_the_mix():
    fixed = house_odds(decks=6, punter_five="stand", banker_prescriptions={
        "3/9": "draw"})
    assert house_odds(decks=6, punter_five="stand",
                      banker_prescriptions={"3/9": "draw"},
                      mix={"punter": Fraction(1, 2), "3/9": 0},
                      ).p_banker == fixed.p_banker


@pytest.mark.parametrize("mix", [{"punter": 2}, {"punter": "x"}, {"9/9": 1},
                                 {"3/9": Fraction(-1, 2)}])
def test_a_bad_mix_is_refused_by_name(mix):
    with pytest.raises(ValueError, match="mix"):
        house_odds(decks=6, mix=mix)
