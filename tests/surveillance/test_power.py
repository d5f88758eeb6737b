"""The power the page and docs/surveillance.md state (power.py) against the detector
itself: on simulated floors at a false-draw rate R, a croupier at 3x R over
n coups is found as often as the figure says, within the binomial interval
of the runs (no database; a few hundred detector runs, ~30 s; the long
runs on real shoes are `make calibrate`'s)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as ss

from audit.surveillance import detect, power, synth

Q = 0.05
RUNS = 100


def _floor(rate: float, n: int, seed: int):
    s = synth.honest(tables=6, days=5, coups_per_day=1000, seed=seed,
                     false_draw_rate=rate)
    s = synth.inject_croupier(s, seed=seed, coups=n, factor=3.0, rate=rate)
    return s


@pytest.mark.parametrize(("rate", "target"), [(0.003, 0.9), (0.005, 0.5)])
def test_the_stated_power_is_what_the_detector_finds(rate, target, capsys):
    # the floor's own figures, read from one run of the same shape
    probe = _floor(rate, 1, 90_000)
    tests = detect.analyse(probe.rows, probe.shoes, fdr=Q).tests
    floor = power.Floor(rate, len(probe.rows), tests, Q)
    n = power.coups_for(floor, 3.0, target)
    assert n is not None and 300 < n < 15_000
    found, predicted = 0, []
    for i in range(RUNS):
        s = _floor(rate, n, 91_000 + i)
        report = detect.analyse(s.rows, s.shoes, fdr=Q)
        mine = s.truth["croupier"]["coups"]  # whole shifts: at most n
        predicted.append(float(power.power(
            power.Floor(rate, len(s.rows) - mine, report.tests, Q), mine)[0]))
        found += any(a.subject == "croupier:99" for a in report.alerts)
    expected = float(np.mean(predicted))
    lo, hi = ss.binom.ppf(0.005, RUNS, expected), ss.binom.isf(0.005, RUNS, expected)
    with capsys.disabled():
        print(f"\n[surveillance power] rate {rate:.1%}: 3x within {n:,} coups"
              f" at {target:.0%} (stated); found {found}/{RUNS}, predicted"
              f" {expected:.1%} for the shifts taken (99 % range {lo:.0f}-{hi:.0f})")
    assert lo <= found <= hi
    assert expected >= target - 0.12  # whole shifts fall a little short of n


def test_a_lower_rate_needs_more_coups():
    at = {r: power.coups_for(power.Floor(r, 200_000, 10_000, Q)) for r in
          (0.003, 0.005)}
    assert at[0.003] > 1.5 * at[0.005]
    assert power.coups_for(power.Floor(0.0, 200_000, 10_000, Q)) is None


def test_the_power_is_stated_against_the_rest_of_the_floor():
    """Issue 35: the croupier the run alerts on false draws is left out of
    the rate a "3x" is measured by (he raised it: 0.0039 against 0.0032)."""
    from audit.surveillance.data import Alert
    from audit.surveillance.summary import croupier_power

    honest = [{"subject": f"croupier:{i}", "coups": 10_000,
               "false_draw_rate": 32} for i in range(1, 5)]
    off = {"subject": "croupier:9", "coups": 4_550, "false_draw_rate": 44}
    alert = Alert(kind="croupier", subject="croupier:9", test="false_draw_rate",
                  statistic=5.0, p_value=1e-8, day=1, evidence={})
    report = detect.Report(alerts=[alert], tests=40, fdr=Q, min_q=1e-6,
                           cusum_budget=0.0, croupiers=[*honest, off])
    p = croupier_power(None, report)
    assert p["floor_rate"] == 128 / 40_000 and p["coups"] == 40_000
    assert p["left_out"] == 1
    # without the alert, the whole floor (him included) would be the base
    report.alerts = []
    assert croupier_power(None, report)["floor_rate"] == 172 / 44_550
