"""The statistics of surveillance, vectorised over subjects (numpy arrays in,
numpy arrays out). Distributions come from scipy.stats, intervals and the
false-discovery control from statsmodels; the exact odds are the project's
(``audit.reports.odds``), never written here.

Each p-value here is *valid* (super-uniform: P(p <= a) <= a when nothing is
wrong), because the Benjamini-Hochberg control of ``detect`` is only as good
as the p-values it is given. Where a test is conservative rather than exact,
its docstring says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import sparse, stats
from scipy.sparse.linalg import spsolve
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

# ---------------------------------------------------------------- proportions


def wilson(k, n, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for k successes in n trials (statsmodels);
    n == 0 gives (0, 1)."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    safe = np.where(n > 0, n, 1.0)
    lo, hi = proportion_confint(k, safe, alpha=alpha, method="wilson")
    lo = np.where(n > 0, lo, 0.0)
    hi = np.where(n > 0, hi, 1.0)
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def binom_greater(k, n, p0) -> np.ndarray:
    """One-sided binomial test, H1: rate > p0: P(Bin(n, p0) >= k). The same
    figure as ``scipy.stats.binomtest(k, n, p0, alternative="greater")``
    (tested), vectorised. When the n trials have unequal probabilities with
    mean p0 (a Poisson-binomial), this binomial tail is an upper bound for
    k >= n p0 + 1 (Hoeffding 1956), so the p-value stays valid."""
    k = np.asarray(k)
    return np.minimum(1.0, stats.binom.sf(k - 1, n, p0))


def binom_two_sided(k, n, p0) -> np.ndarray:
    """Two-sided binomial test as twice the smaller tail (capped at 1): valid
    for both tails, and with Hoeffding's bound for unequal probabilities."""
    k = np.asarray(k)
    up = stats.binom.sf(k - 1, n, p0)
    down = stats.binom.cdf(k, n, p0)
    return np.minimum(1.0, 2.0 * np.minimum(up, down))


def fisher_greater(k, n, big_k, big_n) -> np.ndarray:
    """One-sided Fisher exact test that a subject's k flagged coups out of n
    are more than its share of the floor's big_k out of big_n (the subject
    included): P(Hypergeom(big_n, big_k, n) >= k). Exact given the margins,
    so it needs no estimate of the floor's rate."""
    k = np.asarray(k)
    return np.minimum(1.0, stats.hypergeom.sf(k - 1, big_n, big_k, n))


def funnel_limits(p0: float, n, levels=(0.95, 0.998)) -> dict[str, np.ndarray]:
    """Control limits of a funnel chart for a rate p0 against the number of
    coups n: the central binomial interval of each level, as rates
    ({"lo95", "hi95", "lo998", "hi998"})."""
    n = np.asarray(n, dtype=float)
    out = {}
    for level in levels:
        tail = (1 - level) / 2
        tag = f"{level * 100:g}".replace(".", "")
        safe = np.maximum(n, 1)
        out[f"lo{tag}"] = stats.binom.ppf(tail, safe, p0) / safe
        out[f"hi{tag}"] = stats.binom.isf(tail, safe, p0) / safe
    return out


# ----------------------------------------------------- sums against a model


def z_test(observed, mean, var, alternative: str = "two-sided"):
    """z = (observed - mean) / sd of a sum of independent terms whose means
    and variances add up to ``mean`` and ``var`` (normal approximation);
    returns (z, p). var == 0 gives z = 0, p = 1."""
    observed = np.asarray(observed, dtype=float)
    mean = np.asarray(mean, dtype=float)
    var = np.asarray(var, dtype=float)
    ok = var > 0
    z = np.where(ok, (observed - mean) / np.sqrt(np.where(ok, var, 1.0)), 0.0)
    if alternative == "greater":
        p = stats.norm.sf(z)
    elif alternative == "less":
        p = stats.norm.cdf(z)
    else:
        p = np.minimum(1.0, 2 * stats.norm.sf(np.abs(z)))
    return z, np.where(ok, p, 1.0)


def banker_money_moments(covered, levy_win, p_banker, p_punter):
    """Per-coup mean and variance of the banker's money: +C - L with
    probability p_banker, -C with p_punter, 0 on a tie."""
    c = np.asarray(covered, dtype=float)
    win = c - np.asarray(levy_win, dtype=float)
    mean = p_banker * win - p_punter * c
    second = p_banker * win * win + p_punter * c * c
    return mean, np.maximum(second - mean * mean, 0.0)


