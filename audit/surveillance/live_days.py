"""What a live look reads of each gaming day (issue 38; live.py looks).

A day's **groups**: ONE GROUP BY over its current coups (no later revision:
the anti-join of tables.rollups.current_coups; a false draw is a current coup
with a ``false_draw`` finding, as collect.py counts it) by table, session,
croupier (the coup's ``entered_by``), banker identity (the turn's player
card, else seat and session: detect.py's bankers) and play (house-rules
version and tableau). Its rows are groups, a few per seat and session.

An open day's groups are read at every look. A closed day's are read once
and kept, per process and in the shared signed cache (casino/cache.py),
under a key that holds the day's table-day rollup sums (one aggregate over
a few rows per table and day, for every closed day of the window at once):
a correction of a closed day's coup moves its rollups (outcome, findings,
stakes), so the next look reads that day again; one that moves none of them
is seen within TRAILING_TTL, when the kept groups expire.

A day's **trailing figures** (the croupiers' reference, the previous day's
subject counts for the budget, the floor's mix) change only when a day
closes: computed once per day and kept TRAILING_TTL seconds, shared the
same way.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
from django.db.models import Count, Exists, IntegerField, Max, OuterRef, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from tables.models import Finding, TableDayRollup, TableSession
from tables.rollups import current_coups

from ..models import SurveillanceRun
from . import livetests
from .mix import ChoiceMix

log = logging.getLogger(__name__)

REFERENCE_DAYS = 28
REFERENCE_MIN_COUPS = 5_000
TRAILING_TTL = 3600.0  # seconds a day's trailing figures and closed groups are kept
KEEP_DAYS = 31  # days back a process keeps (the longest window is 28)
GROUP_FIELDS = ("shoe__session__table_id", "shoe__session_id", "entered_by_id",
                "turn__player_card", "banker_seat", "rules_id", "tableau_version")


# -- a day's groups ---------------------------------------------------------------

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


def _empty() -> Groups:
    empty = np.zeros(0, dtype=np.int64)
    return Groups(empty, empty, empty, np.zeros(0, dtype=object), empty, [],
                  empty, empty, empty)


def _columns(rows: list) -> Groups:
    if not rows:
        return _empty()
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


def day_groups(day: date) -> Groups:
    """The day's tallies: one aggregate query (GROUP BY) over its current
    coups; its rows are groups, not coups."""
    false_draw = Finding.objects.filter(coup=OuterRef("pk"), code="false_draw")
    return _columns(list(
        current_coups(gaming_day=day).order_by()
        .alias(has_false_draw=Exists(false_draw))
        .values_list(*GROUP_FIELDS)
        .annotate(n=Count("id"), wins=Count("id", filter=Q(outcome="banker")),
                  fd=Count("id", filter=Q(has_false_draw=True)))))


def subject_counts(g: Groups) -> dict[str, int]:
    return {"croupier": len(np.unique(g.croupier)),
            "banker": len(set(g.banker.tolist())),
            "table": len(np.unique(g.table))}


def groups_encode(g: Groups) -> dict:
    return {"table": g.table.tolist(), "session": g.session.tolist(),
            "croupier": g.croupier.tolist(), "banker": [str(b) for b in g.banker],
            "play": g.play.tolist(), "plays": [[r, t] for r, t in g.plays],
            "n": g.n.tolist(), "wins": g.wins.tolist(),
            "false_draws": g.false_draws.tolist()}


def groups_decode(held: dict) -> Groups:
    """The groups a cache entry holds; ValueError (or KeyError, TypeError)
    for anything that is not the shape groups_encode writes."""
    cols = {k: held[k] for k in ("table", "session", "croupier", "play", "n",
                                 "wins", "false_draws")}
    size = len(held["banker"])
    arrays = {}
    for name, col in cols.items():
        if not isinstance(col, list) or len(col) != size or not all(
                type(v) is int for v in col):
            raise ValueError(f"column {name}")
        arrays[name] = np.asarray(col, dtype=np.int64).reshape(size)
    if not all(isinstance(b, str) for b in held["banker"]):
        raise ValueError("column banker")
    plays = [(int(r), str(t)) for r, t in held["plays"]]
    if size and not (0 <= arrays["play"].min() and arrays["play"].max() < len(plays)):
        raise ValueError("column play")
    if (arrays["n"] < 0).any() or (arrays["wins"] > arrays["n"]).any() or (
            arrays["false_draws"] > arrays["n"]).any():
        raise ValueError("counts")
    banker = np.empty(size, dtype=object)
    banker[:] = held["banker"]
    return Groups(table=arrays["table"], session=arrays["session"],
                  croupier=arrays["croupier"], banker=banker, play=arrays["play"],
                  plays=plays, n=arrays["n"], wins=arrays["wins"],
                  false_draws=arrays["false_draws"])


# -- closed days' groups, kept ---------------------------------------------------------

_groups_cache: dict[date, tuple[str, float, Groups]] = {}
_shared_keys: set[str] = set()  # what this process put in the shared cache
_cache_lock = threading.Lock()


def rollup_keys(days: list[date]) -> dict[date, str]:
    """Each day's key: a digest of its table-day rollup sums (one aggregate
    query for all the days); a day without rollups has no coups (no key)."""
    if not days:
        return {}
    rows = (TableDayRollup.objects.filter(gaming_day__in=days).order_by()
            .values("gaming_day")
            .annotate(rows=Count("id"), last=Max("id"), coups=Sum("coups"),
                      wins=Sum("banker_wins"), punter=Sum("punter_wins"),
                      ties=Sum("ties"), covered=Sum("covered"),
                      commission=Sum("commission"),
                      fd=Sum(Cast(KT("findings__false_draw"), IntegerField())))
            .values_list("gaming_day", "rows", "last", "coups", "wins", "punter",
                         "ties", "covered", "commission", "fd"))
    out = {}
    for day, *sums in rows:
        if not sums[2]:  # no coups
            continue
        text = "|".join(str(v) for v in sums)
        out[day] = hashlib.sha256(text.encode()).hexdigest()[:24]
    return out


def _shared_key(day: date, key: str) -> str:
    return f"live:groups:{day.isoformat()}:{key}"


def closed_groups(days: list[date]) -> dict[date, Groups]:
    """The groups of closed days: kept per process and in the shared cache
    under each day's rollup key (``rollup_keys``: one query), read from the
    coups (one GROUP BY a day) only for a day not kept. An entry of the
    shared cache that does not read is computed again."""
    from django.core.cache import cache

    keys = rollup_keys(list(days))
    out: dict[date, Groups] = {}
    now = time.monotonic()
    missing = []
    with _cache_lock:
        for day in days:
            key = keys.get(day)
            if key is None:
                out[day] = _empty()
                continue
            hit = _groups_cache.get(day)
            if hit is not None and hit[0] == key and now - hit[1] < TRAILING_TTL:
                out[day] = hit[2]
            else:
                missing.append(day)
    if not missing:
        return out
    try:
        held = cache.get_many([_shared_key(d, keys[d]) for d in missing])
    except Exception:  # noqa: BLE001 - the cache down: compute, as without one
        held = {}
    fresh = {}
    for day in missing:
        name = _shared_key(day, keys[day])
        g = None
        if name in held:
            try:
                g = groups_decode(held[name])
            except (KeyError, TypeError, ValueError, IndexError):
                log.warning("live surveillance: the cached groups of %s do not "
                            "read; computed again", day)
        if g is None:
            g = day_groups(day)
            fresh[name] = groups_encode(g)
        out[day] = g
    if fresh:
        try:
            cache.set_many(fresh, timeout=int(TRAILING_TTL))
        except Exception:  # noqa: BLE001 - the cache down: nothing shared
            pass
    with _cache_lock:
        _shared_keys.update(fresh)
        for day in missing:
            _groups_cache[day] = (keys[day], now, out[day])
        newest = max(_groups_cache)
        for old in [d for d in _groups_cache if d < newest - timedelta(days=KEEP_DAYS)]:
            del _groups_cache[old]
    return out


# -- a day's trailing figures ------------------------------------------------------

@dataclass(frozen=True)
class Reference:
    """The croupiers' reference: the trailing closed days' false draws per
    coup, or (too few coups there) that day's rest of the floor."""

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
    """What a look reads of the days before a day: the reference, the
    previous day's subject counts (the budget) and the floor's mix."""

    reference: Reference
    previous: dict[str, int]
    mix: ChoiceMix | None
    mix_from: str | None  # the gaming day (ISO) whose mix it is, or None


