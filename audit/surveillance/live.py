"""The live surveillance's path (issue 38): one look at each open gaming day,
over the window of days its tests run.

A test is started every gaming day and runs SURVEILLANCE_LIVE_WINDOW_DAYS
(W) days (livetests, "windows of several gaming days"): a look at tonight's
open day T covers the days T-W+1..T. For each day of it with coups:

- its groups (live_days.py: one GROUP BY of its current coups; tonight's
  read at every look, a closed day's read once and kept under its rollups'
  key);
- its trailing figures (the croupiers' reference rate, the floor's mix) and
  each play's banker-win probability at that day's mix: each day's null is
  its own;
- per family a ``livetests.DayTally``, summed from the groups with numpy:
  ``croupier``: coups he dealt and their false draws against the day's
  reference (the false draws per coup of the REFERENCE_DAYS closed days
  before it; with fewer than REFERENCE_MIN_COUPS coups there, that day's
  rest of the floor, and the evidence says so); ``banker`` and ``table``:
  coups and banker wins grouped by the null banker-win probability, each
  play's exact odds (collect.play_odds) with its free cells at the floor's
  mix of the latest surveyed day before that day (none: every free cell
  drawn, and the evidence says so).

Then ``livetests.windows`` per family; each window started on day s gets
the levels of day s's budget (``shift_levels(SURVEILLANCE_LIVE_ALPHA,
budget_for(the subject counts of day s-1, the tables that dealt on day
s))``; tonight's: ``night_budget``, fixed at the night's first look and
only growing); ``look_windows`` says which (subject, window) crossed and
``raise_once`` which subjects to raise: a subject at most once a look, and
only for a crossed window not charged to an earlier alert (the windows the
live flags of the last W days charged: live_write.live_charged, one query).
live_write.py raises each once per subject, test and gaming day.

One look at a time: a PostgreSQL advisory lock tried at the start (a look
that finds it taken returns at once: the next tick looks again), held with
the writes in one transaction, so two looks never raise a flag twice.

The budget, the reference rate and the words' "once in N shifts" are the
calibrated ones (``livetests.budget_for``, ``reference_rate``,
``chance_in_shifts``: what ``make calibrate`` measures is what runs).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import date, timedelta

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from audit.reports.expectation import rules_play
from tables.models import HouseRules, TableSession

from . import livetests
from .collect import play_odds
from .live_days import (  # noqa: F401 (the live path's names, kept here)
    GROUP_FIELDS,
    KEEP_DAYS,
    REFERENCE_DAYS,
    REFERENCE_MIN_COUPS,
    TRAILING_TTL,
    Groups,
    Reference,
    Trailing,
    closed_groups,
    day_groups,
    subject_counts,
    trailing,
    trailing_forget,
)
from .live_write import (  # noqa: F401
    CODES,
    live_alerts_prepare,
    live_alerts_write,
    live_charged,
)
from .mix import ChoiceMix

log = logging.getLogger(__name__)

LOOK_LOCK = 0x53564C4B  # "SVLK": one look at a time (PostgreSQL)
FAMILIES = ("croupier", "banker", "table")


# -- the budget, fixed at the night's first look -------------------------------

_budgets: dict[date, dict[str, int]] = {}  # this process's budget per day


def night_budget(day: date, previous: dict[str, int],
                 open_tables: int) -> dict[str, int]:
    """``livetests.budget_for`` for the night, which only grows: a table
    closing late in the night does not lower the budget the earlier looks
    were made under (the bound holds while each family stays within the
    smallest budget any look used)."""
    fresh = livetests.budget_for(previous, open_tables)
    kept = _budgets.get(day)
    budget = fresh if kept is None else {f: max(kept[f], fresh[f]) for f in fresh}
    if len(_budgets) > 8:  # old nights
        _budgets.clear()
    _budgets[day] = budget
    return budget


# -- a day's tallies ---------------------------------------------------------------

def play_probabilities(plays: list[tuple], mix: ChoiceMix | None) -> np.ndarray:
    """Each (house-rules version, tableau) pair's banker-win probability at
    the floor's mix (one query; play_probabilities_of for several days)."""
    return play_probabilities_of([(plays, mix)])[0]


