"""Health: what a load balancer and the IT team's monitoring ask of the service.

Checks are django-health-check `HealthCheck`s (its base class, its exceptions
and its database check), run one after the other in the request's own thread
and connection (the library's view runs them in an executor's threads, which
would open a connection per check and per thread):

- ``database``: ``SELECT 1`` on the default connection (the library's check);
- ``redis``: a PING with the cache's short timeouts (0.5 s);
- ``worker``: the newest heartbeat a Celery worker wrote to Redis (every
  ``WORKER_HEARTBEAT_SECONDS``, see `worker_heartbeat_start`); stale past three
  of them, gone at once when a worker stops; signed, so that a beat written
  into Redis by anyone else counts for nothing;
- ``beat``: the newest ``last_run_at`` of the enabled beat schedules
  (django-celery-beat writes them every 3 minutes): stale past twice the
  shortest interval plus those 3 minutes;
- ``anchors``: the trail's anchors, by casino.anchors' own rule (rows left
  unanchored past 2 x ``TRAIL_ANCHOR_MINUTES``);
- ``ledger_check``: the nightly re-settlement's last run (its change-log row,
  ``audit.ledger.verified``): stale past ``LEDGER_CHECK_MAX_HOURS``;
- ``role_settings``: a setting that ALTER ROLE or ALTER DATABASE put on the
  runtime role or its database and that differs from what the app expects
  (casino/dbsession.py `role_settings_problems`), named.

Without ``REDIS_URL`` (the embedded set-up: tasks run in-process, no beat),
redis, worker and beat say "not used" and pass.

`/health/` (anyone): 200 ``ok`` when this web node can serve, i.e. its
database answers; 503 otherwise; no details. Redis, the workers and beat are
not this node's to fix: the floor records coups without them (docs/operations.md,
"Redis down"), so a load balancer must not take every node out for them.
`/health/details/` (staff): every check as JSON, "ok" false when any fails
(answered 200: it is a report; a machine reads /health/ or /metrics).
`/metrics` exports the same checks (casino_health_up) for alerts.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
import timeit
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from health_check.base import HealthCheck
from health_check.checks import Database
from health_check.exceptions import HealthCheckException, ServiceUnavailable

log = logging.getLogger(__name__)

HEARTBEAT_PREFIX = "casino:worker:heartbeat:"
LEDGER_ACTION = "audit.ledger.verified"  # audit/services/ledger_flags.py
BEAT_SYNC = timedelta(minutes=3)  # django-celery-beat saves last_run_at so often


@dataclass
class Result:
    name: str
    ok: bool
    message: str
    seconds: float  # the check's own time
    critical: bool = False
    values: dict = field(default_factory=dict)  # ages etc., for /metrics

    def to_dict(self) -> dict:
        return {"ok": self.ok, "message": self.message,
                "took_ms": round(self.seconds * 1000, 1), **self.values}


class _Fine(Exception):
    """A check that passes with something to say ("not used", an age)."""


def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, **settings.REDIS_CACHE_OPTIONS)


def _age(seconds: float) -> str:
    from .anchors import age

    return age(timedelta(seconds=seconds))


@dataclasses.dataclass
class RedisPing(HealthCheck):
    def run(self):
        if not settings.REDIS_URL:
            raise _Fine("not used (no REDIS_URL: tasks run in-process)")
        try:
            _redis().ping()
        except Exception as exc:  # redis' errors share no builtin base
            raise ServiceUnavailable(f"no answer ({type(exc).__name__})") from exc


@dataclasses.dataclass
class WorkerHeartbeat(HealthCheck):
    values: dict = dataclasses.field(default_factory=dict, repr=False)

    def run(self):
        if not settings.REDIS_URL:
            raise _Fine("not used (no REDIS_URL: tasks run in-process)")
        try:
            client = _redis()
            keys = list(client.scan_iter(f"{HEARTBEAT_PREFIX}*", count=100))
            beats = _beats(keys, client.mget(keys)) if keys else []
        except Exception as exc:
            raise ServiceUnavailable(
                f"cannot read the heartbeats: Redis gives no answer "
                f"({type(exc).__name__})") from exc
        every = settings.WORKER_HEARTBEAT_SECONDS
        fresh = [(b, q) for b, q in beats if time.time() - b <= 3 * every]
        self.values["workers"] = len(fresh)
        if beats:
            newest = max(b for b, _ in beats)
            self.values["age_seconds"] = round(time.time() - newest, 1)
        if not fresh:
            raise ServiceUnavailable(
                "no Celery worker has beaten in the last "
                f"{3 * every} seconds (3 x WORKER_HEARTBEAT_SECONDS): report "
                "builds, re-audits and the nightly close wait")
        queues = {q: sum(q in taken for _, taken in fresh) for q in _queues()}
        self.values["queues"] = queues
        idle = [q for q, n in queues.items() if not n]
        if idle:
            raise ServiceUnavailable(
                f"no Celery worker takes the {', '.join(idle)} queue: "
                + "; ".join(QUEUE_WORK.get(q, "its tasks wait") for q in idle))
        raise _Fine(f"{len(fresh)} worker(s), the last beat "
                    f"{_age(time.time() - max(b for b, _ in fresh))} ago")


# What waits when no worker takes a queue (settings.CELERY_TASK_QUEUES).
QUEUE_WORK = {
    "celery": "report builds, re-audits and surveillance runs wait",
    "clock": "the trail's checkpoints and witnesses, its anchors, the live "
             "surveillance and the gaming day's close wait",
}


def _queues() -> list[str]:
    return [q.name for q in settings.CELERY_TASK_QUEUES]


def heartbeat_key(hostname: str, queues) -> str:
    """A worker's heartbeat key: its name and the queues it takes (sealed
    with the beat: Redis cannot move a worker to another queue)."""
    return f"{HEARTBEAT_PREFIX}{hostname}|{'+'.join(sorted(queues))}"


def _taken(key: str) -> frozenset[str]:
    """The queues a heartbeat key names (a key without: every queue)."""
    name, bar, queues = key[len(HEARTBEAT_PREFIX):].rpartition("|")
    return frozenset(queues.split("+")) if bar and name else frozenset(_queues())


def _beats(keys, values) -> list[tuple[float, frozenset[str]]]:
    """The heartbeats a worker of this app signed (casino.cache.seal, over the
    key: a worker holds SECRET_KEY, Redis does not), none ahead of the clock:
    whoever can write to Redis cannot make a dead worker look alive."""
    from .cache import _MISS, unseal

    beats = []
    for key, value in zip(keys, values, strict=True):
        beat = _MISS if value is None else unseal(key.decode(), value)
        if type(beat) is float and beat <= time.time() + 5:
            beats.append((beat, _taken(key.decode())))
    return beats


@dataclasses.dataclass
class BeatLastRun(HealthCheck):
    values: dict = dataclasses.field(default_factory=dict, repr=False)

    def run(self):
        if not settings.REDIS_URL:
            raise _Fine("not used (no REDIS_URL: no beat in the embedded set-up)")
        from django.db.models import Max
        from django_celery_beat.models import PeriodicTask

        enabled = PeriodicTask.objects.filter(enabled=True)
        last = enabled.aggregate(m=Max("last_run_at"))["m"]
        intervals = [t.interval.schedule.run_every
                     for t in enabled.filter(interval__isnull=False)
                     .select_related("interval")]
        shortest = min(intervals, default=timedelta(hours=1))
        limit = 2 * shortest + BEAT_SYNC
        if last is None:
            raise ServiceUnavailable("beat has run no schedule yet "
                                     "(is `celery -A casino beat` running?)")
        ago = timezone.now() - last
        self.values["age_seconds"] = round(ago.total_seconds(), 1)
        self.values["limit_seconds"] = limit.total_seconds()
        if ago > limit:
            raise ServiceUnavailable(
                f"beat's last run was {_age(ago.total_seconds())} ago, more than "
                f"{_age(limit.total_seconds())} (twice its shortest schedule plus "
                "its 3-minute save): is `celery -A casino beat` running?")
        raise _Fine(f"last run {_age(ago.total_seconds())} ago")


@dataclasses.dataclass
class AnchorFreshness(HealthCheck):
    values: dict = dataclasses.field(default_factory=dict, repr=False)

    def run(self):
        from .anchors import AnchorError, anchors_freshness, anchors_list

        try:
            found = _anchors_on_file(anchors_list)
        except AnchorError as exc:
            raise ServiceUnavailable(str(exc)) from exc
        fresh = anchors_freshness(found)
        self.values["interval_seconds"] = settings.TRAIL_ANCHOR_MINUTES * 60
        self.values["stale"] = int(bool(fresh.problem))
        if fresh.last is not None:
            self.values["age_seconds"] = round(
                (fresh.now - fresh.last.at).total_seconds(), 1)
            self.values["row"] = fresh.last.row
        if fresh.problem:
            raise ServiceUnavailable(fresh.problem)
        if fresh.last is None:
            raise _Fine("no anchor yet (nothing written that needs one)")
        raise _Fine(f"last anchor {fresh.last_age} ago, row {fresh.last.row}")


_listing: dict = {}


def _anchors_on_file(read):
    """The anchors on file, read again only when the folder changed (a file
    added or removed changes its mtime and its count): a year of 15-minute
    anchors is 35,000 files, 2 s to read, and monitoring asks every few
    seconds. The freshness
    itself (rows written since) is worked out at every call. The files'
    contents are verify_trail's to prove, not this check's."""
    import os

    folder = os.fspath(settings.TRAIL_ANCHOR_DIR)
    try:
        st = os.stat(folder)
        # (with the number of names: a coarse clock may give two writes one
        # mtime)
        stamp = (folder, st.st_mtime_ns, st.st_ino, len(os.listdir(folder)))
    except OSError:
        return read()
    if _listing.get("stamp") != stamp:
        _listing.update(stamp=stamp, found=read())
    return list(_listing["found"])


@dataclasses.dataclass
class LedgerCheckAge(HealthCheck):
    values: dict = dataclasses.field(default_factory=dict, repr=False)

    def run(self):
        from .models import ChangeLog

        limit = timedelta(hours=settings.LEDGER_CHECK_MAX_HOURS)
        now = timezone.now()
        last = (ChangeLog.objects.filter(action=LEDGER_ACTION).order_by("-id")
                .values("at", "new").first())
        if last is None:
            first = ChangeLog.objects.order_by("id").values_list("at", flat=True)
            first = first.first()
            if first is None or now - first <= limit:
                raise _Fine("not run yet (a young installation)")
            raise ServiceUnavailable(
                "the nightly ledger check has never run, and the trail is "
                f"{_age((now - first).total_seconds())} old (more than "
                f"LEDGER_CHECK_MAX_HOURS={settings.LEDGER_CHECK_MAX_HOURS})")
        ago = now - last["at"]
        summary = last["new"] if isinstance(last["new"], dict) else {}
        self.values["age_seconds"] = round(ago.total_seconds(), 1)
        self.values["differences"] = int(summary.get("differences") or 0)
        self.values["coups"] = int(summary.get("coups") or 0)
        if ago > limit:
            raise ServiceUnavailable(
                f"the last ledger check ran {_age(ago.total_seconds())} ago, more "
                f"than LEDGER_CHECK_MAX_HOURS={settings.LEDGER_CHECK_MAX_HOURS}: "
                "is the gaming-day close (reports.gaming_day_close) running?")
        raise _Fine(f"last run {_age(ago.total_seconds())} ago: "
                    f"{self.values['coups']} coups, "
                    f"{self.values['differences']} difference(s)")


@dataclasses.dataclass
class RoleSettings(HealthCheck):
    def run(self):
        from django.db import connection

        from .dbsession import role_settings_problems

        if connection.vendor != "postgresql":
            raise _Fine("not used (SQLite)")
        problems = role_settings_problems(connection)
        if problems:
            raise ServiceUnavailable("; ".join(problems))
        raise _Fine("no role or database setting changes the app's sessions")


@dataclasses.dataclass
class Witnesses(HealthCheck):
    """The database against the latest checkpoint each witness cosigned
    (casino/witness.py): a shorter chain, a fork the witnesses named (writes
    are stopped), a witness without the quorum's latest checkpoint."""

    values: dict = dataclasses.field(default_factory=dict, repr=False)

    def run(self):
        from .witness import witness_compare

        if not settings.WITNESSES:
            raise _Fine("no witness configured (WITNESS_URLS)")
        found = witness_compare()
        self.values["rows"] = found.rows
        self.values["cosigned"] = found.cosigned
        if found.problems:
            raise ServiceUnavailable("; ".join(found.problems))
        if found.notes:
            raise ServiceUnavailable("; ".join(found.notes))
        sizes = ", ".join(f"{name} {v['size']:,}" for name, v in found.cosigned.items())
        raise _Fine(f"the database holds {found.rows:,} rows; cosigned: {sizes}")


