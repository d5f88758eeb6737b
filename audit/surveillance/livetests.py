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
families, then over each family's budgeted subjects (``shift_levels``;
``budget_for`` the rule: twice the previous closed day's subjects, at least
the open tables'): the share of shifts with any live alert is at most
``alpha`` as long as no family has more subjects than budgeted
(``over_budget`` says when one has, so the page can say the bound was
exceeded). The croupier's reference rate is ``reference_rate`` of the
floor's trailing 28 closed days (an upper confidence bound); an alert's
figures in words are ``alert_figures`` (``chance_in_shifts``: "about once in
N shifts"). docs/surveillance.md, "Live surveillance", has the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from .sequential import BANKER, CROUPIER, TABLE, Design, evaluate, subject_level

__all__ = ["FAMILIES", "Tally", "LiveAlert", "shift_levels", "look", "budget_for",
           "over_budget", "reference_rate", "chance_in_shifts", "alert_figures",
           "REFERENCE_CONFIDENCE", "BANKERS_PER_TABLE", "WINDOW_DAYS", "DayTally",
           "Window", "windows", "look_windows", "raise_once"]

# The croupier's reference rate is the floor's false-draw rate's upper
# confidence bound at this level (``reference_rate``).
REFERENCE_CONFIDENCE = 0.999
# Bankers budgeted per open table at least: two sittings of a nine-seat
# table (``budget_for``).
BANKERS_PER_TABLE = 18
# "once in N shifts" stops here (a p-value of 0 is possible in floats).
MAX_SHIFTS = 1_000_000_000
# Gaming days a window's test runs (settings.SURVEILLANCE_LIVE_WINDOW_DAYS).
WINDOW_DAYS = 7

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
        if len(set(self.subjects)) != len(self.subjects):
            raise ValueError("a subject appears twice in a tally")


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
    # the window's first gaming day (date.toordinal()); None: one day's look
    since: int | None = None
    # every window of the subject that had crossed when this alert was
    # raised (their first days): none of them raises again (``raise_once``)
    windows: tuple[int, ...] = ()


def shift_levels(alpha: float, budget: dict[str, int]) -> dict[str, float]:
    """Each family's per-subject level: ``alpha`` split evenly over the
    families of ``budget``, then over its budgeted subjects."""
    if not budget:
        raise ValueError("no family to watch")
    unknown = sorted(set(budget) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown families in the budget: {unknown}")
    per_family = alpha / len(budget)
    return {family: subject_level(per_family, subjects)
            for family, subjects in budget.items()}


def look(tallies: dict[str, Tally], levels: dict[str, float]) -> list[LiveAlert]:
    """The subjects whose test has crossed its level at this look."""
    alerts: list[LiveAlert] = []
    for family, tally in tallies.items():
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}")
        if not tally.subjects:
            continue
        if family not in levels:
            raise ValueError(f"no level for the family {family!r}")
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


def budget_for(previous_day_counts: dict[str, int], open_tables: int) -> dict[str, int]:
    """Each family's budget of subjects for tonight's shift, from the
    previous closed gaming day's subject counts (``{"croupier": .., "banker":
    .., "table": ..}``; a family missing counts 0) and the tables open now:
    twice the previous day's count, and at least one croupier and one table
    per open table and ``BANKERS_PER_TABLE`` (18: two sittings of a
    nine-seat table) bankers per open table.

    Why twice: a night's croupiers, bankers and tables vary from the night
    before (on a simulated floor whose croupiers are drawn from a pool,
    tonight had more croupiers than yesterday in about half the shifts),
    and a family with more subjects than budgeted exceeds its share of the
    bound in proportion (``over_budget`` says so), while a generous budget
    costs little: doubling it raises the crossing level by log 2 = 0.69,
    a few per cent more coups to an alert.

    Fix the budget at the shift's first look (or only let it grow): the
    bound holds while each family's subjects stay within the smallest
    budget any look used."""
    if int(open_tables) != open_tables or open_tables < 0:
        raise ValueError("open_tables must be a whole number >= 0,"
                         f" not {open_tables!r}")
    unknown = sorted(set(previous_day_counts) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown families in the previous day's counts: {unknown}")
    prev = {}
    for family in FAMILIES:
        k = previous_day_counts.get(family, 0)
        if int(k) != k or k < 0:
            raise ValueError(f"the previous day's {family} count must be a whole"
                             f" number >= 0, not {k!r}")
        prev[family] = int(k)
    t = int(open_tables)
    return {"croupier": max(1, 2 * prev["croupier"], t),
            "banker": max(1, 2 * prev["banker"], BANKERS_PER_TABLE * t),
            "table": max(1, 2 * prev["table"], t)}


def over_budget(tallies: dict[str, Tally],
                budget: dict[str, int]) -> dict[str, tuple[int, int]]:
    """The families whose subjects tonight outnumber their budget:
    ``{family: (subjects, budget)}`` (empty: the bound holds as stated; else
    that family's share of it is exceeded by subjects / budget)."""
    out = {}
    for family, tally in tallies.items():
        seen = int((np.atleast_2d(tally.n).sum(axis=1) > 0).sum())
        if seen > budget.get(family, 0):
            out[family] = (seen, int(budget.get(family, 0)))
    return out


def reference_rate(events: int, coups: int,
                   confidence: float = REFERENCE_CONFIDENCE) -> float | None:
    """The croupier test's reference rate q from the floor's false draws
    (``events``) over its ``coups`` in the trailing closed gaming days (28,
    tonight excluded): the one-sided Clopper-Pearson upper confidence bound
    at ``confidence`` (0.999), not the bare rate. A q below the true rate
    makes honest croupiers look like cheats (at 700 coups, a q 3 % low
    raises the mean of the 10x alternative's likelihood ratio by three
    quarters), a q above it only costs power; the bound is above the true
    rate except once in a thousand windows and, for a floor of 1.1 million
    coups at 0.3 %, only ~5 % above the rate. None when there are no coups to go on (the
    croupier family is then not watched)."""
    for name, v in (("events", events), ("coups", coups)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be a whole number >= 0, not {v!r}")
    if events > coups:
        raise ValueError(f"events ({events}) cannot exceed coups ({coups})")
    if not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must lie in [0.5, 1), not {confidence!r}")
    if coups == 0 or events == coups:
        return None
    return float(stats.beta.ppf(confidence, int(events) + 1, int(coups) - int(events)))


def chance_in_shifts(p_value: float) -> int:
    """The "once in N shifts" of an alert's words: 1 / p rounded to a
    figure one says -- two significant digits below 100 (37) or with a
    leading 1 (150; 12,000), one otherwise (21,277 -> 20,000); at least 1,
    at most ``MAX_SHIFTS``."""
    p = float(p_value)
    if not 0 <= p <= 1 or p != p:
        raise ValueError(f"p_value must lie in [0, 1], not {p_value!r}")
    if p * MAX_SHIFTS <= 1:
        return MAX_SHIFTS
    n = 1 / p
    if n < 10:
        return max(1, int(round(n)))
    digits = int(np.floor(np.log10(n)))
    keep = 2 if (n < 100 or int(n / 10 ** digits) == 1) else 1
    unit = 10 ** (digits - keep + 1)
    return int(min(MAX_SHIFTS, round(n / unit) * unit))


def _say(x: float) -> float:
    """An expectation as it is said: whole above 1, one decimal below."""
    return float(round(x)) if x >= 1 else round(x, 1)


def alert_figures(alert: LiveAlert) -> dict:
    """The figures an alert's words carry: the events and coups tonight,
    what the null expects (the floor's rate; the odds), and "once in N
    shifts" -- e.g. croupier: 9 false draws in 310 coups, the floor's rate
    would give 1, once in 20,000 shifts."""
    return {"events": int(alert.events), "coups": int(alert.coups),
            "expected": _say(alert.expected),
            "once_in_shifts": chance_in_shifts(alert.p_value)}


# -- windows of several gaming days ----------------------------------------------
#
# A subtle cheat needs more coups than one gaming day holds (a croupier at 3x a
# 0.3 % floor: a median of about 2,800 of his coups). So a test is started
# for every gaming day and runs ``window_days`` days: the window started on
# day s tests the subjects who play on day s, on their coups of days s, s+1,
# ... up to the window's last day. Each window is one mixture SPRT per
# subject (Ville: P(it ever crosses) <= its level), its level that of a
# shift whose budget is day s's (``budget_for`` of the day before s):
#
# - the bound: each window is started once, so the long-run share of shifts
#   with a false alert is at most the expected false alerts per window,
#   sum of its levels <= alpha -- the per-shift bound of a one-day look,
#   kept, as long as each alert is charged to a window crossing no alert was
#   charged to before (``raise_once``);
# - the power: a cheat who starts on day s is tested from day s on, by a
#   window with none of his honest days before it, for ``window_days`` days;
# - the null of a group of coups is its own day's (the day's reference rate,
#   the day's mix): a group per day and probability, so the likelihood ratio
#   is still a product of each coup's, a martingale under the null.


@dataclass(frozen=True, eq=False)
class DayTally:
    """One family's counts of one gaming day: S subjects, G groups of coups
    of the same null probability (that day's)."""

    day: int  # date.toordinal()
    subjects: tuple[str, ...]
    n: np.ndarray  # (S, G)
    x: np.ndarray  # (S, G)
    q: np.ndarray  # (G,) or (S, G)

    def __post_init__(self) -> None:
        Tally(self.subjects, self.n, self.x, self.q)  # the same checks


@dataclass(frozen=True, eq=False)
class Window:
    """The test started on gaming day ``start``: the subjects of that day,
    their counts from ``start`` to the last day looked at (a group per day
    and null probability)."""

    start: int  # date.toordinal()
    tally: Tally


def windows(days: list[DayTally], *, window_days: int = WINDOW_DAYS) -> list[Window]:
    """One family's open windows at a look: ``days`` in any order (each day
    at most once; the latest is tonight's), a window for each day within
    ``window_days`` of the latest (the latest included). A subject's tally
    in the window started on s: his counts of every day from s on, side by
    side as groups (a day without him: zeros)."""
    if int(window_days) != window_days or window_days < 1:
        raise ValueError("window_days must be a whole number >= 1, "
                         f"not {window_days!r}")
    if not days:
        return []
    by_day = sorted(days, key=lambda d: d.day)
    if len({d.day for d in by_day}) != len(by_day):
        raise ValueError("a gaming day appears twice")
    last = by_day[-1].day
    open_ = [d for d in by_day if d.day > last - int(window_days)]
    out = []
    for i, first in enumerate(open_):
        subjects = first.subjects
        if not subjects:
            continue
        row = {s: k for k, s in enumerate(subjects)}
        ns, xs, qs = [], [], []
        for d in open_[i:]:
            n_d, x_d = np.atleast_2d(d.n), np.atleast_2d(d.x)
            q_d = np.broadcast_to(np.atleast_2d(d.q), n_d.shape) if n_d.size else \
                np.zeros(n_d.shape)
            n = np.zeros((len(subjects), n_d.shape[1]))
            x = np.zeros_like(n)
            q = np.full_like(n, 0.5)  # rows without coups: any valid q
            for k, s in enumerate(d.subjects):
                j = row.get(s)
                if j is not None:
                    n[j], x[j], q[j] = n_d[k], x_d[k], q_d[k]
            ns.append(n)
            xs.append(x)
            qs.append(q)
        out.append(Window(start=first.day, tally=Tally(
            subjects=subjects, n=np.hstack(ns), x=np.hstack(xs), q=np.hstack(qs))))
    return out


def look_windows(family_windows: dict[str, list[Window]],
                 levels: dict[int, dict[str, float]]) -> list[LiveAlert]:
    """Every crossed (subject, window) at this look: ``levels[start]`` is
    the window's per-subject levels (``shift_levels`` of its first day's
    budget). Each alert carries ``since`` = its window's start."""
    out: list[LiveAlert] = []
    for family, wins in family_windows.items():
        for w in wins:
            if w.start not in levels:
                raise ValueError(f"no levels for the window started on {w.start}")
            for a in look({family: w.tally}, levels[w.start]):
                out.append(replace(a, since=w.start))
    return out


def raise_once(crossed: list[LiveAlert],
               charged: dict[tuple[str, str], set[int]]) -> list[LiveAlert]:
    """The alerts to raise now, one per (family, subject) at most: a subject
    is raised when one of its crossed windows was not charged to an alert
    before (``charged``: (family, subject) -> window starts); the alert
    raised is that subject's strongest uncharged window, carrying in
    ``windows`` every window of his that has crossed (all charged to it).
    A window that crossed is charged once, so the false alerts are at most
    the false window crossings (the bound)."""
    by_subject: dict[tuple[str, str], list[LiveAlert]] = {}
    for a in crossed:
        if a.since is None:
            raise ValueError("raise_once takes windows' alerts (since set)")
        by_subject.setdefault((a.family, a.subject), []).append(a)
    out = []
    for key, alerts in by_subject.items():
        seen = charged.get(key, set())
        fresh = [a for a in alerts if a.since not in seen]
        if not fresh:
            continue
        best = max(fresh, key=lambda a: (a.log_lambda, -a.since))
        out.append(replace(best, windows=tuple(sorted({a.since for a in alerts}))))
    return out