def play_probabilities_of(days: list[tuple[list[tuple], ChoiceMix | None]],
                          ) -> list[np.ndarray]:
    """The same for several days' (plays, mix): the versions read in one
    query, the odds computed once per distinct play and mix (a thousand
    tables share a few; collect.play_odds keeps them)."""
    wanted = {r for plays, _ in days for r, _ in plays}
    versions = HouseRules.objects.select_related("tableau").in_bulk(wanted) \
        if wanted else {}
    out = []
    for plays, mix in days:
        keys = [rules_play(versions[r], tv or None) for r, tv in plays]
        odds = {key: play_odds(key, mix)[0] for key in set(keys)}
        out.append(np.array([odds[k] for k in keys], dtype=np.float64))
    return out


def _by(keys: np.ndarray, group: np.ndarray, values: np.ndarray, groups: int):
    """Sum ``values`` per (subject, group): the subjects and an (S, G) array
    (one bincount)."""
    subjects, idx = np.unique(keys, return_inverse=True)
    width = max(groups, 1)
    flat = np.bincount(idx.ravel() * width + group, weights=values,
                       minlength=len(subjects) * width)
    return subjects, flat.round().astype(np.int64).reshape(len(subjects), width)


def tallies(g: Groups, t: Trailing, q_play: np.ndarray,
            ) -> tuple[dict[str, livetests.Tally], dict[int, float]]:
    """The three families' tallies from a day's groups, against that day's
    null; and each watched croupier's reference rate."""
    croupiers, n_c = _by(g.croupier, np.zeros(len(g), np.int64), g.n, 1)
    _, x_c = _by(g.croupier, np.zeros(len(g), np.int64), g.false_draws, 1)
    if t.reference.source == "trailing":
        q_c = [t.reference.rate] * len(croupiers)
    else:  # the day's rest of the floor, croupier by croupier
        big_n, big_x = int(n_c.sum()), int(x_c.sum())
        q_c = [livetests.reference_rate(big_x - int(x_c[i, 0]),
                                        big_n - int(n_c[i, 0]))
               for i in range(len(croupiers))]
    # a croupier with no reference to go on (no other coups yet, or every
    # one a false draw) is not watched on that day
    watched = [i for i, q in enumerate(q_c) if q is not None]
    out = {"croupier": livetests.Tally(
        subjects=tuple(f"croupier:{int(croupiers[i])}" for i in watched),
        n=n_c[watched], x=x_c[watched],
        q=np.array([q_c[i] for i in watched], dtype=float).reshape(-1, 1))}
    # the groups of coups by their null probability: a thousand tables'
    # versions of the same house rules are one group
    q_values, q_group = np.unique(q_play, return_inverse=True)
    group = q_group.ravel()[g.play]
    for family, keys in (("banker", g.banker.astype(str)), ("table", g.table)):
        subjects, n = _by(keys, group, g.n, len(q_values))
        _, x = _by(keys, group, g.wins, len(q_values))
        names = [str(s) for s in subjects] if family == "banker" else [
            f"table:{int(s)}" for s in subjects]
        out[family] = livetests.Tally(subjects=tuple(names), n=n, x=x, q=q_values)
    return out, {int(croupiers[i]): float(q_c[i]) for i in watched}


@dataclass(eq=False)
class DayPart:
    """One gaming day of a look's window: its groups, its null (trailing
    figures, each play's banker-win probability, each croupier's
    reference) and each family's DayTally."""

    day: date
    groups: Groups
    trailing: Trailing
    q_play: np.ndarray
    q_croupier: dict[int, float]
    tallies: dict[str, livetests.DayTally]


def day_part(day: date, g: Groups, t: Trailing, q_play: np.ndarray) -> DayPart:
    found, q_c = tallies(g, t, q_play) if len(g) else ({}, {})
    nobody = livetests.Tally((), np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(1))
    days = {}
    for family in FAMILIES:
        tally = found.get(family, nobody)
        days[family] = livetests.DayTally(day.toordinal(), tally.subjects, tally.n,
                                          tally.x, tally.q)
    return DayPart(day=day, groups=g, trailing=t, q_play=q_play, q_croupier=q_c,
                   tallies=days)