# ----------------------------------------------------- shoe outcome counts


@lru_cache(maxsize=512)
def _multinomial_table(n: int, probs: tuple[float, float, float]) -> np.ndarray:
    """p-value of every (banker, tie) count of n coups: the probability of
    all outcomes no more likely than it (exact multinomial test)."""
    b, t = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    p = n - b - t
    ok = p >= 0
    x = np.stack([b[ok], p[ok], t[ok]], axis=1)
    pmf = stats.multinomial.pmf(x, n, probs)
    order = np.argsort(pmf, kind="stable")
    sorted_pmf = pmf[order]
    cum = np.cumsum(sorted_pmf)
    # ties in probability count wholly (relative tolerance, as scipy does)
    last = np.searchsorted(sorted_pmf, sorted_pmf * (1 + 1e-7), side="right") - 1
    pval_sorted = cum[last]
    pval = np.empty_like(pmf)
    pval[order] = pval_sorted
    table = np.ones((n + 1, n + 1))
    table[b[ok], t[ok]] = np.minimum(pval, 1.0)
    return table


def multinomial_exact(banker, punter, tie, probs) -> np.ndarray:
    """Exact multinomial test of each shoe's (banker, punter, tie) counts
    against its exact probabilities (rows of ``probs``), from scipy's
    multinomial pmf; one table per (n, probabilities), cached."""
    banker = np.asarray(banker, dtype=np.int64)
    tie = np.asarray(tie, dtype=np.int64)
    n = banker + np.asarray(punter, dtype=np.int64) + tie
    probs = np.round(np.asarray(probs, dtype=float), 15)
    out = np.ones(len(n))
    keys = np.column_stack([n, probs])
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.ravel()
    for j, row in enumerate(uniq):
        m = int(row[0])
        if m == 0:
            continue
        pr = row[1:] / row[1:].sum()
        idx = np.flatnonzero(inv == j)
        table = _multinomial_table(m, (float(pr[0]), float(pr[1]), float(pr[2])))
        out[idx] = table[banker[idx], tie[idx]]
    return out


def runs_test(n1, n2, runs):
    """Wald-Wolfowitz runs test (two-sided, normal approximation with the
    continuity correction that statsmodels' runstest_1samp applies below 50
    symbols, applied here at any length: slightly conservative) for sequences of
    n1 and n2 symbols with ``runs`` runs; (z, p). Fewer than 2 of either
    symbol: z = 0, p = 1."""
    n1 = np.asarray(n1, dtype=float)
    n2 = np.asarray(n2, dtype=float)
    runs = np.asarray(runs, dtype=float)
    n = n1 + n2
    ok = (n1 >= 2) & (n2 >= 2)
    nn = np.where(ok, n, 3.0)
    mean = 2 * n1 * n2 / nn + 1
    var = 2 * n1 * n2 * (2 * n1 * n2 - nn) / (nn * nn * (nn - 1))
    ok &= var > 0
    diff = runs - mean
    corr = np.where(diff > 0.5, diff - 0.5, np.where(diff < -0.5, diff + 0.5, 0.0))
    z = np.where(ok, corr / np.sqrt(np.where(ok, var, 1.0)), 0.0)
    p = np.minimum(1.0, 2 * stats.norm.sf(np.abs(z)))
    return z, np.where(ok, p, 1.0)


# ------------------------------------------------------------------ BH


