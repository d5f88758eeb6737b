"""Proof of calibration and power on seeded synthetic coups (no database).

Calibration (honest data, R_HONEST runs of 200,000 coups: 40 tables x 5
gaming days x 1,000 coups, dealt from real shoes by dealer.py: card removal,
burned cards, the cut card, free choices at a mix, false draws at 0.3 %; the
expectation at the floor's observed mix, as the pipeline weighs it). The
bound and why: with every null true, BH's false discovery rate is its
family-wise error rate, so P(a run raises any BH alert) <= q; the CUSUMs add
at most 2 sum(n_table) / ARL0 (0.02 per run here, a union bound over tables
and the two directions). The runs with an alert are a binomial count; the
test fails if it exceeds the 99.9 % quantile of Bin(R, q + 0.01) -- it cannot
fail by chance more than once in a thousand if the detector keeps its bound.
With R = 40 that check is coarse (it catches a rate of ~20 %), so each test
family's p-values are checked too, pooled over the runs (~400,000 p-values):
for a = 0.001, 0.01, 0.05 the count of p <= a must stay under the 99.99 %
quantile of Bin(N, a) (valid p-values: P(p <= a) <= a); that catches a
family whose tail is ~30 % too liberal at a = 0.01. The long version (400
runs, the any-alert rate's interval, every family's p-values, the patterns'
power on real shoes at 0.3 % and 0.5 %) is `make calibrate`.

Power (R_POWER runs of 80,000 coups: 8 tables x 10 days x 1,000 coups, every
pattern injected into each run on separate subjects): the croupier with 3x
false draws and the banker winning 52 % within 5,000 of their coups, the table
falling to 42 % from day 3 found by day 9 (7 gaming days of 1,000 coups), the
shoe short of four 9s at its close. Each must be found in >= 90 % of runs
(the shoe in all). With 50 runs, 45/50 observed is a 95 % lower confidence
bound of 78 %; the figures printed carry the Clopper-Pearson bound, and the
CUSUM's exact chain (test_stats) gives its power by calculation: 98 %.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest
from scipy import stats as ss
from statsmodels.stats.proportion import proportion_confint

from audit.surveillance import dealer, detect, synth

# Forty seeded casinos and fifty planted ones: about a minute on 2 cores.
pytestmark = pytest.mark.proof

R_HONEST = 40
R_POWER = 50
Q = 0.05
F = synth.FIRST_DAY


@pytest.fixture(scope="module")
def honest_runs():
    out = []
    for seed in range(R_HONEST):
        s = dealer.honest(tables=40, days=5, coups_per_day=1000,
                          seed=50_000 + seed, false_draw_rate=0.003)
        assert len(s.rows) == 200_000
        out.append(detect.analyse(s.rows, s.shoes, fdr=Q))
    return out


@pytest.fixture(scope="module")
def power_runs():
    found = Counter()
    delays, others = [], Counter()
    for seed in range(R_POWER):
        s = synth.honest(tables=8, days=10, coups_per_day=1000, seed=70_000 + seed)
        away = s.rows.table != 2
        s = synth.inject_croupier(s, seed=seed, where=away)
        s = synth.inject_banker(s, seed=seed, where=away)
        s = synth.inject_table(s, seed=seed, table=2, from_day=F + 3)
        short = s.shoes[int(np.random.default_rng(seed).integers(len(s.shoes)))]
        s = synth.inject_short_shoe(s, seed=seed, shoe=short.shoe)
        assert s.truth["croupier"]["coups"] <= synth.CROUPIER_COUPS
        assert s.truth["banker"]["coups"] <= synth.BANKER_COUPS
        alerts = detect.detect(s.rows, s.shoes, fdr=Q)
        got = {(a.kind, a.subject): a for a in alerts}
        found["croupier"] += ("croupier", "croupier:99") in got
        found["banker"] += ("banker", "card:999999") in got
        cusum = got.get(("table_cusum", "table:2"))
        on_time = cusum is not None and 0 <= cusum.day - (F + 3) < synth.TABLE_DAYS
        found["table"] += on_time
        if cusum is not None:
            delays.append(cusum.day - (F + 3) + 1)
        found["shoe"] += ("shoe_count", f"shoe:{short.shoe}") in got
        for a in alerts:
            others[a.kind] += a.subject not in {
                "croupier:99", "card:999999", "table:2", f"shoe:{short.shoe}"}
    return found, delays, others


def test_honest_false_alarms_within_the_bound(honest_runs, capsys):
    bh_runs = sum(any(a.kind != "table_cusum" for a in r.alerts) for r in honest_runs)
    cusum_alarms = sum(a.kind == "table_cusum" for r in honest_runs for a in r.alerts)
    budget = float(np.mean([r.cusum_budget for r in honest_runs]))
    any_runs = sum(bool(r.alerts) for r in honest_runs)
    bound = Q + budget
    limit = ss.binom.isf(0.001, R_HONEST, bound)
    with capsys.disabled():
        print(f"\n[surveillance calibration] {R_HONEST} honest runs x 200,000 coups"
              " dealt from real shoes,"
              f" {honest_runs[0].tests:,} tests a run, q = {Q}:"
              f" runs with any alert {any_runs}/{R_HONEST} ="
              f" {any_runs / R_HONEST:.1%} (bound {bound:.1%}: BH {Q:.0%} +"
              f" CUSUM {budget:.2%}); with a BH alert {bh_runs}, CUSUM false"
              f" alarms {cusum_alarms}; alerts a run"
              f" {sum(len(r.alerts) for r in honest_runs) / R_HONEST:.2f}")
        for q in (0.2, 0.5):
            share = np.mean([r.min_q <= q for r in honest_runs])
            print(f"  at q = {q}: runs with a BH alert {share:.1%} (bound {q:.0%})")
    assert any_runs <= limit
    assert cusum_alarms <= ss.poisson.isf(0.001, budget * R_HONEST)


def test_every_test_family_gives_valid_p_values(honest_runs, capsys):
    pooled = defaultdict(list)
    for r in honest_runs:
        for name, p in r.pvalues.items():
            pooled[name].append(p)
    bad = []
    with capsys.disabled():
        print("\n[surveillance calibration] observed / nominal share of p <= a")
        for name, parts in sorted(pooled.items()):
            p = np.concatenate(parts)
            cells = []
            for a in (0.001, 0.01, 0.05):
                k = int((p <= a).sum())
                cells.append(f"a={a}: {k / (a * len(p)):.2f}")
                if k > ss.binom.isf(1e-4, len(p), a):
                    bad.append((name, a, k, len(p)))
            print(f"  {name:32s} n={len(p):7,d}  " + "  ".join(cells))
    assert not bad


def test_the_validity_check_has_teeth(honest_runs):
    """Halved p-values (a test twice too liberal) fail the same check."""
    p = np.concatenate([r.pvalues["shoe.outcomes"] for r in honest_runs]) / 2
    assert (p <= 0.01).sum() > ss.binom.isf(1e-4, len(p), 0.01)


def test_power_of_each_pattern(power_runs, capsys):
    found, delays, others = power_runs
    with capsys.disabled():
        print(f"\n[surveillance power] {R_POWER} seeded runs x 80,000 coups, q = {Q}")
        for name in ("croupier", "banker", "table", "shoe"):
            k = found[name]
            lo, _ = proportion_confint(k, R_POWER, alpha=0.05, method="beta")
            print(f"  {name:8s} found {k}/{R_POWER} = {k / R_POWER:.0%}"
                  f" (95 % lower bound {lo:.0%})")
        print(f"  table found on shift day: {sorted(Counter(delays).items())}"
              f" (day 1 = the first day at 42 %)")
        print(f"  alerts on other subjects (their shoes and days carry the"
              f" patterns too): {dict(others)}")
    for name in ("croupier", "banker", "table"):
        assert found[name] >= 0.9 * R_POWER, name
    assert found["shoe"] == R_POWER