def _checks() -> list[tuple[str, HealthCheck, bool]]:
    """(name, check, critical): a critical check decides /health/."""
    return [
        ("database", Database(), True),
        ("redis", RedisPing(), False),
        ("worker", WorkerHeartbeat(), False),
        ("beat", BeatLastRun(), False),
        ("anchors", AnchorFreshness(), False),
        ("ledger_check", LedgerCheckAge(), False),
        ("role_settings", RoleSettings(), False),
        ("witnesses", Witnesses(), False),
    ]


def _run(name: str, check: HealthCheck, critical: bool) -> Result:
    start = timeit.default_timer()
    try:
        check.run()
    except _Fine as fine:
        ok, message = True, str(fine)
    except HealthCheckException as exc:
        ok, message = False, exc.message
    except Exception as exc:  # a check's own failure is a failed check
        log.warning("health check %s failed", name, exc_info=True)
        ok, message = False, f"{type(exc).__name__}"
    else:
        ok, message = True, "ok"
    return Result(name, ok, message, timeit.default_timer() - start, critical,
                  dict(getattr(check, "values", {})))


def health_run(*, only_critical: bool = False) -> list[Result]:
    out = []
    for name, check, critical in _checks():
        if only_critical and not critical:
            continue
        if not critical and not out[0].ok and name != "redis":
            # No database: what reads it cannot tell anything.
            out.append(Result(name, False, "the database does not answer", 0.0))
            continue
        out.append(_run(name, check, critical))
    return out


