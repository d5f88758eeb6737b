"""One look of the live surveillance at a shift so far (issue 38): each
family's tallies in, the subjects whose always-valid test crossed out.

The live path (``audit/surveillance/live.py``: the tallies by SQL, the flags)
and the calibration (``bench/calibrate.py``: simulated shifts) both call
``look``, so what is calibrated is what runs. Pure numpy, no Django.

Families and their tests (``sequential``):

- ``croupier``: false draws of the coups he dealt, against the floor's rate
  (one group; q = the floor's reference rate);
- ``banker``: banker wins against each coup's exact odds (groups: coups of
  the same banker-win probability -- one house's rules at the floor's mix);
- ``table``: banker wins at the table against the odds, either way.

The per-shift false-alarm budget ``alpha`` is split evenly over the three
families, then over each family's budgeted subjects (``shift_levels``): the
share of shifts with any live alert is at most ``alpha`` as long as no
family has more subjects than budgeted (``look`` says when it does, so the
page can say the bound was exceeded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sequential import BANKER, CROUPIER, TABLE, Design, evaluate, subject_level

__all__ = ["FAMILIES", "Tally", "LiveAlert", "shift_levels", "look"]

FAMILIES: dict[str, Design] = {"croupier": CROUPIER, "banker": BANKER,
                               "table": TABLE}


@dataclass(frozen=True, eq=False)
class Tally:
    """One family's counts at one look: S subjects, G groups of coups."""

    subjects: tuple[str, ...]
    n: np.ndarray  # (S, G) coups
    x: np.ndarray  # (S, G) events (false draws; banker wins)
    q: np.ndarray  # (S, G) or (G,): each group's null probability

    def __post_init__(self) -> None:
        n, x = np.atleast_2d(self.n), np.atleast_2d(self.x)
        if n.shape != x.shape or n.shape[0] != len(self.subjects):
            raise ValueError(f"tally shapes differ: {len(self.subjects)} subjects, "
                             f"n {n.shape}, x {x.shape}")


@dataclass(frozen=True)
class LiveAlert:
    family: str
    test: str
    subject: str
    events: int
    coups: int
    expected: float
    p_value: float  # always-valid: "by chance about once in 1/p shifts"
    log_lambda: float
    level: float


def shift_levels(alpha: float, budget: dict[str, int]) -> dict[str, float]:
    """Each family's per-subject level: ``alpha`` split evenly over the
    families of ``budget``, then over its budgeted subjects."""
    if not budget:
        raise ValueError("no family to watch")
    per_family = alpha / len(budget)
    return {family: subject_level(per_family, subjects)
            for family, subjects in budget.items()}


def look(tallies: dict[str, Tally], levels: dict[str, float]) -> list[LiveAlert]:
    """The subjects whose test has crossed its level at this look."""
    alerts: list[LiveAlert] = []
    for family, tally in tallies.items():
        if not tally.subjects:
            continue
        design = FAMILIES[family]
        result = evaluate(design, tally.n, tally.x, tally.q, level=levels[family])
        for i in np.flatnonzero(result.crossed):
            alerts.append(LiveAlert(
                family=family, test=design.name, subject=tally.subjects[i],
                events=int(result.events[i]), coups=int(result.coups[i]),
                expected=float(result.expected[i]),
                p_value=float(result.p_value[i]),
                log_lambda=float(result.log_lambda[i]), level=levels[family]))
    return alerts
