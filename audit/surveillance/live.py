"""The live surveillance's path (issue 38): one look at the open gaming day.

A look reads each open gaming day's tallies with SQL aggregates, never coup
by coup: ONE GROUP BY over the day's current coups (no later revision: the
anti-join of tables.rollups.current_coups; a false draw is a current coup
with a ``false_draw`` finding, as collect.py counts it) by table, session,
croupier (the coup's ``entered_by``), banker identity (the turn's player
card, else seat and session: detect.py's bankers) and play (house-rules
version and tableau). Its rows are groups, a few per seat and session, and
the three families are summed from them with numpy:

- ``croupier``: coups he dealt and their false draws, against the floor's
  reference rate: the false draws per coup of the trailing
  REFERENCE_DAYS closed gaming days; with fewer than REFERENCE_MIN_COUPS
  coups there (a new casino), tonight's rest of the floor (every other
  croupier's coups tonight), and the evidence says so;
- ``banker`` and ``table``: coups and banker wins grouped by the null
  banker-win probability: each play's exact odds (collect.play_odds) with
  its free cells at the floor's mix of the latest surveyed day before this
  one (the nightly run's summary); none yet: every free cell drawn, and the
  evidence says so.

Levels come from ``livetests.shift_levels(settings.SURVEILLANCE_LIVE_ALPHA,
budget)``, the crossed subjects from ``livetests.look``; each is raised once
per subject, test and gaming day (live_write.py). One look at a time: a
PostgreSQL advisory lock tried at the start (a look that finds it taken
returns at once: the next tick looks again), held with the writes in one
transaction, so two looks never raise a flag twice.

The trailing reference, the previous day's counts (the budget) and the mix
change only when a day closes: each process computes them once per gaming
day and keeps them TRAILING_TTL seconds.

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
from django.db.models import Count, Exists, OuterRef, Q

from audit.reports.expectation import rules_play
from tables.models import Finding, HouseRules, TableDayRollup, TableSession
from tables.rollups import current_coups

from ..models import SurveillanceRun
from . import livetests
from .collect import play_odds
from .live_write import CODES, live_alerts_prepare, live_alerts_write  # noqa: F401
from .mix import ChoiceMix

log = logging.getLogger(__name__)

LOOK_LOCK = 0x53564C4B  # "SVLK": one look at a time (PostgreSQL)
REFERENCE_DAYS = 28
REFERENCE_MIN_COUPS = 5_000
TRAILING_TTL = 3600.0  # seconds a process keeps a day's trailing figures
FAMILIES = ("croupier", "banker", "table")
GROUP_FIELDS = ("shoe__session__table_id", "shoe__session_id", "entered_by_id",
                "turn__player_card", "banker_seat", "rules_id", "tableau_version")


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


# -- the tallies ----------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Groups:
    """The day's GROUP BY rows as columns (one row per table, session,
    croupier, banker identity and play)."""

    table: np.ndarray
    session: np.ndarray
    croupier: np.ndarray
    banker: np.ndarray  # object: "card:<n>" / "seat:<s>@session:<id>"
    play: np.ndarray  # index into plays
    plays: list[tuple]  # (rules id, tableau version)
    n: np.ndarray
    wins: np.ndarray
    false_draws: np.ndarray

    def __len__(self) -> int:
        return len(self.n)

    @property
    def coups(self) -> int:
        return int(self.n.sum())


def day_groups(day: date) -> Groups:
    """The day's tallies: one aggregate query (GROUP BY) over its current
    coups; its rows are groups, not coups."""
    false_draw = Finding.objects.filter(coup=OuterRef("pk"), code="false_draw")
    rows = list(
        current_coups().filter(gaming_day=day).order_by()
        .alias(has_false_draw=Exists(false_draw))
        .values_list(*GROUP_FIELDS)
        .annotate(n=Count("id"), wins=Count("id", filter=Q(outcome="banker")),
                  fd=Count("id", filter=Q(has_false_draw=True))))
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(empty, empty, empty, np.zeros(0, dtype=object), empty, [],
                      empty, empty, empty)
    table, session, croupier, card, seat, rules, tableau, n, wins, fd = zip(
        *rows, strict=True)
    plays: dict[tuple, int] = {}
    play = [plays.setdefault((r, t), len(plays)) for r, t in zip(
        rules, tableau, strict=True)]
    banker = np.empty(len(rows), dtype=object)
    banker[:] = [f"card:{c}" if c else f"seat:{s}@session:{x}"
                 for c, s, x in zip(card, seat, session, strict=True)]

    def ints(col) -> np.ndarray:
        return np.fromiter((0 if v is None else v for v in col), np.int64,
                           len(rows))

    return Groups(table=ints(table), session=ints(session), croupier=ints(croupier),
                  banker=banker, play=np.asarray(play, dtype=np.int64),
                  plays=list(plays), n=ints(n), wins=ints(wins),
                  false_draws=ints(fd))


def subject_counts(g: Groups) -> dict[str, int]:
    return {"croupier": len(np.unique(g.croupier)),
            "banker": len(set(g.banker.tolist())),
            "table": len(np.unique(g.table))}


@dataclass(frozen=True)
class Reference:
    """The croupiers' reference: the trailing closed days' false draws per
    coup, or (too few coups there) tonight's rest of the floor."""

    source: str  # "trailing" | "tonight"
    events: int
    coups: int
    days: int

    @property
    def rate(self) -> float | None:
        """The upper confidence bound of the rate (livetests.reference_rate);
        None: no coups to go on, the croupiers are not watched."""
        return livetests.reference_rate(self.events, self.coups)