@dataclass(eq=False)
class WindowLook:
    """One look at tonight's open day ``day`` over its window: each day's
    part (oldest first, tonight last), each window start's budget and
    levels, the windows, every crossed (subject, window) and the alerts to
    raise (``raise_once``, set by live_look)."""

    day: date
    window_days: int
    parts: dict[date, DayPart]
    budgets: dict[date, dict[str, int]]
    levels_of: dict[date, dict[str, float]]
    windows: dict[str, list[livetests.Window]]
    crossed: list = field(default_factory=list)
    raised: list = field(default_factory=list)

    @property
    def tonight(self) -> DayPart:
        return self.parts[self.day]

    @property
    def groups(self) -> Groups:
        return self.tonight.groups

    @property
    def trailing(self) -> Trailing:
        return self.tonight.trailing

    @property
    def q_play(self) -> np.ndarray:
        return self.tonight.q_play

    @property
    def q_croupier(self) -> dict[int, float]:
        return self.tonight.q_croupier

    @property
    def tallies(self) -> dict[str, livetests.DayTally]:
        """Tonight's tallies (the subjects who play tonight)."""
        return {f: t for f, t in self.tonight.tallies.items() if t.subjects}

    @property
    def budget(self) -> dict[str, int]:
        return self.budgets[self.day]

    @property
    def levels(self) -> dict[str, float]:
        return self.levels_of[self.day]

    def window(self, family: str, since: int) -> livetests.Window:
        return next(w for w in self.windows[family] if w.start == since)


# Each day's part as last computed, with the groups and trailing figures it
# was computed from: a closed day's (the same kept objects) is not summed
# again; tonight's (fresh groups at every look) always is.
_parts: dict[date, tuple[Groups, Trailing, DayPart]] = {}


def _day_parts(days: list[date], have: dict[date, Groups],
               trails: dict[date, Trailing]) -> dict[date, DayPart]:
    parts, need = {}, []
    for d in days:
        hit = _parts.get(d)
        if hit is not None and hit[0] is have[d] and hit[1] is trails[d]:
            parts[d] = hit[2]
        else:
            need.append(d)
    q_plays = play_probabilities_of([(have[d].plays, trails[d].mix) for d in need])
    for d, q in zip(need, q_plays, strict=True):
        parts[d] = day_part(d, have[d], trails[d], q)
        _parts[d] = (have[d], trails[d], parts[d])
    for old in [d for d in _parts if d < max(days) - timedelta(days=KEEP_DAYS)]:
        del _parts[old]
    return {d: parts[d] for d in days}


def look_window(day: date, *, open_tables: int, window_days: int | None = None,
                groups: dict[date, Groups] | None = None) -> WindowLook:
    """The look at open day ``day`` over its window: ``groups`` are the
    open days' (read by the caller; ``day``'s read here if missing), the
    closed days' come from live_days.closed_groups."""
    w = settings.SURVEILLANCE_LIVE_WINDOW_DAYS if window_days is None \
        else int(window_days)
    # the window's days and the day before its first (its budget)
    span = [day - timedelta(days=k) for k in range(w, -1, -1)]
    have = {d: g for d, g in (groups or {}).items() if d in span}
    if day not in have:
        have[day] = day_groups(day)
    have.update(closed_groups([d for d in span if d not in have]))
    days = [d for d in span[1:] if len(have[d]) or d == day]
    trails = {d: trailing(d, before=have[d - timedelta(days=1)]) for d in days}
    parts = _day_parts(days, have, trails)
    budgets = {}
    for d in days:
        previous = subject_counts(have[d - timedelta(days=1)])
        budgets[d] = night_budget(d, previous, open_tables) if d == day else \
            livetests.budget_for(previous, len(np.unique(have[d].table)))
    alpha = settings.SURVEILLANCE_LIVE_ALPHA
    levels_of = {d: livetests.shift_levels(alpha, b) for d, b in budgets.items()}
    wins = {f: livetests.windows([p.tallies[f] for p in parts.values()],
                                 window_days=w) for f in FAMILIES}
    look = WindowLook(day=day, window_days=w, parts=parts, budgets=budgets,
                      levels_of=levels_of, windows=wins)
    look.crossed = livetests.look_windows(
        wins, {d.toordinal(): lv for d, lv in levels_of.items()})
    return look


