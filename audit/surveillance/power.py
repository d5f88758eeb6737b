"""How soon a croupier who false-draws more than the floor is found: the
power of the detector's croupier test, from the floor's own figures (issue
27).

The detector tests each croupier's false draws against the rest of the
floor (one-sided Fisher exact test, ``stats.fisher_greater``) and decides
over all the run's p-values at once (Benjamini-Hochberg at q over m tests).
A croupier alone in being wrong is an alert when his p-value is at most
q / m (BH's first step; another true alert only lowers the bar), so for a
croupier who dealt n of the floor's N coups at ``factor`` times the floor's
rate R, compared with the floor's N other coups:

    k* = the least count k whose Fisher p-value (his k of n against the
         floor's k + R N of N + n) is <= q / m;
    power(n) = P(Bin(n, factor x R) >= k*), exact.

``coups_for(power)`` is the least n from which the power stays at or above
the target (it is not monotone in n: the counts are whole numbers).
Everything here reads the floor: its rate, its coups, the run's tests and
false discovery rate, so a floor at 0.3 % is told a longer wait than one at
0.5 %. tests/surveillance/test_power.py reproduces the figures by running
the detector on simulated floors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

FACTORS = (2.0, 3.0, 5.0)  # the page's rows; 3x is the pattern
TARGET = 0.9
MAX_COUPS = 2_000_000


@dataclass(frozen=True)
class Floor:
    rate: float  # the floor's false-draw rate (false draws / coups)
    coups: int  # the floor's other coups in the period (N): his comparison
    tests: int  # the p-values of the run (m, BH's denominator)
    fdr: float  # q

    @property
    def alpha(self) -> float:
        return self.fdr / max(self.tests, 1)


def critical_count(floor: Floor, n) -> np.ndarray:
    """k*: the least false-draw count that makes a croupier with n coups an
    alert (vectorised over n; n + 1 when none does)."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    big_n = floor.coups + n
    rest = np.int64(round(floor.rate * floor.coups))
    lo = np.zeros_like(n)  # p(lo) > alpha (k = 0 never alerts)
    hi = n + 1  # p(n + 1) treated as 0
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        p = stats.hypergeom.sf(mid - 1, big_n, mid + rest, n)
        ok = p <= floor.alpha
        hi = np.where(ok & (hi - lo > 1), mid, hi)
        lo = np.where(~ok & (hi - lo > 1), mid, lo)
    return hi


def power(floor: Floor, n, factor: float = 3.0) -> np.ndarray:
    """P(a croupier at ``factor`` x the floor's rate over n coups is an
    alert), vectorised over n."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    k = critical_count(floor, n)
    p = min(1.0, factor * floor.rate)
    return np.where(k <= n, stats.binom.sf(k - 1, n, p), 0.0)


def coups_for(floor: Floor, factor: float = 3.0, target: float = TARGET,
              limit: int = MAX_COUPS) -> int | None:
    """The least n from which the power stays >= target (None: not within
    ``limit`` coups, or the floor has no false draw to compare with)."""
    if floor.rate <= 0 or floor.coups <= 0 or factor * floor.rate >= 1:
        return None
    # a coarse geometric grid finds the region, then every n in it
    grid = np.unique(np.geomspace(10, limit, 400).astype(np.int64))
    good = power(floor, grid, factor) >= target
    if not good[-1]:
        return None
    bad = np.flatnonzero(~good)
    if not len(bad):
        return int(grid[0])
    lo, hi = int(grid[bad[-1]]), int(grid[bad[-1] + 1])
    fine = np.arange(lo, hi + 1)
    good = power(floor, fine, factor) >= target
    bad = np.flatnonzero(~good)
    return int(fine[bad[-1] + 1])


def table(floor: Floor, factors=FACTORS, target: float = TARGET) -> dict:
    """The page's statement: for each factor, the coups within which such a
    croupier is found with the target probability."""
    return {
        "floor_rate": floor.rate, "coups": floor.coups, "tests": floor.tests,
        "fdr": floor.fdr, "target": target,
        "rows": [{"factor": f, "coups": coups_for(floor, f, target)}
                 for f in factors],
    }
