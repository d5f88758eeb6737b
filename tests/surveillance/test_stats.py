"""The statistics core against known values and independent implementations
(no database)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as ss
from statsmodels.sandbox.stats.runs import runstest_1samp

from audit.surveillance import stats

PB = 0.4586527188253242


def test_wilson_known_values_and_scipy():
    lo, hi = stats.wilson([0, 5, 1], [10, 10, 200])
    # Wilson (1927) 95 %: 0/10 -> [0, 0.2775], 5/10 -> [0.2366, 0.7634]
    assert lo[0] == pytest.approx(0.0, abs=1e-12)
    assert hi[0] == pytest.approx(0.27753, abs=1e-5)
    assert (lo[1], hi[1]) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    ci = ss.binomtest(1, 200).proportion_ci(method="wilson")
    assert (lo[2], hi[2]) == pytest.approx((ci.low, ci.high), rel=1e-9)
    lo0, hi0 = stats.wilson([0], [0])
    assert (lo0[0], hi0[0]) == (0.0, 1.0)


@pytest.mark.parametrize("k,n,p0", [(0, 10, 0.1), (7, 100, 0.03), (40, 5000, 0.005),
                                    (75, 5000, 0.005), (3, 3, 0.5)])
def test_binom_greater_is_binomtest(k, n, p0):
    want = ss.binomtest(k, n, p0, alternative="greater").pvalue
    assert stats.binom_greater(k, n, p0) == pytest.approx(want, rel=1e-9)


def test_binom_two_sided_is_twice_the_smaller_tail():
    p = stats.binom_two_sided([380, 460, 540], 1000, PB)
    assert p[0] == pytest.approx(2 * ss.binom.cdf(380, 1000, PB))
    assert p[1] > 0.9  # near the centre
    assert p[2] == pytest.approx(2 * ss.binom.sf(539, 1000, PB))


@pytest.mark.parametrize("k,n,big_k,big_n", [(10, 1000, 30, 20000), (0, 50, 5, 900),
                                             (75, 5000, 300, 60000)])
def test_fisher_greater_is_scipy_fisher_exact(k, n, big_k, big_n):
    table = [[k, n - k], [big_k - k, big_n - n - (big_k - k)]]
    want = ss.fisher_exact(table, alternative="greater").pvalue
    assert stats.fisher_greater(k, n, big_k, big_n) == pytest.approx(want, rel=1e-7)


def test_funnel_limits_hold_their_level():
    n = np.array([100, 1000, 10000])
    lim = stats.funnel_limits(0.005, n)
    assert set(lim) == {"lo95", "hi95", "lo998", "hi998"}
    assert np.all(lim["lo998"] <= lim["lo95"]) and np.all(lim["hi95"] <= lim["hi998"])
    # the share of honest croupiers above the upper 99.8 % limit is at most 0.1 %
    above = ss.binom.sf(lim["hi998"] * n, n, 0.005)
    assert np.all(above <= 0.001)
    # and the limits narrow as n grows (a funnel)
    assert np.all(np.diff(lim["hi998"]) < 0)


def test_bh_known_example_and_statsmodels():
    # Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05: 4 rejected
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
         0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0]
    reject, adj = stats.bh(np.array(p)[::-1], 0.05)
    assert reject[::-1].tolist() == [True] * 4 + [False] * 11
    # the adjusted p-values by hand: min over j >= i of p_(j) m / j
    m = len(p)
    want = np.minimum.accumulate((np.array(p) * m / np.arange(1, m + 1))[::-1])[::-1]
    assert np.allclose(adj[::-1], np.minimum(want, 1))
    assert stats.bh(np.zeros(0))[0].size == 0


def test_money_moments_by_enumeration():
    c, levy, pb, pp = 1025.0, 51.3, PB, 0.4462785698388768
    mean, var = stats.banker_money_moments(np.array([c]), np.array([levy]), pb, pp)
    values = np.array([c - levy, -c, 0.0])
    probs = np.array([pb, pp, 1 - pb - pp])
    m = (values * probs).sum()
    assert mean[0] == pytest.approx(m)
    assert var[0] == pytest.approx(((values - m) ** 2 * probs).sum())


def test_exact_multinomial_by_definition():
    probs = (PB, 0.4462785698388768, 1 - PB - 0.4462785698388768)
    n = 6
    grid = [(b, p, n - b - p) for b in range(n + 1) for p in range(n + 1 - b)]
    pmf = {x: ss.multinomial.pmf(x, n, probs) for x in grid}
    for x in [(6, 0, 0), (3, 3, 0), (0, 0, 6), (2, 2, 2)]:
        want = sum(v for v in pmf.values() if v <= pmf[x] * (1 + 1e-7))
        got = stats.multinomial_exact([x[0]], [x[1]], [x[2]], [probs])[0]
        assert got == pytest.approx(min(want, 1.0), rel=1e-9)


def test_exact_multinomial_is_valid_at_every_level():
    """P(p <= a) <= a: the p-values BH is given never promise too much."""
    probs = (PB, 0.4462785698388768, 1 - PB - 0.4462785698388768)
    n = 58
    table = stats._multinomial_table(n, probs)
    b, t = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = b + t <= n
    pmf = ss.multinomial.pmf(np.stack([b[ok], n - b[ok] - t[ok], t[ok]], 1), n, probs)
    pv = table[ok]
    for a in (1e-6, 1e-4, 0.01, 0.05, 0.5):
        assert pmf[pv <= a].sum() <= a * (1 + 1e-9)


def test_runs_test_matches_statsmodels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = (rng.random(40) < 0.5).astype(int)
        n1, n2 = int(x.sum()), int(len(x) - x.sum())
        runs = 1 + int((x[1:] != x[:-1]).sum())
        mean = 2 * n1 * n2 / 40 + 1
        if abs(runs - mean) <= 0.5:
            continue  # statsmodels adds 0.5 there; this module uses 0
        z, p = stats.runs_test([n1], [n2], [runs])
        z_sm, p_sm = runstest_1samp(x, cutoff=0.5, correction=True)
        assert z[0] == pytest.approx(z_sm) and p[0] == pytest.approx(p_sm)


def test_runs_test_catches_an_alternating_shoe():
    z, p = stats.runs_test([30], [30], [60])
    assert z[0] > 7 and p[0] < 1e-10


# ------------------------------------------------------------------- CUSUM


@pytest.mark.parametrize("direction", [-1, 1])
def test_cusum_run_is_the_recursion(direction):
    c = stats.BernoulliCusum(PB, 0.04, 1000, direction=direction)
    rng = np.random.default_rng(5)
    x = rng.random(3000) < 0.44
    win, other = c.increments(PB)
    s, want = 0, []
    for v in x:
        s = max(0, s + (win if v else other))
        want.append(s)
    assert np.array_equal(c.run(x), np.array(want))


def test_cusum_limit_is_the_smallest_for_its_arl0():
    c = stats.BernoulliCusum(PB, 0.04, 5000)
    assert c.arl(limit=c.limit - 1) < 5000 <= c.arl()


def _simulated_run_lengths(c, p, runs, seed, steps):
    rng = np.random.default_rng(seed)
    win, other = c.increments(c.p0)
    s = np.zeros(runs, dtype=np.int64)
    length = np.full(runs, steps + 1)
    alive = np.ones(runs, dtype=bool)
    for t in range(1, steps + 1):
        x = rng.random(runs) < p
        s = np.maximum(0, s + np.where(x, win, other))
        hit = alive & (s >= c.limit)
        length[hit] = t
        alive &= ~hit
        if not alive.any():
            break
    return length


@pytest.mark.parametrize("direction", [-1, 1])
@pytest.mark.parametrize("p", ["in control", "shifted"])
def test_cusum_arl_matches_simulation(p, direction):
    """The chain's exact ARL against 4,000 simulated runs: within 4 standard
    errors (a run length is near-geometric: sd ~ its mean), for a falling
    and a rising banker-win rate."""
    c = stats.BernoulliCusum(PB, 0.04, 400, direction=direction)
    prob = c.p0 if p == "in control" else c.p1
    exact = c.arl(prob)
    rl = _simulated_run_lengths(c, prob, 4000, seed=11, steps=int(exact * 30))
    se = rl.std() / np.sqrt(len(rl))
    print(f"\nCUSUM ARL ({p}): exact {exact:.1f}, simulated {rl.mean():.1f} "
          f"+/- {se:.1f}")
    assert abs(rl.mean() - exact) < 4 * se


@pytest.mark.parametrize("direction", [-1, 1])
def test_cusum_false_alarm_probability_matches_simulation(direction):
    c = stats.BernoulliCusum(PB, 0.04, 400, direction=direction)
    exact = c.false_alarm_probability(300)
    rl = _simulated_run_lengths(c, c.p0, 4000, seed=12, steps=300)
    seen = (rl <= 300).mean()
    assert abs(seen - exact) < 4 * np.sqrt(exact * (1 - exact) / 4000)


def test_default_cusum_design_is_stated():
    from audit.surveillance.detect import DEFAULT_ARL0, DEFAULT_DELTA

    c = stats.BernoulliCusum(PB, DEFAULT_DELTA, DEFAULT_ARL0)
    arl0, arl1 = c.arl(), c.arl(0.42)
    print(f"\nCUSUM design: p0 {PB:.4f} -> p1 {c.p1:.4f}, h = {c.h:.3f}, "
          f"ARL0 = {arl0:,.0f} coups, ARL1 at 42 % = {arl1:,.0f} coups")
    assert DEFAULT_ARL0 <= arl0 < 1.01 * DEFAULT_ARL0
    assert arl1 < 4000
    up = stats.BernoulliCusum(PB, DEFAULT_DELTA, DEFAULT_ARL0, direction=1)
    assert up.p1 == pytest.approx(PB + DEFAULT_DELTA) and up.increments(PB)[0] > 0
    assert DEFAULT_ARL0 <= up.arl() < 1.01 * DEFAULT_ARL0 and up.arl(0.52) < 2500
    with pytest.raises(ValueError, match="direction"):
        stats.BernoulliCusum(PB, DEFAULT_DELTA, DEFAULT_ARL0, direction=0)
