"""The live tests over windows of several gaming days (livetests.windows,
look_windows, raise_once): pure numpy, no database."""

from __future__ import annotations

import numpy as np
import pytest

from audit.surveillance import livetests as lt
from audit.surveillance.sequential import CROUPIER, log_lambda


def day(d, subjects, n, x, q):
    return lt.DayTally(day=d, subjects=tuple(subjects), n=np.array(n, float),
                       x=np.array(x, float), q=np.array(q, float))


def test_a_window_holds_its_first_days_subjects_over_the_days_since():
    days = [day(10, ["a", "b"], [[100], [50]], [[1], [0]], [0.01]),
            day(11, ["b", "c"], [[70], [30]], [[2], [1]], [0.02]),
            day(12, ["a"], [[40]], [[3]], [0.03])]
    wins = {w.start: w.tally for w in lt.windows(days, window_days=3)}
    assert sorted(wins) == [10, 11, 12]
    t = wins[10]
    assert t.subjects == ("a", "b")  # c came later: not in the window of day 10
    assert t.n.tolist() == [[100, 0, 40], [50, 70, 0]]
    assert t.x.tolist() == [[1, 0, 3], [0, 2, 0]]
    assert t.q[0].tolist() == [0.01, 0.5, 0.03] and t.q[1][:2].tolist() == [0.01, 0.02]
    assert wins[11].subjects == ("b", "c") and wins[11].n.tolist() == [[70, 0], [30, 0]]
    assert wins[12].subjects == ("a",)
    # a window of 2 days: day 10's has closed
    assert [w.start for w in lt.windows(days, window_days=2)] == [11, 12]
    # in any order, each day once
    assert [w.start for w in lt.windows(days[::-1], window_days=3)] == [10, 11, 12]
    with pytest.raises(ValueError, match="twice"):
        lt.windows(days + days[:1])
    with pytest.raises(ValueError, match="window_days"):
        lt.windows(days, window_days=0)


def test_a_windows_statistic_is_the_product_of_its_days():
    """Days of different null rates side by side: the window's log Lambda
    at each ratio is the sum of the days' (one mixture over the total)."""
    days = [day(1, ["a"], [[300]], [[4]], [0.003]),
            day(2, ["a"], [[500]], [[9]], [0.004])]
    (w1, _) = lt.windows(days, window_days=7)
    def one(theta, n, x, q):
        return x * theta - n * np.log1p(q * np.expm1(theta))

    for theta in CROUPIER.thetas:
        both = one(theta, 300, 4, 0.003) + one(theta, 500, 9, 0.004)
        single = type(CROUPIER)("one", (float(np.exp(theta)),))
        assert log_lambda(single, w1.tally.n, w1.tally.x, w1.tally.q)[0] == \
            pytest.approx(both)


def test_look_windows_levels_per_window_and_since():
    days = [day(1, ["a"], [[200]], [[20]], [0.003]),
            day(2, ["a"], [[200]], [[0]], [0.003])]
    wins = {"croupier": lt.windows(days, window_days=7)}
    alerts = lt.look_windows(wins, {1: {"croupier": 1e-3}, 2: {"croupier": 1e-3}})
    assert [(a.subject, a.since) for a in alerts] == [("a", 1)]  # day 2 clean
    assert alerts[0].coups == 400 and alerts[0].events == 20
    with pytest.raises(ValueError, match="no levels"):
        lt.look_windows(wins, {1: {"croupier": 1e-3}})


def _alert(subject, since, ll, family="croupier"):
    return lt.LiveAlert(family, "t", subject, 1, 10, 0.1, float(np.exp(-ll)), ll,
                        1e-3, since=since)


def test_raise_once_charges_every_crossed_window_once():
    crossed = [_alert("a", 1, 9.0), _alert("a", 2, 11.0), _alert("b", 2, 8.0)]
    first = lt.raise_once(crossed, {})
    assert [(a.subject, a.since, a.windows) for a in first] == [
        ("a", 2, (1, 2)), ("b", 2, (2,))]  # the strongest window, all charged
    charged = {("croupier", "a"): {1, 2}, ("croupier", "b"): {2}}
    assert lt.raise_once(crossed, charged) == []  # nothing new: nothing raised
    later = crossed + [_alert("a", 3, 8.5)]  # a window of a later day crossed
    again = lt.raise_once(later, charged)
    assert [(a.subject, a.since, a.windows) for a in again] == [("a", 3, (1, 2, 3))]
    with pytest.raises(ValueError, match="since"):
        lt.raise_once([lt.LiveAlert("croupier", "t", "a", 1, 1, 0.1, 0.1, 1, 0.1)], {})


def test_windows_keep_the_bound_on_honest_days():
    """Null croupiers over 10 days, a window started each day (7 days
    long), looked at after every 20 coups: the false alerts raised (one per
    charged crossing) per window started is at most the level summed over
    its subjects."""
    rng = np.random.default_rng(38)
    runs, subjects, n_days, per_look, looks_a_day = 100, 20, 10, 20, 10
    level, q = 0.02, 0.01
    raised = 0
    for _ in range(runs):
        charged: dict = {}
        hist: list[lt.DayTally] = []
        for d in range(n_days):
            n_so_far = np.zeros((subjects, 1))
            x_so_far = np.zeros((subjects, 1))
            for _look in range(looks_a_day):
                n_so_far += per_look
                x_so_far += rng.binomial(per_look, q, (subjects, 1))
                today = day(d, [f"s{i}" for i in range(subjects)], n_so_far.copy(),
                            x_so_far.copy(), [q])
                wins = lt.windows(hist + [today], window_days=7)
                crossed = lt.look_windows(
                    {"croupier": wins}, {w.start: {"croupier": level} for w in wins})
                for a in lt.raise_once(crossed, charged):
                    raised += 1
                    charged.setdefault((a.family, a.subject), set()).update(a.windows)
            hist.append(today)
    windows_started = runs * n_days
    # expected false alerts per window <= subjects * level = 0.4; Ville is
    # conservative (0.12 measured), and some do cross (the test is looked at)
    assert 0 < raised / windows_started <= subjects * level
