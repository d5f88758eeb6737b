"""The floor's mix of free choices, and the exact odds it gives (issue 27).

A house rule may leave a choice free (the punter's 5, the banker's optional
cells of the tableau); every coup records what was chosen there
(``Coup.punter_choice``, ``Coup.banker_choice``; the banker's cell follows
from his two cards and the punter's third). The odds of a coup are those of
the play the floor actually follows: each free cell drawn at the share of
draws observed at that cell over the same period and floor, a mixed
strategy, enumerated exactly (``odds.house_odds(..., mix=...)``). A cell the
house prescribes is played as prescribed; a free cell at which no choice was
seen in the period is drawn (the odds' default: nothing to go on).

Pure: numpy and the project's odds, no database (collect.py fills the
arrays from the coups; the honest generators from their deals).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from audit.reports.odds import house_odds
from tables.chemmy.house import cell_key
from tables.chemmy.tableau import COLUMNS, STANDARD_TABLEAU, Tableau

PUNTER = "punter"  # the punter's 5, in a mix
NONE, DRAW, STAND = 0, 1, 2  # a coup's choice at its free cell, as a code
CHOICE = {"": NONE, "draw": DRAW, "stand": STAND}


def cell_name(index: int) -> str:
    """A banker cell's index in the tableau (total x 11 + column) as the
    house rules name it ("3/9", "5/stood")."""
    total, col = divmod(int(index), COLUMNS)
    return cell_key(total, None if col == 0 else col - 1)


@dataclass(frozen=True)
class ChoiceMix:
    """Draws and stands seen at each free cell ("punter" for the punter's 5,
    "3/9"... for the banker's), over the coups where the cell was free."""

    counts: dict[str, tuple[int, int]]

    def shares(self) -> dict[str, Fraction]:
        """Each cell's share of draws, exact (cells seen at least once)."""
        return {cell: Fraction(d, d + s) for cell, (d, s) in
                sorted(self.counts.items()) if d + s}

    def key(self) -> tuple:
        return tuple(sorted(self.counts.items()))

    def as_rows(self) -> list[dict]:
        """For the page: each cell, its draws and stands, the share."""
        out = []
        for cell, (d, s) in sorted(self.counts.items(),
                                   key=lambda kv: (kv[0] != PUNTER, kv[0])):
            out.append({"cell": cell, "draws": d, "stands": s,
                        "share": d / (d + s) if d + s else None})
        return out


def floor_mix(*, punter_choice, banker_choice, banker_cell, punter_free,
              banker_free) -> ChoiceMix:
    """The mix of one floor over one period. Per coup: the punter's choice
    at 5 and the banker's at an optional cell (codes NONE, DRAW, STAND), the
    banker's cell index (total x 11 + column; any value where he had no
    choice), and whether each of those cells was free under the coup's own
    house rules (a prescribed cell's choices are the house's, not the
    floor's)."""
    pc = np.asarray(punter_choice)
    bc = np.asarray(banker_choice)
    cell = np.asarray(banker_cell)
    counts: dict[str, tuple[int, int]] = {}
    seen = (pc != NONE) & np.asarray(punter_free, dtype=bool)
    if seen.any():
        counts[PUNTER] = (int((pc[seen] == DRAW).sum()),
                          int((pc[seen] == STAND).sum()))
    seen = (bc != NONE) & np.asarray(banker_free, dtype=bool)
    if seen.any():
        idx, codes = np.unique(cell[seen], return_inverse=True)
        codes = codes.ravel()
        draws = np.bincount(codes, bc[seen] == DRAW, len(idx))
        stands = np.bincount(codes, bc[seen] == STAND, len(idx))
        for i, c in enumerate(idx.tolist()):
            counts[cell_name(c)] = (int(draws[i]), int(stands[i]))
    return ChoiceMix(counts)


def mixed_probabilities(*, decks: int, tableau: Tableau = STANDARD_TABLEAU,
                        punter_five: str = "free",
                        banker_prescriptions: dict | None = None,
                        mix: ChoiceMix | None = None) -> tuple[float, float, float]:
    """(P banker, P punter, P tie) of a house's play with its free cells at
    the floor's mix: exact fractions (odds.house_odds) as floats, cached per
    process by play and mix (a bounded cache: each period has its mix)."""
    return _probabilities(decks, tableau, punter_five,
                          tuple(sorted((banker_prescriptions or {}).items())),
                          mix.key() if mix else ())


@lru_cache(maxsize=512)
def _probabilities(decks: int, tableau: Tableau, punter_five: str, cells: tuple,
                   mix_key: tuple) -> tuple[float, float, float]:
    shares = ChoiceMix(dict(mix_key)).shares()
    odds = house_odds(decks=decks, tableau=tableau, punter_five=punter_five,
                      banker_prescriptions=dict(cells), mix=shares or None)
    return float(odds.p_banker), float(odds.p_punter), float(odds.p_tie)