def bh(pvalues, q: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg over all the p-values (statsmodels, fdr_bh):
    (rejected, adjusted p-values). An empty vector gives empty results."""
    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    reject, adj, _, _ = multipletests(p, alpha=q, method="fdr_bh")
    return reject, adj


# ----------------------------------------------------------------- CUSUM


@dataclass(frozen=True)
class BernoulliCusum:
    """One-sided Bernoulli CUSUM for a fall of the banker-win rate from p0 to
    p1 = p0 - delta (Reynolds & Stoumbos 1999), or with ``direction=+1`` for
    a rise to p1 = p0 + delta.

    Each coup adds its log-likelihood ratio log(p1/p0) (a banker win: < 0
    for a fall, > 0 for a rise) or log((1-p1)/(1-p0)) (anything else, of the
    other sign); the statistic is kept >= 0 and alarms when it reaches h.
    The increments are kept as integers on a scale
    of ``resolution`` units per |log(p1/p0)| of the reference p0, so the
    statistic lives on the integers 0..H-1 and its Markov chain is the exact
    law of the statistic actually used: the in-control average run length
    (ARL0, in coups) and the run-length distribution are computed exactly
    from it (Brook & Evans 1972), not approximated. Coups whose own p0
    differs (other house rules) get their own increments on the same scale.
    """

    p0: float
    delta: float
    arl0: float
    resolution: int = 100
    direction: int = -1  # -1: a fall of the rate; +1: a rise

    def __post_init__(self) -> None:
        if self.direction not in (-1, 1):
            raise ValueError(f"direction must be -1 or +1, not {self.direction!r}")

    @property
    def p1(self) -> float:
        return self.p0 + self.direction * self.delta

    @property
    def scale(self) -> float:
        return self.resolution / abs(np.log(self.p1 / self.p0))

    def increments(self, p0) -> tuple[np.ndarray, np.ndarray]:
        """Integer increments (banker win, other) for coups of rate p0."""
        p0 = np.asarray(p0, dtype=float)
        p1 = p0 + self.direction * self.delta
        win = np.rint(self.scale * np.log(p1 / p0)).astype(np.int64)
        other = np.rint(self.scale * np.log((1 - p1) / (1 - p0))).astype(np.int64)
        return win, other

    @property
    def limit(self) -> int:
        """H: the smallest integer limit whose exact ARL0 is >= ``arl0``."""
        win, other = self.increments(self.p0)
        return _limit_for(self.p0, int(win), int(other), float(self.arl0))

    @property
    def h(self) -> float:
        """The limit in log-likelihood units."""
        return self.limit / self.scale

    def arl(self, p: float | None = None, limit: int | None = None) -> float:
        """Exact average run length from 0 when each coup is a banker win
        with probability p (default p0: in control; p1: the shift)."""
        win, other = self.increments(self.p0)
        return _arl(
            self.p0 if p is None else p,
            int(win),
            int(other),
            self.limit if limit is None else limit,
        )

    def false_alarm_probability(self, n: int) -> float:
        """Exact P(the in-control statistic reaches the limit within n
        coups), from the chain."""
        win, other = self.increments(self.p0)
        return _crossed_within(self.p0, int(win), int(other), self.limit, int(n))

    def run(self, banker_win, p0=None) -> np.ndarray:
        """The statistic after each coup of one sequence (integer units;
        alarm where >= ``limit``). S_t = C_t - min(0, min_{s<=t} C_s) with
        C the cumulated increments: the recursion max(0, S + w) without a
        Python loop."""
        x = np.asarray(banker_win, dtype=bool)
        if p0 is None:
            p0 = np.full(len(x), self.p0)
        win, other = self.increments(p0)
        c = np.cumsum(np.where(x, win, other))
        floor = np.minimum(np.minimum.accumulate(c), 0) if len(c) else c
        return c - floor


def _chain(p: float, win: int, other: int, limit: int):
    """Transition matrix among the in-control states 0..limit-1 (a win moves
    by ``win``, anything else by ``other``: one of them < 0, floored at 0;
    a state at or past the limit is the alarm, absorbing, left out)."""
    i = np.arange(limit)
    rows, cols, vals = [], [], []
    for prob, step in ((p, win), (1 - p, other)):
        to = np.maximum(i + step, 0)
        keep = to < limit
        rows.append(i[keep])
        cols.append(to[keep])
        vals.append(np.full(int(keep.sum()), prob))
    return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                              np.concatenate(cols))), shape=(limit, limit))


@lru_cache(maxsize=256)
def _arl(p: float, win: int, other: int, limit: int) -> float:
    q = _chain(p, win, other, limit)
    a = sparse.identity(limit, format="csc") - q.tocsc()
    return float(spsolve(a, np.ones(limit))[0])


@lru_cache(maxsize=64)
def _limit_for(p0: float, win: int, other: int, arl0: float) -> int:
    lo, hi = 1, max(2, win, other)
    while _arl(p0, win, other, hi) < arl0:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _arl(p0, win, other, mid) >= arl0:
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=256)
def _crossed_within(p: float, win: int, other: int, limit: int, n: int) -> float:
    q = _chain(p, win, other, limit).T.tocsr()
    v = np.zeros(limit)
    v[0] = 1.0
    for _ in range(n):
        v = q @ v
    return float(max(0.0, 1.0 - v.sum()))
