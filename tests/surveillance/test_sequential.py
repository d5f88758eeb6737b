"""The live surveillance's sequential tests (audit/surveillance/sequential.py,
livetests.py), by exact calculation and by simulation (numpy, seconds).

Validity: on null coups, looked at after every coup and at ticks, the share
of simulated shifts whose Lambda ever reaches 1/a stays at most a within
binomial error (the count may exceed R a only by what chance gives once in
a thousand), for each design, with the coups in groups of several house
rules' null probabilities and with a small false-draw rate (0.003); the
always-valid p-value kept over the looks (``evaluate``'s
``previous_max_log_lambda``) is at most uniform. The same check fails a
test whose null rate is a quarter too low, and the fixed-sample test looked
at again and again (what the live path must not do). Power: the issue's
patterns, at the levels of a 40-table floor, cross within the coups stated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as ss
from scipy.special import logsumexp

from audit.surveillance import livetests as lt
from audit.surveillance import sequential as sq
from audit.surveillance.livesim import coups_to_alert

R = 3000  # null shifts a design
TICK = 10  # a look every 10 coups (the "ticks")
LEVELS = (0.01, 0.05, 0.2)
# three house rules' banker-win probabilities (the floor's mix; punter
# stands on 5; 8 decks)
HOUSES = np.array([0.45865, 0.46171, 0.4530])


def _limit(a: float, runs: int = R) -> float:
    """The most crossings a valid level-a test gives, but once in 1,000."""
    return ss.binom.isf(0.001, runs, a)


def _null_paths(q_groups, coups: int, seed: int, runs: int = R, q_true=None):
    """Cumulative (n, x) per group after every coup: shape (runs, coups, G).
    Each coup belongs to a random group; its event comes at q_true (default:
    the group's null probability)."""
    rng = np.random.default_rng(seed)
    q_groups = np.asarray(q_groups, dtype=float)
    q_true = q_groups if q_true is None else np.asarray(q_true, dtype=float)
    g = rng.integers(0, len(q_groups), size=(runs, coups))
    event = rng.random((runs, coups)) < q_true[g]
    onehot = g[..., None] == np.arange(len(q_groups))
    return onehot.cumsum(axis=1), (onehot & event[..., None]).cumsum(axis=1)


def _log_lambda_paths(design, n, x, q_groups, chunk: int = 300) -> np.ndarray:
    """log Lambda after every coup of every path, through ``log_lambda``."""
    runs, coups, groups = n.shape
    out = np.empty((runs, coups))
    for i in range(0, runs, chunk):
        nn = n[i:i + chunk].reshape(-1, groups)
        xx = x[i:i + chunk].reshape(-1, groups)
        out[i:i + chunk] = sq.log_lambda(design, nn, xx, q_groups).reshape(-1, coups)
    return out


CASES = {
    "croupier, q 0.003": (sq.CROUPIER, [0.003], 2000),
    "croupier, q 0.01": (sq.CROUPIER, [0.01], 1000),
    "banker, three houses": (sq.BANKER, HOUSES, 800),
    "table, three houses": (sq.TABLE, HOUSES, 1000),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def null_case(request):
    design, q, coups = CASES[request.param]
    n, x = _null_paths(q, coups, seed=sorted(CASES).index(request.param))
    ll = _log_lambda_paths(design, n, x, q)
    return request.param, design, np.asarray(q), n, x, ll


def test_crossing_share_stays_within_the_level(null_case, capsys):
    name, design, q, n, x, ll = null_case
    every = ll.max(axis=1)
    ticks = ll[:, TICK - 1::TICK].max(axis=1)
    with capsys.disabled():
        print(f"\n[sequential] {name}: share of {R} null shifts ever crossing 1/a"
              " (every coup / every 10): " + ", ".join(
                  f"a={a}: {np.mean(every >= -math.log(a)):.4f}"
                  f" / {np.mean(ticks >= -math.log(a)):.4f}" for a in LEVELS))
    for a in LEVELS:
        assert (every >= -math.log(a)).sum() <= _limit(a), (name, a)
        # a look at ticks sees less than a look after every coup
        assert (ticks >= -math.log(a)).sum() <= (every >= -math.log(a)).sum()


def test_the_always_valid_p_value_at_ticks(null_case):
    """``evaluate`` at each tick, carrying the largest log Lambda so far:
    P(p <= a) <= a at the shift's end, and p only falls."""
    name, design, q, n, x, _ = null_case
    best, last_p = None, np.ones(R)
    for t in range(TICK - 1, n.shape[1], TICK):
        look = sq.evaluate(design, n[:, t], x[:, t], q, level=0.05,
                           previous_max_log_lambda=best)
        best = look.log_lambda if best is None else np.maximum(best, look.log_lambda)
        assert np.all(look.p_value <= last_p + 1e-15)
        last_p = look.p_value
    for a in LEVELS + (0.5,):
        assert (last_p <= a).sum() <= _limit(a), (name, a)


def test_lambda_has_mean_one_exactly():
    """E[Lambda_n] = 1 under the null (a martingale), summed exactly over
    the binomial counts -- also with two groups."""
    for design, q, n in ((sq.CROUPIER, 0.003, 400), (sq.BANKER, 0.4586, 300),
                         (sq.TABLE, 0.4617, 300)):
        k = np.arange(n + 1)
        ll = sq.log_lambda(design, np.full((n + 1, 1), n), k[:, None], q)
        total = logsumexp(ss.binom.logpmf(k, n, q) + ll)
        assert float(total) == pytest.approx(0, abs=1e-9)
    k1, k2 = np.meshgrid(np.arange(101), np.arange(81), indexing="ij")
    nn = np.stack([np.full(k1.size, 100), np.full(k1.size, 80)], axis=1)
    xx = np.stack([k1.ravel(), k2.ravel()], axis=1)
    ll = sq.log_lambda(sq.TABLE, nn, xx, [0.4586, 0.4530])
    w = (ss.binom.logpmf(k1.ravel(), 100, 0.4586)
         + ss.binom.logpmf(k2.ravel(), 80, 0.4530))
    assert float(logsumexp(w + ll)) == pytest.approx(0, abs=1e-9)


def test_the_check_has_teeth():
    """The same check fails a croupier test whose reference rate is a
    quarter below the truth, and the fixed-sample one-sided binomial test
    at 5 % looked at every 10 coups."""
    n, x = _null_paths([0.003], 2000, seed=99, q_true=[0.004])
    ll = _log_lambda_paths(sq.CROUPIER, n, x, [0.003])
    assert (ll.max(axis=1) >= -math.log(0.2)).sum() > _limit(0.2)
    n, x = _null_paths([0.4586], 1000, seed=98)
    t = slice(TICK - 1, None, TICK)
    p = ss.binom.sf(x[:, t, 0] - 1, n[:, t, 0], 0.4586)  # P(X >= x)
    assert ((p <= 0.05).any(axis=1)).sum() > _limit(0.05)


# the levels of a 40-table floor at alpha 0.03 (budget_for of a day with 48
# croupiers, 360 bankers and 40 tables)
FLOOR = lt.shift_levels(0.03, lt.budget_for({"croupier": 48, "banker": 360,
                                              "table": 40}, 40))


@pytest.mark.parametrize(("family", "q_null", "q_true", "within"), [
    ("croupier", lt.reference_rate(3360, 1_120_000), 0.009, 7_000),
    ("croupier", lt.reference_rate(5600, 1_120_000), 0.015, 4_000),
    ("banker", 0.4602, 0.52, 4_000),
    ("table", 0.4602, 0.42, 8_000),
])
def test_power_of_the_issue_patterns(family, q_null, q_true, within, capsys):
    at = coups_to_alert(lt.FAMILIES[family], q_null, q_true, FLOOR[family],
                        runs=200, max_coups=within, seed=38)
    found = np.isfinite(at)
    with capsys.disabled():
        print(f"\n[sequential power] {family} at {q_true} against {q_null:.4f}"
              f" (level {FLOOR[family]:.2g}): found within {within:,} coups"
              f" {found.mean():.0%}, median {np.median(at):,.0f} coups")
    assert found.mean() >= 0.9
    # and no alert on the null
    null = coups_to_alert(lt.FAMILIES[family], q_null, q_null, FLOOR[family],
                          runs=200, max_coups=within, seed=39)
    assert np.isfinite(null).sum() <= 1


def test_gross_cheating_is_found_fast():
    """The issue's example: 9 false draws in 310 coups where the floor's
    rate gives 1 crosses a 40-table floor's level, by chance once in about
    40,000 shifts."""
    q = lt.reference_rate(3360, 1_120_000)
    look = sq.evaluate(sq.CROUPIER, [[310]], [[9]], [[q]], level=FLOOR["croupier"])
    assert look.crossed[0]
    assert lt.chance_in_shifts(float(look.p_value[0])) == 40_000
    assert look.expected[0] == pytest.approx(0.98, abs=0.01)


@pytest.mark.parametrize(("call", "words"), [
    (lambda: sq.log_lambda(sq.CROUPIER, [[10]], [[11]], 0.1), "events must be"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[10]], [[-1]], 0.1), "events must be"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[-3]], [[0]], 0.1), "coups must not be"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[10]], [[1]], 0.0), "null probabilities"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[10]], [[1]], 1.0), "null probabilities"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[np.nan]], [[1]], 0.1), "coups must be"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[10, 2]], [[1]], 0.1), "one shape"),
    (lambda: sq.log_lambda(sq.CROUPIER, [[10, 2]], [[1, 1]], [0.1, 0.2, 0.3]),
     "do not fit"),
    (lambda: sq.evaluate(sq.CROUPIER, [[10]], [[1]], 0.1, level=1.0), "level"),
    (lambda: sq.evaluate(sq.CROUPIER, [[10]], [[1]], 0.1, level=0), "level"),
    (lambda: sq.subject_level(1.5, 10), "alpha"),
    (lambda: sq.subject_level(0.03, -1), "subjects"),
    (lambda: sq.Design("x", (1.0,)), "odds ratios"),
    (lambda: lt.shift_levels(0.03, {}), "no family"),
    (lambda: lt.shift_levels(0.03, {"dealer": 3}), "unknown families"),
    (lambda: lt.Tally(("a", "a"), np.ones((2, 1)), np.zeros((2, 1)), [0.1]),
     "twice"),
    (lambda: lt.Tally(("a",), np.ones((2, 1)), np.zeros((2, 1)), [0.1]),
     "shapes differ"),
    (lambda: lt.look({"dealer": lt.Tally(("a",), [[1]], [[0]], [0.1])},
                     {"dealer": 0.01}), "unknown family"),
    (lambda: lt.look({"table": lt.Tally(("a",), [[1]], [[0]], [0.1])},
                     {"croupier": 0.01}), "no level"),
    (lambda: lt.budget_for({"croupier": -1}, 4), "croupier count"),
    (lambda: lt.budget_for({"croupier": 2}, 2.5), "open_tables"),
    (lambda: lt.budget_for({"dealers": 2}, 2), "unknown families"),
    (lambda: lt.reference_rate(5, 4), "cannot exceed"),
    (lambda: lt.reference_rate(-1, 4), "events"),
    (lambda: lt.reference_rate(1, 4, confidence=1.0), "confidence"),
    (lambda: lt.chance_in_shifts(1.5), "p_value"),
    (lambda: lt.chance_in_shifts(float("nan")), "p_value"),
])
def test_bad_input_is_named(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_budget_rule():
    assert lt.budget_for({"croupier": 57, "banker": 315, "table": 38}, 40) == {
        "croupier": 114, "banker": 720, "table": 76}
    assert lt.budget_for({"croupier": 15, "banker": 500, "table": 14}, 40) == {
        "croupier": 40, "banker": 1000, "table": 40}
    assert lt.budget_for({}, 0) == {"croupier": 1, "banker": 1, "table": 1}
    levels = lt.shift_levels(0.03, lt.budget_for({}, 10))
    assert levels == pytest.approx({"croupier": 0.001, "banker": 0.01 / 180,
                                    "table": 0.001})


def test_over_budget_says_which_family():
    tallies = {"table": lt.Tally(("table:1", "table:2", "table:3"),
                                 [[10], [5], [0]], [[4], [2], [0]], [0.46])}
    assert lt.over_budget(tallies, {"table": 2}) == {}  # table:3 has no coup yet
    assert lt.over_budget(tallies, {"table": 1}) == {"table": (2, 1)}


def test_reference_rate_is_an_upper_bound():
    """Above the true rate in all but ~1/1,000 of trailing windows, and
    close to it on a real floor's history."""
    rng = np.random.default_rng(5)
    coups = 1_120_000
    q = np.array([lt.reference_rate(int(k), coups)
                  for k in rng.binomial(coups, 0.003, size=2000)])
    assert (q < 0.003).sum() <= ss.binom.isf(0.001, 2000, 0.001)
    assert np.median(q) / 0.003 == pytest.approx(1.055, abs=0.02)
    assert lt.reference_rate(0, 0) is None
    assert 0 < lt.reference_rate(0, 5000) < 0.002  # none seen: still a rate


def test_chance_in_shifts_rounds_as_one_says():
    cases = {1.0: 1, 0.5: 2, 0.13: 8, 0.047: 21, 0.0123: 81, 1 / 150: 150,
             1 / 1234: 1200, 1 / 21_277: 20_000, 1 / 47_000: 50_000,
             1 / 123_456: 120_000, 1e-12: lt.MAX_SHIFTS, 0.0: lt.MAX_SHIFTS}
    for p, n in cases.items():
        assert lt.chance_in_shifts(p) == n, p


def test_alert_figures_and_look():
    q = lt.reference_rate(3360, 1_120_000)
    tallies = {"croupier": lt.Tally(("croupier:7", "croupier:8"),
                                    [[310], [300]], [[9], [1]], [q])}
    alerts = lt.look(tallies, FLOOR)
    assert [a.subject for a in alerts] == ["croupier:7"]
    assert lt.alert_figures(alerts[0]) == {"events": 9, "coups": 310,
                                           "expected": 1.0,
                                           "once_in_shifts": 40_000}
    small = lt.LiveAlert("croupier", "x", "c", 3, 40, 0.126, 1e-3, 6.9, 1e-3)
    assert lt.alert_figures(small)["expected"] == 0.1
