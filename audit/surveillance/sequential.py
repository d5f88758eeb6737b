"""Always-valid sequential tests for the live surveillance (issue 38).

During a gaming day the surveillance looks again and again (every tick of
beat, every shoe's close) at the same croupiers, bankers and tables. A
fixed-sample test looked at that way raises false alarms far above its level.
These tests do not: each is a **mixture sequential probability ratio test**
(Robbins 1970; Johari, Pekelis & Walsh 2017), whose statistic Lambda is a
non-negative martingale with mean 1 under the null hypothesis, so by Ville's
inequality

    P(Lambda ever reaches 1/a during the shift) <= a

however often, and at whatever data-dependent moments, it is looked at. Its
always-valid p-value, ``min(1, 1 / max Lambda so far)``, is what the words
say: "this happens by chance about once in 1/p shifts".

The model, one subject (a croupier, a banker, a table) over the shift: coups
in groups g (a group: coups of the same null probability -- the floor's
false-draw rate; a banker-win probability of one house's rules at the floor's
mix), n_g coups of which x_g "events" (a false draw; a banker win), each an
independent Bernoulli(q_g) under the null. The alternative tilts every
group's log-odds by the same theta (an odds ratio rho = e^theta):

    p_g(theta) = q_g e^theta / (1 - q_g + q_g e^theta)
    log LR(theta) = sum_g [x_g theta - n_g log(1 - q_g + q_g e^theta)]

and Lambda = sum_k w_k LR(theta_k) over a fixed grid of odds ratios with
weights summing to 1 (a mixture of martingales is a martingale). The
statistic depends only on the counts, so a tick needs only each subject's
(n_g, x_g) so far, a GROUP BY -- no stored state between looks (looking
only at ticks, not after every coup, keeps Ville's bound: it holds at any
stopping time).

Several subjects are watched at once: with a level a_e per subject the share
of shifts with any false alarm in a family is at most sum_e a_e (the union
bound), so ``subject_level(alpha, subjects)`` splits a family's per-shift
budget alpha evenly over the number of subjects budgeted for.

Pure numpy: no Django, no database.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Design", "CROUPIER", "BANKER", "TABLE", "log_lambda", "evaluate",
           "subject_level", "Look"]


@dataclass(frozen=True)
class Design:
    """A mixture SPRT: the odds ratios of its alternatives, equally weighted.
    Ratios > 1 look for a rise of the rate, < 1 for a fall; both, either."""

    name: str
    odds_ratios: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.odds_ratios or any(r <= 0 or r == 1 for r in self.odds_ratios):
            raise ValueError("odds ratios must be positive and not 1: "
                             f"{self.odds_ratios!r}")

    @property
    def thetas(self) -> np.ndarray:
        return np.log(np.asarray(self.odds_ratios, dtype=float))

    @property
    def log_weights(self) -> np.ndarray:
        k = len(self.odds_ratios)
        return np.full(k, -np.log(k))


# A croupier's false draws above the floor's rate: 1.5x to 10x.
CROUPIER = Design("croupier_false_draws", (1.5, 2.0, 3.0, 4.0, 6.0, 10.0))
# A banker winning more coups than the odds give (0.46 -> 0.52 is an odds
# ratio of 1.27).
BANKER = Design("banker_wins", (1.1, 1.2, 1.3, 1.5, 2.0))
# A table's banker-win share away from the odds, either way (0.46 -> 0.42 is
# an odds ratio of 0.85).
TABLE = Design("table_banker_share",
               (1 / 1.5, 1 / 1.3, 1 / 1.2, 1 / 1.1, 1.1, 1.2, 1.3, 1.5))


def log_lambda(design: Design, n, x, q) -> np.ndarray:
    """log Lambda of each subject: ``n``, ``x``, ``q`` of shape (subjects,
    groups) -- coups, events and the null probability of each group (pad
    unused groups with n = x = 0). Returns shape (subjects,)."""
    n, x, q = _counts(n, x, q)
    theta = design.thetas[:, None, None]  # (k, 1, 1)
    # log(1 - q + q e^theta), stable for small q: log1p(q (e^theta - 1))
    cumulant = np.log1p(q[None] * np.expm1(theta))  # (k, s, g)
    log_lr = (x[None] * theta - n[None] * cumulant).sum(axis=2)  # (k, s)
    top = log_lr.max(axis=0)
    return top + np.log(np.exp(log_lr - top + design.log_weights[:, None]).sum(axis=0))


def _counts(n, x, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, x, q) as float arrays of one shape (subjects, groups), or a
    ValueError naming what is wrong."""
    n = np.atleast_2d(np.asarray(n, dtype=float))
    x = np.atleast_2d(np.asarray(x, dtype=float))
    if n.ndim != 2 or n.shape != x.shape:
        raise ValueError(f"coups and events must have one shape (subjects, groups):"
                         f" coups {n.shape}, events {x.shape}")
    q = np.atleast_2d(np.asarray(q, dtype=float))
    try:
        q = np.broadcast_to(q, n.shape)
    except ValueError:
        raise ValueError(f"null probabilities {q.shape} do not fit the coups"
                         f" {n.shape}") from None
    for name, a in (("coups", n), ("events", x), ("null probabilities", q)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite numbers")
    if np.any(n < 0):
        raise ValueError("coups must not be negative")
    if np.any(x > n) or np.any(x < 0):
        raise ValueError("events must be between 0 and the coups")
    if np.any((q <= 0) | (q >= 1)):
        raise ValueError("null probabilities must lie strictly between 0 and 1")
    return n, x, q


def subject_level(alpha: float, subjects: int) -> float:
    """Each subject's level when a family's per-shift false-alarm budget
    ``alpha`` is split over ``subjects`` (the union bound)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, not {alpha!r}")
    if int(subjects) != subjects or subjects < 0:
        raise ValueError(f"subjects must be a whole number >= 0, not {subjects!r}")
    return alpha / max(1, int(subjects))


@dataclass(frozen=True)
class Look:
    """One look at the subjects: Lambda, the always-valid p-value (from the
    largest Lambda of this look and ``previous``), whether it crossed 1/a,
    and what the null expects."""

    log_lambda: np.ndarray
    p_value: np.ndarray
    crossed: np.ndarray
    events: np.ndarray
    coups: np.ndarray
    expected: np.ndarray


def evaluate(design: Design, n, x, q, *, level: float,
             previous_max_log_lambda=None) -> Look:
    """Evaluate every subject at one look. ``previous_max_log_lambda`` (per
    subject, optional) carries the largest log Lambda of earlier looks into
    the p-value; a look alone gives the p-value of the looks it has seen."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, not {level!r}")
    n2, x2, q2 = _counts(n, x, q)
    ll = log_lambda(design, n2, x2, q2)
    best = ll if previous_max_log_lambda is None else np.maximum(
        ll, np.asarray(previous_max_log_lambda, dtype=float))
    p = np.minimum(1.0, np.exp(-best))
    return Look(log_lambda=ll, p_value=p, crossed=ll >= -np.log(level),
                events=x2.sum(axis=1), coups=n2.sum(axis=1),
                expected=(n2 * q2).sum(axis=1))