@dataclass(frozen=True)
class Trailing:
    """What a look reads of the days before: the reference, the previous
    day's subject counts (the budget) and the floor's mix."""

    reference: Reference
    previous: dict[str, int]
    mix: ChoiceMix | None
    mix_from: str | None  # the gaming day (ISO) whose mix it is, or None


_trailing_cache: dict[date, tuple[float, Trailing]] = {}
_cache_lock = threading.Lock()


def trailing(day: date) -> Trailing:
    """The trailing figures for ``day``, computed once per process and day
    (kept TRAILING_TTL seconds)."""
    now = time.monotonic()
    with _cache_lock:
        hit = _trailing_cache.get(day)
        if hit is not None and now - hit[0] < TRAILING_TTL:
            return hit[1]
    value = _shared_trailing(day)
    with _cache_lock:
        for old in [d for d in _trailing_cache if d < day - timedelta(days=2)]:
            del _trailing_cache[old]
        _trailing_cache[day] = (now, value)
    return value


def _shared_trailing(day: date) -> Trailing:
    """The day's trailing figures from the shared cache, else computed and
    put there: the worker's processes each look in turn, and each computing
    them (a second and more of the database's time at 1,000 tables) held the
    floor's pages back. The cache is the signed one (casino/cache.py): a
    Redis writer can delete the entry (computed again) or put back the app's
    own entry of that day, never write figures of his own."""
    from django.core.cache import cache

    key = f"live:trailing:{day.isoformat()}"
    try:
        held = cache.get(key)
    except Exception:  # noqa: BLE001 - the cache down: compute, as without one
        held = None
    if held is not None:
        try:
            return _trailing_decode(held)
        except (KeyError, TypeError, ValueError):
            log.warning("live surveillance: the cached trailing figures of %s "
                        "do not read; computed again", day)
    value = _trailing(day)
    try:
        cache.set(key, _trailing_encode(value), timeout=int(TRAILING_TTL))
    except Exception:  # noqa: BLE001 - the cache down: nothing kept
        pass
    return value