@never_cache
def health(request):
    """Liveness and readiness for a load balancer: no detail, no session."""
    ok = all(r.ok for r in health_run(only_critical=True))
    return HttpResponse("ok\n" if ok else "unavailable\n", status=200 if ok else 503,
                        content_type="text/plain; charset=utf-8")


@never_cache
def health_details(request):
    """Every check, for staff (casino.access ROUTES: STAFF)."""
    from .access import STAFF, allows

    if not allows(request.user, STAFF):
        return JsonResponse({"detail": "staff only"},
                            status=403 if request.user.is_authenticated else 401)
    results = health_run()
    # 200 whatever the checks say: the answer is the report ("ok" in it);
    # the status for a machine is /health/'s (and casino_health_up's)
    return JsonResponse(
        {"ok": all(r.ok for r in results), "host": socket.gethostname(),
         "checks": {r.name: r.to_dict() for r in results}})


# -- the worker's heartbeat -----------------------------------------------------

class _Heartbeat(threading.Thread):
    """Writes "this worker is alive" to Redis every WORKER_HEARTBEAT_SECONDS,
    from the worker's main process, with an expiry of three beats: a worker
    killed outright disappears by itself, one stopped cleanly at once."""

    def __init__(self, hostname: str, queues=()) -> None:
        super().__init__(name="casino-heartbeat", daemon=True)
        self.key = heartbeat_key(hostname, queues or _queues())
        self.stop = threading.Event()

    def beat(self, client) -> None:
        from .cache import seal

        ttl = max(3 * settings.WORKER_HEARTBEAT_SECONDS, 1)
        client.set(self.key, seal(self.key, round(time.time(), 3), ttl), ex=ttl)

    def run(self) -> None:
        client = None
        while not self.stop.is_set():
            try:
                client = client or _redis()
                self.beat(client)
            except Exception:  # Redis away: try again at the next beat
                client = None
                log.warning("worker heartbeat: Redis did not answer")
            self.stop.wait(settings.WORKER_HEARTBEAT_SECONDS)
        try:
            _redis().delete(self.key)
        except Exception:
            pass


_beating: list[_Heartbeat] = []


def worker_heartbeat_start(hostname: str, queues=()) -> None:
    if not settings.REDIS_URL or _beating:
        return
    thread = _Heartbeat(hostname, queues)
    _beating.append(thread)
    thread.start()


def worker_heartbeat_stop() -> None:
    while _beating:
        thread = _beating.pop()
        thread.stop.set()
        thread.join(timeout=5)
