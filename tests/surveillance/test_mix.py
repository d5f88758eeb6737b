"""The floor's mix of free choices (mix.py): counted only where the cell was
free under the coup's own house rules, and the odds it gives (no database)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from audit.reports.odds import house_odds
from audit.surveillance import collect
from audit.surveillance.mix import DRAW, NONE, STAND, floor_mix, mixed_probabilities


def test_the_mix_counts_free_cells_only():
    cell_39, cell_54 = 3 * 11 + 10, 5 * 11 + 5
    m = floor_mix(
        punter_choice=[DRAW, STAND, STAND, NONE, DRAW, STAND],
        banker_choice=[NONE, DRAW, NONE, STAND, DRAW, DRAW],
        banker_cell=[-1, cell_39, -1, cell_39, cell_54, cell_39],
        # the last coup's table prescribes both its cells: not the floor's
        punter_free=[True, True, True, True, True, False],
        banker_free=[True, True, True, True, True, False])
    assert m.counts == {"punter": (2, 2), "3/9": (1, 1), "5/4": (1, 0)}
    assert m.shares() == {"punter": Fraction(1, 2), "3/9": Fraction(1, 2),
                          "5/4": Fraction(1)}
    assert [r["cell"] for r in m.as_rows()] == ["punter", "3/9", "5/4"]
    got = mixed_probabilities(decks=6, mix=m)
    want = house_odds(decks=6, mix=m.shares())
    assert got == pytest.approx((float(want.p_banker), float(want.p_punter),
                                 float(want.p_tie)), abs=1e-15)
    # a house that prescribes standing on 5 keeps its prescription
    stand = house_odds(decks=6, punter_five="stand", mix={"3/9": Fraction(1, 2),
                                                          "5/4": 1})
    assert mixed_probabilities(decks=6, punter_five="stand", mix=m)[0] == \
        pytest.approx(float(stand.p_banker), abs=1e-15)


def test_no_choice_seen_is_the_old_default():
    m = floor_mix(punter_choice=np.zeros(3, int), banker_choice=np.zeros(3, int),
                  banker_cell=np.full(3, -1), punter_free=np.ones(3, bool),
                  banker_free=np.ones(3, bool))
    assert m.counts == {} and m.shares() == {}
    assert mixed_probabilities(decks=6, mix=m)[0] == float(
        house_odds(decks=6).p_banker)


def test_which_cells_a_house_leaves_free():
    plays = [(6, "chemmy-standard-1", "free", ()),
             (6, "chemmy-standard-1", "stand", (("3/9", "draw"), ("5/4", "free")))]
    punter, prescribed = collect._free_cells(plays)
    assert punter.tolist() == [True, False]
    assert not prescribed[0].any()
    assert np.flatnonzero(prescribed[1]).tolist() == [3 * 11 + 10]