def _trailing_encode(t: Trailing) -> dict:
    r = t.reference
    return {"reference": [r.source, r.events, r.coups, r.days],
            "previous": dict(t.previous),
            "mix": None if t.mix is None else {c: list(v) for c, v in
                                               t.mix.counts.items()},
            "mix_from": t.mix_from}


def _trailing_decode(held: dict) -> Trailing:
    source, events, coups, days = held["reference"]
    if source not in ("trailing", "tonight"):
        raise ValueError(source)
    mix = held["mix"]
    return Trailing(
        Reference(str(source), int(events), int(coups), int(days)),
        {str(k): int(v) for k, v in held["previous"].items()},
        None if mix is None else ChoiceMix({str(c): (int(d), int(st))
                                            for c, (d, st) in mix.items()}),
        None if held["mix_from"] is None else str(held["mix_from"]))


def trailing_forget() -> None:
    """Drop the cached trailing figures (tests; a day corrected at length)."""
    from django.core.cache import cache

    with _cache_lock:
        _trailing_cache.clear()
    try:
        cache.delete_many([f"live:trailing:{d.isoformat()}"
                           for d in _recent_days()])
    except Exception:  # noqa: BLE001 - the cache down: nothing kept
        pass


def _recent_days() -> list[date]:
    """Days whose shared trailing figures trailing_forget drops: those of
    the open sessions and a few around today."""
    from django.utils import timezone

    today = timezone.localdate()
    return sorted({*open_days(), *(today + timedelta(days=k) for k in range(-3, 2))})


def _trailing(day: date) -> Trailing:
    coups, events = _trailing_counts(day)
    reference = Reference("trailing", events, coups, REFERENCE_DAYS) \
        if coups >= REFERENCE_MIN_COUPS else Reference("tonight", 0, 0, 0)
    previous = subject_counts(day_groups(day - timedelta(days=1)))
    mix, mix_from = _floor_mix(day)
    return Trailing(reference, previous, mix, mix_from)


def _trailing_counts(day: date) -> tuple[int, int]:
    """The floor's coups and false draws over the REFERENCE_DAYS closed days
    before ``day``, from the table-day rollups the coups keep in step (a few
    rows per table and day: at 1,000 tables 28,000 rows, not the 1.7 million
    coups, whose aggregate, run by PostgreSQL on both cores, held the floor's
    pages for a second and more at each process's first look). A rollup
    counts false-draw findings, so a coup with two counts twice: the
    reference can only come out higher, which costs power, never the bound."""
    first = day - timedelta(days=REFERENCE_DAYS)
    coups = events = 0
    for n, findings in (TableDayRollup.objects
                        .filter(gaming_day__range=(first, day - timedelta(days=1)))
                        .order_by().values_list("coups", "findings").iterator(5000)):
        coups += int(n or 0)
        events += int((findings or {}).get("false_draw", 0) or 0)
    return coups, min(events, coups)


def _floor_mix(day: date) -> tuple[ChoiceMix | None, str | None]:
    """The mix of free choices of the latest surveyed day before ``day``
    (a nightly or manual run's summary), within the trailing days."""
    found = (SurveillanceRun.objects
             .filter(status=SurveillanceRun.Status.DONE, to_day__lt=day,
                     to_day__gte=day - timedelta(days=REFERENCE_DAYS))
             .exclude(source=SurveillanceRun.Source.LIVE)
             .order_by("-to_day", "-pk").values_list("to_day", "summary").first())
    if found is None:
        return None, None
    to_day, summary = found
    cells = ((summary or {}).get("mix") or {}).get("cells") or []
    counts = {}
    for c in cells:
        try:
            counts[str(c["cell"])] = (int(c["draws"]), int(c["stands"]))
        except (KeyError, TypeError, ValueError):
            continue
    return (ChoiceMix(counts), to_day.isoformat()) if counts else (None, None)


# -- the look -------------------------------------------------------------------