def open_sessions_days() -> list[date]:
    """Each open session's gaming day (one row per open table)."""
    return list(TableSession.objects.filter(closed_at__isnull=True)
                .order_by().values_list("gaming_day", flat=True))


def open_days() -> list[date]:
    """The gaming days of the open sessions (the shifts still dealing)."""
    return sorted(set(open_sessions_days()))


_local_look = threading.Lock()  # SQLite: one look at a time in this process


def live_look(*, days: list[date] | None = None) -> dict:
    """One look of the live surveillance (the task's body): every open gaming
    day (or ``days``) over its window, its subjects raised once. Returns what
    it did; ``{"skipped": ...}`` when another look holds the lock."""

    started = time.perf_counter()
    if connection.vendor != "postgresql" and not _local_look.acquire(blocking=False):
        return {"skipped": "another look is running"}
    try:
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOOK_LOCK])
                    if not cursor.fetchone()[0]:
                        return {"skipped": "another look is running"}
                    # The GROUP BY's cost estimate calls PostgreSQL's JIT,
                    # whose compiling took 1.3 of the look's 1.5 s at 100,000
                    # coups for 0.2 s of work (bench/bench_live.py).
                    cursor.execute("SET LOCAL jit = off")
                    # One core for the look: a parallel aggregate took both
                    # of a small machine's, and the coups and the floor's
                    # pages waited behind it (bench_floor.py at 1,000 tables).
                    cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            out = _look(days)
    finally:
        if connection.vendor != "postgresql":
            _local_look.release()
    out["seconds"] = round(time.perf_counter() - started, 3)
    if out["raised"]:
        log.info("live surveillance raised %s alert(s): %s", out["raised"], out)
    return out


def _look(days: list[date] | None) -> dict:
    """The look inside live_look's transaction: every read, then the writes."""
    sessions = open_sessions_days()
    still_open = set(sessions)
    days = sorted(still_open) if days is None else sorted(days)
    w = settings.SURVEILLANCE_LIVE_WINDOW_DAYS
    # an open day's groups move with every coup: read once for this look
    fresh = {d: day_groups(d) for d in sorted(still_open | set(days))
             if any(0 <= (t - d).days <= w for t in days)}
    looks = [look_window(t, open_tables=len(sessions), window_days=w, groups=fresh)
             for t in days]
    charged = live_charged(days[0] - timedelta(days=w - 1)) \
        if any(lk.crossed for lk in looks) else {}
    out = {"days": [d.isoformat() for d in days], "coups": 0, "crossed": 0,
           "raised": 0}
    ready = []
    for lk in looks:  # oldest open day first: its alerts charge their windows
        lk.raised = livetests.raise_once(lk.crossed, charged)
        prepared = live_alerts_prepare(lk)
        for a in prepared.alerts:
            charged.setdefault((a.family, a.subject), set()).update(a.windows)
        ready.append(prepared)
    # Writes last: from the first change-log row to the commit the trail's
    # chain is held, and every coup waits for it.
    for prepared in ready:
        out["coups"] += prepared.look.groups.coups
        out["crossed"] += len(prepared.look.crossed)
        out["raised"] += live_alerts_write(prepared)
    return out


def live_dispatch(shoe_id: int | None = None) -> bool:
    """Ask the workers for a look (a shoe closed): sent by name, after the
    close's commit (tables.services.hooks). False, and logged, when the
    broker is down (beat's next look comes anyway) or when Celery runs eagerly
    (the embedded set-up: the look would run inside the close's request;
    ``manage.py surveillance_live`` looks there)."""
    from casino.celery import app, by_name, publish

    if app.conf.task_always_eager:
        return False
    try:
        publish(by_name("audit.surveillance_live", shoe_id))
    except Exception as exc:  # kombu/redis raise several kinds; all mean "down"
        log.warning("live surveillance look not sent (shoe %s): %s", shoe_id, exc)
        return False
    return True