_trailing_cache: dict[date, tuple[float, Trailing]] = {}


def trailing(day: date, *, before: Groups | None = None) -> Trailing:
    """The trailing figures for ``day``, computed once per process and day
    (kept TRAILING_TTL seconds); ``before``: the previous day's groups when
    the caller has them (else read, as a closed day's)."""
    now = time.monotonic()
    with _cache_lock:
        hit = _trailing_cache.get(day)
        if hit is not None and now - hit[0] < TRAILING_TTL:
            return hit[1]
    value = _shared_trailing(day, before)
    with _cache_lock:
        for old in [d for d in _trailing_cache
                    if d < day - timedelta(days=KEEP_DAYS)]:
            del _trailing_cache[old]
        _trailing_cache[day] = (now, value)
    return value


def _shared_trailing(day: date, before: Groups | None) -> Trailing:
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
    value = _trailing(day, before)
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
    """Drop the kept trailing figures and closed days' groups (tests; a day
    corrected at length)."""
    from django.core.cache import cache

    with _cache_lock:
        _trailing_cache.clear()
        _groups_cache.clear()
        shared = list(_shared_keys)
        _shared_keys.clear()
    try:
        cache.delete_many(shared + [f"live:trailing:{d.isoformat()}"
                                    for d in _recent_days()])
    except Exception:  # noqa: BLE001 - the cache down: nothing kept
        pass