def play_probabilities(plays: list[tuple], mix: ChoiceMix | None) -> np.ndarray:
    """Each (house-rules version, tableau) pair's banker-win probability at
    the floor's mix: the versions read in one query, the odds computed once
    per distinct play (a thousand tables share a few)."""
    versions = HouseRules.objects.select_related("tableau").in_bulk(
        {r for r, _ in plays})
    keys = [rules_play(versions[r], tv or None) for r, tv in plays]
    odds = {key: play_odds(key, mix)[0] for key in set(keys)}
    return np.array([odds[k] for k in keys], dtype=np.float64)


@dataclass(eq=False)
class DayLook:
    """One gaming day at one look: its groups, the tallies, the levels and
    what crossed (livetests.LiveAlert)."""

    day: date
    groups: Groups
    trailing: Trailing
    budget: dict[str, int]
    levels: dict[str, float]
    tallies: dict[str, livetests.Tally]
    q_play: np.ndarray  # each play's banker-win probability
    q_croupier: dict[int, float]  # each croupier's reference rate
    crossed: list = field(default_factory=list)


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
    """The three families' tallies from the day's groups."""
    croupiers, n_c = _by(g.croupier, np.zeros(len(g), np.int64), g.n, 1)
    _, x_c = _by(g.croupier, np.zeros(len(g), np.int64), g.false_draws, 1)
    if t.reference.source == "trailing":
        q_c = [t.reference.rate] * len(croupiers)
    else:  # tonight's rest of the floor, croupier by croupier
        big_n, big_x = int(n_c.sum()), int(x_c.sum())
        q_c = [livetests.reference_rate(big_x - int(x_c[i, 0]),
                                        big_n - int(n_c[i, 0]))
               for i in range(len(croupiers))]
    # a croupier with no reference to go on (no other coups yet, or every
    # one a false draw) is not watched at this look
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


def open_days() -> list[date]:
    """The gaming days of the open sessions (the shifts still dealing)."""
    return sorted(set(TableSession.objects.filter(closed_at__isnull=True)
                      .order_by().values_list("gaming_day", flat=True)))


def look_day(day: date, *, open_tables: int) -> DayLook:
    """One day's look: tallies, levels, and the subjects that crossed."""
    t = trailing(day)
    g = day_groups(day)
    q_play = play_probabilities(g.plays, t.mix)
    budget = night_budget(day, t.previous, open_tables)
    levels = livetests.shift_levels(settings.SURVEILLANCE_LIVE_ALPHA, budget)
    found, q_c = tallies(g, t, q_play) if len(g) else ({}, {})
    result = DayLook(day=day, groups=g, trailing=t, budget=budget, levels=levels,
                     tallies=found, q_play=q_play, q_croupier=q_c)
    if found:
        result.crossed = livetests.look(found, levels)
    return result


_local_look = threading.Lock()  # SQLite: one look at a time in this process


def live_look(*, days: list[date] | None = None) -> dict:
    """One look of the live surveillance (the task's body): every open gaming
    day (or ``days``), its crossed subjects raised once. Returns what it did;
    ``{"skipped": ...}`` when another look holds the lock."""

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
            days = open_days() if days is None else list(days)
            open_tables = TableSession.objects.filter(closed_at__isnull=True).count()
            out = {"days": [d.isoformat() for d in days], "coups": 0, "crossed": 0,
                   "raised": 0}
            ready = [live_alerts_prepare(look_day(day, open_tables=open_tables))
                     for day in days]
            # Writes last: from the first change-log row to the commit the
            # trail's chain is held, and every coup waits for it.
            for prepared in ready:
                out["coups"] += prepared.look.groups.coups
                out["crossed"] += len(prepared.look.crossed)
                out["raised"] += live_alerts_write(prepared)
    finally:
        if connection.vendor != "postgresql":
            _local_look.release()
    out["seconds"] = round(time.perf_counter() - started, 3)
    if out["raised"]:
        log.info("live surveillance raised %s alert(s): %s", out["raised"], out)
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
