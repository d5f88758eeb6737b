"""The live surveillance's calibration, short (the long one is
``make calibrate``'s live part, bench/calibrate.py --live): gaming days of a
real-shoe floor (dealer.py) looked at as the live path looks
(audit/surveillance/livesim.py: livetests.look, shift_levels, budget_for,
reference_rate), seeded, a few seconds.

Honest: SHIFTS gaming days of 10 tables x 1,000 coups (two houses, of 6 and
8 decks), a look every 5 coups of each table, at a per-shift bound alpha of
0.3 (large, so that the share of shifts with a live alert is a count the
check can see; the long run uses 0.03): the shifts with any alert, and
those had every coup been looked at, stay within Bin(SHIFTS, alpha)'s 99.9 %
quantile. The check has teeth: a
floor whose false-draw rate tripled tonight against its 28 days' reference
fails it (the reason the reference must be recent, and an upper bound; a
rate doubled gives alerts in a quarter of the shifts at this alpha).

Planted: gross cheating from coup 100 of the day (a croupier at 10x the
floor's 0.5 %, a banker winning 65 %, a table falling to 30 %), which the
test alone finds within the 900 coups left in >= 97 % of cases
(``coups_to_alert``): each found within the shift in at least 8 of 10
shifts, the median coups from the start to the alert within 1.5 x the test
alone's median plus a look's coups.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as ss

from audit.surveillance import livesim
from audit.surveillance import livetests as lt

SHIFTS = 40
ALPHA = 0.3
# two houses (6 and 8 decks, five tables each): the banker and table
# tallies in groups
FLOOR = livesim.Floor(tables=10, coups=1000, rate=0.003, alpha=ALPHA, every=5,
                      decks=(6, 8))
GROSS = livesim.Plant(croupier=10.0, banker=0.65, table=0.30, start=100)


def _honest(floor, shifts=SHIFTS):
    return [livesim.shift(floor, 38_000 + i) for i in range(shifts)]


def test_honest_shifts_keep_the_bound(capsys):
    runs = _honest(FLOOR)
    any_alert = sum(r.any_alert for r in runs)
    ever = sum(r.any_ever for r in runs)
    limit = ss.binom.isf(0.001, SHIFTS, ALPHA)
    with capsys.disabled():
        print(f"\n[live calibration] {SHIFTS} honest shifts x 10 tables x 1,000"
              f" coups, alpha {ALPHA}: any live alert {any_alert}, after every"
              f" coup {ever} (limit {limit:.0f}); over budget"
              f" {sum(bool(r.over) for r in runs)}")
    assert any_alert <= ever <= limit
    assert not any(r.over for r in runs)  # the budget rule held every night
    # the levels are the live path's
    assert runs[0].levels == lt.shift_levels(ALPHA, runs[0].budget)


def test_the_honest_check_has_teeth():
    drifted = livesim.Floor(tables=10, coups=1000, rate=0.009, history_rate=0.003,
                            alpha=ALPHA, every=5)
    runs = _honest(drifted, 20)
    assert sum(r.any_alert for r in runs) > ss.binom.isf(0.001, 20, ALPHA)
    families = [f for r in runs for f, _ in r.alerts]
    assert families.count("croupier") > 2 * (len(families) - families.count("croupier"))


def test_gross_cheating_is_found_within_the_shift(capsys):
    floor = livesim.Floor(tables=10, coups=1000, rate=0.005, alpha=0.03, every=5)
    runs = [livesim.shift(floor, 39_000 + i, GROSS) for i in range(10)]
    truth = {"croupier": (runs[0].q_croupier, 0.05), "banker": (0.4602, 0.65),
             "table": (0.4602, 0.30)}
    for family in ("croupier", "banker", "table"):
        delays = [r.planted[family]["delay"] for r in runs]
        found = [d for d in delays if d is not None]
        alone = livesim.coups_to_alert(lt.FAMILIES[family], *truth[family],
                                       runs[0].levels[family], runs=200,
                                       max_coups=900, seed=1)
        with capsys.disabled():
            print(f"\n[live calibration] {family}: found within the shift"
                  f" {len(found)}/10, median {np.median(found):.0f} coups from the"
                  f" start (the test alone: {np.mean(np.isfinite(alone)):.0%} within"
                  f" 900, median {np.median(alone):.0f})")
        assert np.mean(np.isfinite(alone)) >= 0.97, family  # the premise
        assert len(found) >= 8, family
        assert np.median(found) <= 1.5 * np.median(alone) + 2 * floor.every, family
        assert not any(r.planted[family]["early"] for r in runs)


@pytest.mark.parametrize("seed", [1, 2])
def test_an_honest_shift_is_looked_at_as_the_live_path_does(seed):
    """Every look's subjects are those with coups so far, and a planted
    subject's delay counts only his coups since the start."""
    r = livesim.shift(livesim.Floor(tables=4, coups=400), seed, GROSS)
    for rec in r.planted.values():
        assert rec["coups"] == 300
        assert rec["delay"] is None or 0 < rec["delay"] <= 300