def _recent_days() -> list[date]:
    """Days whose shared trailing figures trailing_forget drops: those of
    the open sessions and the month around today."""
    from django.utils import timezone

    today = timezone.localdate()
    open_ = TableSession.objects.filter(closed_at__isnull=True).order_by() \
        .values_list("gaming_day", flat=True).distinct()
    return sorted({*open_, *(today + timedelta(days=k)
                             for k in range(-KEEP_DAYS, 2))})


def _trailing(day: date, before: Groups | None) -> Trailing:
    coups, events = _trailing_counts(day)
    reference = Reference("trailing", events, coups, REFERENCE_DAYS) \
        if coups >= REFERENCE_MIN_COUPS else Reference("tonight", 0, 0, 0)
    previous_day = day - timedelta(days=1)
    if before is None:
        before = closed_groups([previous_day])[previous_day]
    mix, mix_from = _floor_mix(day)
    return Trailing(reference, subject_counts(before), mix, mix_from)


def _trailing_counts(day: date) -> tuple[int, int]:
    """The floor's coups and false draws over the REFERENCE_DAYS closed days
    before ``day``, from the table-day rollups the coups keep in step (a few
    rows per table and day: at 1,000 tables 28,000 rows, not the 1.7 million
    coups, whose aggregate, run by PostgreSQL on both cores, held the floor's
    pages for a second and more at each process's first look). A rollup
    counts false-draw findings, so a coup with two counts twice: the
    reference can only come out higher, which costs power, never the bound."""
    first = day - timedelta(days=REFERENCE_DAYS)
    # summed by the database (one row back): iterated here, the 28,000 rows
    # took seconds of the first look of each day of the window, and the
    # floor bench's pages waited behind it
    sums = (TableDayRollup.objects
            .filter(gaming_day__range=(first, day - timedelta(days=1)))
            .aggregate(coups=Sum("coups"),
                       fd=Sum(Cast(KT("findings__false_draw"), IntegerField()))))
    coups, events = int(sums["coups"] or 0), int(sums["fd"] or 0)
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
