"""A 500-table floor on one box (issue 15): tablets, pit bosses and a manager
at once, through gunicorn on PostgreSQL, with a real Celery worker.

Run from the project root, alone on the machine for figures:

    .venv/bin/python bench/bench_floor.py
        [--tables 500] [--duration 60] [--bosses 20] [--history-days 30]
        [--history-coups 60] [--workers 3] [--threads 4] [--page-workers 0]
        [--worker-concurrency 4] [--no-beat] [--day-close]

A fresh PostgreSQL database (bench_floor, dropped and re-created, migrated;
BENCH_DATABASE_URL to change it), dropped again when the bench ends, whatever
the outcome (an aim missed, an error, Ctrl-C, SIGTERM; --keep keeps it).
Redis: the database BENCH_REDIS_URL names, flushed before and after (give
one nobody else uses); without it, db 14, which must be empty (the bench
stops, naming the keys it holds, rather than flush a database it was not
given), and only the keys this run wrote are removed afterwards. Set-up,
untimed:

- a month of history, written in SQL as bench_reports.py writes its year:
  --tables tables x --history-days closed sessions (one shoe, one banker
  turn each) before today's gaming day, --history-coups coups per table-day
  (0.3 % with a false_draw finding, their flags raised by flags_sync), the
  rollups built from them, every box counted and attested but 1 %
  (--uncounted) so the floor's closing list has a few lines;
- today: each table opened by a pit boss for its own croupier (a tablet
  user with an API token), a shoe and a banker turn opened by the croupier,
  through the services; --bosses pit bosses signed in on the sign-in page
  (session cookie and CSRF token, as a browser); a manager with a token.

Then gunicorn (gthread, on a port in 8790-8799, or in BENCH_PORTS=first-last;
with --page-workers N, a second one of N processes on the next free port
serves the pit bosses' pages,
the first the API, as two pools behind the proxy), `celery -A casino worker`
(4 pool processes as deploy/ has them, under nice 10: --worker-nice) and
`celery -A casino beat` with the project's own schedule (bench/_floor_celery.py:
the trail's checkpoints and every other beat task run in the window as in
production; --no-beat: none; the day's close, crontabs that a fresh database
runs at beat's first tick, off unless --day-close), warmed as a server up for a
while (untimed bursts of reads, then of coups: every worker process loaded,
every thread's database connection open and its coup statements prepared),
and for --duration seconds:

- every table records a coup every 30 s (the tables spread evenly over the
  30 s, each coup +-2 s of jitter), dealt from its own shuffled shoe by the
  punter's rule and the tableau (bench/_tablets.py: Idempotency-Key, 2 %
  re-sent after a 201, 1 % given up on after a few ms and retried); the bank
  lost, the next seat opens a turn; at the cut card the croupier closes the
  shoe with its count and opens the next;
- every pit boss loads the floor page and the review queue every 5 s;
- the manager requests a month's commission report (POST /api/v1/reports/,
  PDF by table) 5 s in, and polls it every second until it is built.

Afterwards: latencies (p50/p95/p99/max) per kind, errors, and proof that every
acknowledged coup is stored exactly once (bench/_harness.verify over today's
sessions: keys, sequences, banker-turn chains, rollups, ledger re-settled).
What limits the run: the CPU seconds of the gunicorn workers, the PostgreSQL
backends of this database, the Celery worker, beat and this client over the
window (/proc/<pid>/stat), and the machine's idle share (/proc/stat); what
beat's schedule did in the window: the checkpoints signed (from the
database), the longest gap between two, the live surveillance's flags, the
worker's seconds by task (its log).

Aims: coup p99 <= 100 ms, floor page p99 <= 250 ms, every acknowledged coup
stored once; exit status 1 otherwise. Writes var/bench/floor.json.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import http.client
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_floor")

import _benchdb  # noqa: E402
import _floor_celery  # noqa: E402
import _harness  # noqa: E402
import _server  # noqa: E402
import _tablets  # noqa: E402
import bench_reports  # noqa: E402

AIMS = {"coup_p99_ms": 100.0, "floor_p99_ms": 250.0}

def _ports() -> range:
    """8790-8799, or BENCH_PORTS ("first-last"): a shared machine gives each
    user of it a range of his own."""
    given = os.environ.get("BENCH_PORTS", "")
    if not given:
        return range(8790, 8800)
    first, _, last = given.partition("-")
    return range(int(first), int(last or first) + 1)


PORTS = _ports()
REDIS_URL = "redis://127.0.0.1:6379/14"
COUP_EVERY, BOSS_EVERY, POLL_EVERY = 30.0, 5.0, 1.0
JITTER = 2.0  # seconds either side of a table's slot
RESOLVE = 20.0  # a coup in flight at the end: its fate learned within this
REPORT_WAIT = 180.0  # the report polled at most this long after the window
KINDS = ("coup", "floor", "queue", "shoe", "report_request", "report_poll")
# gunicorn logs every request as production does (INFO, one JSON object a
# line: casino/logs.py), its time in Django included: a coup's time at the
# client less its time in Django is its wait for a thread and the network
ACCESS_LOG = {"LOG_LEVEL": "INFO", "LOG_FORMAT": "json"}


# -- set-up -------------------------------------------------------------------


def history(args, live_day, manager, croupier_ids: list[int], boss) -> dict:
    """A month before today, in SQL (bench_reports.py's bulk path)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from audit.models import CagnotteAttestation, CagnotteCount
    from audit.services import flags_sync
    from tables.models import Coup, Shoe, TableSession

    start = live_day - timedelta(days=args.history_days)
    # bench_reports' coups name their croupier among ids in a row: three
    # croupiers share each table-day, as shifts would
    shift = list(get_user_model().objects.filter(pk__in=croupier_ids[:3])
                 .order_by("pk"))
    t0 = time.perf_counter()
    first, _, _ = bench_reports.setup_floor(
        tables=args.tables, days=args.history_days, start=start,
        manager=manager, croupiers=shift)
    n = args.tables * args.history_days * args.history_coups
    if n:
        bench_reports.load_coups(0, n - 1, first, [c.pk for c in shift],
                                 tables=args.tables, days=args.history_days,
                                 start=start)
    filled = time.perf_counter() - t0
    # Every box counted (the commission as computed) and attested, but a few.
    s, sh, c = (TableSession._meta.db_table, Shoe._meta.db_table,
                Coup._meta.db_table)
    cols, exprs = bench_reports._fill(CagnotteCount, {
        "session_id": "s.id", "counted": "coalesce(sum(c.commission), 0)",
        "computed": "coalesce(sum(c.commission), 0)", "variance": "0",
        "counted_by_id": str(boss.pk),
        "counted_at": "s.closed_at + interval '30 minutes'", "reason": "''"})
    skip = int(args.uncounted * 1000)
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {CagnotteCount._meta.db_table} ({cols}) SELECT {exprs} "
            f"FROM {s} s LEFT JOIN {sh} sh ON sh.session_id = s.id "
            f"LEFT JOIN {c} c ON c.shoe_id = sh.id WHERE s.closed_at IS NOT NULL "
            f"AND abs(hashtext('u' || s.id)) % 1000 >= {skip} GROUP BY s.id")
        cols, exprs = bench_reports._fill(CagnotteAttestation, {
            "count_id": "k.id", "attested_by_id": str(manager.pk),
            "attested_at": "k.counted_at + interval '1 hour'",
            "statement": "'certifié exact'"})
        cur.execute(f"INSERT INTO {CagnotteAttestation._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM {CagnotteCount._meta.db_table} k")
    t1 = time.perf_counter()
    bench_reports.build_rollups()
    rollups = time.perf_counter() - t1
    t2 = time.perf_counter()
    flags = flags_sync()  # the history's findings become review items
    with connection.cursor() as cur:
        cur.execute("ANALYZE")  # as autovacuum would have, over a month
    return {"from_day": start.isoformat(), "days": args.history_days,
            "coups": n, "first_table": first, "fill_s": round(filled, 1),
            "rollups_s": round(rollups, 1), "flags_raised": flags,
            "flags_s": round(time.perf_counter() - t2, 1)}


@dataclass
class LiveTable:
    """One table's tablet: its croupier's token, its shoe as dealt."""

    index: int
    state: _tablets.TableState
    tablet: _tablets.Tablet
    rng: random.Random
    cards: list[str]
    shoe: int
    seat: int = 1
    k: int = 0
    busy: threading.Lock = field(default_factory=threading.Lock)
    tally: _tablets.Tally = field(default_factory=_tablets.Tally)


def open_floor(args, first_table: int, croupiers, boss) -> list[dict]:
    """Today's sessions: the pit boss opens each table for its croupier, who
    opens a shoe (a few cards burned) and the first banker turn."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model

    from tables import services
    from tables.models import Table

    users = {u.pk: u for u in get_user_model().objects.filter(
        pk__in=[c for c, _ in croupiers])}
    out = []
    for i, (cid, token) in enumerate(croupiers):
        table = Table.objects.get(pk=first_table + i)
        croupier = users[cid]
        session = services.session_open(table=table, user=boss, croupier=croupier,
                                        device="bench")
        burned = random.Random(i).randint(1, 10)
        shoe = services.shoe_open(session=session, user=croupier, burned=burned,
                                  device="bench")
        services.banker_turn_open(session=session, user=croupier, seat=1,
                                  bank=Decimal("100.00"), device="bench")
        out.append({"table": table.pk, "session": session.pk, "shoe": shoe.pk,
                    "burned": burned, "token": token})
    return out


# -- HTTP clients -------------------------------------------------------------


class Browser:
    """A pit boss's browser: one keep-alive connection, the session cookie."""

    def __init__(self, port: int):
        self.port, self.conn, self.cookies = port, None, {}

    def request(self, method, path, body=None, headers=None):
        head = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
                "User-Agent": "bench-floor", **(headers or {})}
        for attempt in (1, 2):
            reused = self.conn is not None
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                       timeout=60)
            try:
                self.conn.request(method, path, body=body, headers=head)
                resp = self.conn.getresponse()
                payload = resp.read()
                break
            except (OSError, http.client.HTTPException):
                self.close()
                # The server closed the idle keep-alive connection as this
                # request went out (--keep-alive 5 s, a load every 5 s): a
                # browser sends a GET again on a new connection, so do we.
                if not (reused and method == "GET" and attempt == 1):
                    raise
        for name, value in resp.getheaders():
            if name.lower() == "set-cookie":
                k, v = value.split(";", 1)[0].split("=", 1)
                self.cookies[k.strip()] = v.strip()
        if resp.getheader("Connection", "").lower() == "close":
            self.close()
        return resp.status, payload

    def close(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def sign_in(self, username: str, password: str) -> None:
        status, page = self.request("GET", "/accounts/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if status != 200 or token is None:
            sys.exit(f"sign-in page: {status}")
        body = urlencode({"username": username, "password": password,
                          "csrfmiddlewaretoken": token.group(1).decode()})
        status, _ = self.request(
            "POST", "/accounts/login/", body,
            {"Content-Type": "application/x-www-form-urlencoded"})
        if status != 302 or "sessionid" not in self.cookies:
            sys.exit(f"sign-in of {username}: {status}, no session cookie")


@dataclass
class Record:
    """Every timed request: kind -> [(t0, seconds, status)], and errors."""

    rows: dict[str, list[tuple[float, float, int]]] = field(
        default_factory=lambda: {k: [] for k in KINDS})
    errors: list[str] = field(default_factory=list)
    lag: list[float] = field(default_factory=list)  # coups sent after their slot
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind, t0, seconds, status):
        with self.lock:
            self.rows[kind].append((t0, seconds, status))

    def error(self, text):
        with self.lock:
            self.errors.append(text)


def timed(rec, kind, fn, *args, ok=(200, 201), **kwargs):
    t0 = time.monotonic()
    status, data = fn(*args, **kwargs)
    rec.add(kind, t0, time.monotonic() - t0, status)
    if status not in ok:
        rec.error(f"{kind}: {status} {str(data)[:200]}")
    return status, data


# -- the players ----------------------------------------------------------------


def play_coup(t: LiveTable, rec: Record, due: float, give_up: float, behaviour):
    """One coup at one table (and the shoe or turn it needs)."""
    with t.busy:  # a table deals one coup at a time
        rec.lag.append(time.monotonic() - due)
        rng, tablet = t.rng, t.tablet
        house = t.state.house
        if t.state.shoe != t.shoe:  # the tablets' repair opened a new shoe
            t.shoe, t.cards = t.state.shoe, house.new_shoe(rng, 5)
        if len(t.cards) < 7:  # the cut card: count what is left, next shoe
            left, burned = len(t.cards), rng.randint(1, 10)
            status, _ = timed(rec, "shoe", tablet.request, "POST",
                              f"/api/v1/shoes/{t.shoe}/close/", {"cards_left": left})
            status, data = timed(rec, "shoe", tablet.request, "POST",
                                 f"/api/v1/sessions/{t.state.session}/shoes/",
                                 {"burned": burned})
            if status != 201:
                return
            with t.state.lock:
                t.state.shoe = t.shoe = data["id"]
                t.state.shoes_opened += 1
            t.cards = house.new_shoe(rng, burned)
        # by the table's house rules (bench/_dealer.py): a tie's stakes stay
        # on the table for the next coup under tie "stay"
        punter, banker = house.deal(rng, t.cards)
        fresh = house.stakes(rng, banker_seat=t.seat)
        with t.state.lock:
            seen, stays = t.state.seen, t.state.stays
        key = f"floor-{t.index}-{t.k}"
        t.k += 1
        body = {"punter": punter, "banker": banker, "stakes": stays or fresh}
        data = _tablets.record_one(tablet, t.state, t.tally, rng, key, body,
                                   give_up, behaviour, fresh=fresh, seen=seen)
        if data is not None:  # the bank lost, the next seat holds it now
            t.seat = data.get("next_banker_seat") or data["banker_seat"]


def run_tables(tables, rec, port, start, stop, behaviour, pool_size) -> None:
    """Each table's coups at its slots, from one scheduler thread into a
    pool (a table's next coup waits for its previous one)."""
    n = len(tables)
    heap = []
    for t in tables:
        offset = t.index * COUP_EVERY / n
        k = 0
        while (at := start + offset + k * COUP_EVERY) < stop:
            # jitter reflected at the window's edges, not clamped to them:
            # clamping sent every table whose jittered first slot fell before
            # the start at the same instant (a burst no floor makes)
            jittered = at + t.rng.uniform(-JITTER, JITTER)
            if jittered < start:
                jittered = 2 * start - jittered
            if jittered >= stop:
                jittered = 2 * stop - jittered - 1e-3
            heap.append((jittered, t.index))
            k += 1
    heapq.heapify(heap)
    give_up = stop + RESOLVE
    with ThreadPoolExecutor(pool_size) as pool:
        while heap:
            due, i = heapq.heappop(heap)
            time.sleep(max(0.0, due - time.monotonic()))
            pool.submit(_guard, rec, play_coup, tables[i], rec, due, give_up,
                        behaviour)


def warm(tables, threads: int, behaviour, rounds: int = 4) -> None:
    """Before the window, as a server that has been up a while: bursts of
    twice as many parallel reads (a table's session, on the API, by its own
    tablet) as gunicorn has threads, so that every worker process has loaded
    the application and every thread has opened its database connection;
    then as many bursts of coups at those tables, so that every connection
    has recorded coups (its statements prepared, its PostgreSQL backend's
    catalogue and functions loaded: what a restart costs the first coups,
    docs/benchmarks.md). Not timed (their coups are stored and verified with the rest);
    the tablets' connections are closed after."""
    sample = tables[: 2 * threads]
    scratch = Record()
    with ThreadPoolExecutor(len(sample)) as pool:
        for _ in range(rounds):
            list(pool.map(lambda t: t.tablet.request(
                "GET", f"/api/v1/sessions/{t.state.session}/"), sample))
        for _ in range(rounds):
            now = time.monotonic()
            list(pool.map(lambda t, now=now: _guard(
                scratch, play_coup, t, scratch, now, now + 60, behaviour), sample))
    for text in scratch.errors:
        print(f"warm-up: {text}")
    for t in sample:
        t.tablet.close()


def _guard(rec, fn, *args):
    try:
        fn(*args)
    except Exception as exc:  # a bug in the bench: counted, never hidden
        rec.error(f"{fn.__name__}: {type(exc).__name__}: {exc}")


def run_boss(browser: Browser, rec, offset, start, stop) -> None:
    k = 0
    while (due := start + offset + k * BOSS_EVERY) < stop:
        time.sleep(max(0.0, due - time.monotonic()))
        for kind, path in (("floor", "/floor/"), ("queue", "/floor/queue/")):
            try:
                timed(rec, kind, browser.request, "GET", path, ok=(200,))
            except (OSError, http.client.HTTPException) as exc:
                rec.error(f"{kind}: {type(exc).__name__}: {exc}")
        k += 1


def run_manager(port, token, rec, at, stop, period) -> dict:
    """Request the month's commission report, poll it until it is built."""
    client = _tablets.Tablet(port, token, "bench-manager", timeout=120)
    time.sleep(max(0.0, at - time.monotonic()))
    sent = time.monotonic()
    status, job = timed(rec, "report_request", client.request, "POST",
                        "/api/v1/reports/", {"kind": "commission", "format": "pdf",
                                             "group_by": "table", **period},
                        ok=(202,))
    if status != 202:
        return {"status": status, "detail": job}
    deadline = stop + REPORT_WAIT
    while time.monotonic() < deadline:
        time.sleep(POLL_EVERY)
        status, job = timed(rec, "report_poll", client.request, "GET",
                            job["status_url"], ok=(200,))
        if status == 200 and job["status"] in ("done", "failed"):
            break
    client.close()
    return {"id": job.get("id"), "status": job.get("status"),
            "error": job.get("error"), "rows": job.get("rows"),
            "file_size": job.get("file_size"),
            "requested_to_done_s": round(time.monotonic() - sent, 2),
            "in_window": time.monotonic() <= stop,
            "started_at": job.get("started_at"), "finished_at": job.get("finished_at")}


# -- processes and CPU ------------------------------------------------------------


def pick_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    sys.exit(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


# What a run writes to Redis: Celery's queue, its bindings, unacked and
# results; Django's cache (the floor's shared copies, throttles) under
# its ":1:" prefix; the workers' heartbeats.
RUN_KEYS = ("celery*", "_kombu*", "unacked*", ":1:*", "casino:*")


def redis_take(url: str, given: bool) -> None:
    """A database given (BENCH_REDIS_URL) is the bench's: flushed. The default
    one must be empty: another program's keys there are never flushed."""
    import redis

    client = redis.Redis.from_url(url)
    if given:
        client.flushdb()
        return
    keys = client.dbsize()
    if keys:
        sample = [k.decode(errors="replace") for k in client.scan(count=20)[1][:5]]
        sys.exit(f"bench: Redis {url} holds {keys} keys (e.g. {sample}): the bench "
                 "flushes only a database given to it; set BENCH_REDIS_URL to a "
                 "database of its own (it is flushed), or empty this one")


def redis_leave(url: str, given: bool) -> None:
    """After the run: a given database flushed; the default one rid of the
    keys this run wrote, and of nothing else."""
    import redis

    client = redis.Redis.from_url(url)
    if given:
        client.flushdb()
        return
    for pattern in RUN_KEYS:
        batch = list(client.scan_iter(pattern, count=500))
        for i in range(0, len(batch), 500):
            client.delete(*batch[i:i + 500])


def cpu_snapshot(webs: tuple[int, ...],
                 background: tuple[tuple[int, ...], int | None],
                 db: str) -> dict:
    """CPU ticks so far of the gunicorn masters and workers (their sessions),
    the Celery worker and its pool, beat, this database's PostgreSQL
    backends, this client; and the machine's busy and idle ticks."""
    workers, beat = background
    out = {"web": 0, "worker": 0, "beat": 0, "postgres": 0, "pages": 0}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ticks = int(stat[11]) + int(stat[12])  # utime + stime
        session = int(stat[3])
        if session in webs:
            out["web"] += ticks
            if len(webs) > 1 and session == webs[1]:  # of which the pages' pool
                out["pages"] += ticks
        elif session in workers:
            out["worker"] += ticks
        elif beat is not None and session == beat:
            out["beat"] += ticks
        elif cmd.startswith("postgres:") and f" {db} " in cmd:
            out["postgres"] += ticks
    with open("/proc/stat") as f:
        cpu = [int(v) for v in f.readline().split()[1:]]
    out["machine_idle"] = cpu[3] + cpu[4]  # idle + iowait
    out["machine_all"] = sum(cpu[:8])
    out["client_s"] = time.process_time()
    return out


def cpu_report(a: dict, b: dict, seconds: float) -> dict:
    hz = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    used = {k: (b[k] - a[k]) / hz for k in ("web", "worker", "beat", "postgres")}
    used["client"] = b["client_s"] - a["client_s"]
    all_ = (b["machine_all"] - a["machine_all"]) / hz
    idle = (b["machine_idle"] - a["machine_idle"]) / hz
    used["other"] = max(0.0, all_ - idle - sum(used.values()))
    pages = (b["pages"] - a["pages"]) / hz
    return {
        # with --page-workers, the web's CPU of which its pages' pool
        "web_pages_s": round(pages, 1) if pages else None,
        "window_s": round(seconds, 1), "cores": cores,
        "cpu_s": {k: round(v, 1) for k, v in used.items()},
        "share_of_cores_pct": {k: round(100 * v / (seconds * cores), 1)
                               for k, v in used.items()},
        "machine_idle_pct": round(100 * idle / all_, 1) if all_ else None,
    }


# -- figures ------------------------------------------------------------------------


def stats(rows, start, stop) -> dict:
    lat = sorted(s for t0, s, _ in rows if start <= t0 < stop)
    statuses: dict[str, int] = {}
    for t0, _, st in rows:
        if start <= t0 < stop:
            statuses[str(st)] = statuses.get(str(st), 0) + 1

    def p(q):
        return round(1000 * _tablets.percentile(lat, q), 1) if lat else None

    return {"n": len(lat), "p50_ms": p(50), "p95_ms": p(95), "p99_ms": p(99),
            "max_ms": round(1000 * lat[-1], 1) if lat else None,
            "statuses": statuses}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--bosses", type=int, default=20)
    parser.add_argument("--history-days", type=int, default=30)
    parser.add_argument("--history-coups", type=int, default=60,
                        help="coups per table-day of the history")
    parser.add_argument("--uncounted", type=float, default=0.01)
    # 2 cores: 3 processes x 4 threads (see the report below)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--page-workers", type=int, default=0,
        help="0: one gunicorn for everything; N: the pit bosses' pages on a "
             "gunicorn of their own with N processes (--threads each), the API "
             "on the other (--workers), as docs/operations.md runs them")
    parser.add_argument("--page-threads", type=int, default=0,
                        help="with --page-workers: threads of each (0: --threads)")
    parser.add_argument(
        "--page-nice", type=int, default=0,
        help="with --page-workers: the pages' gunicorn's nice value, so that "
             "the tablets' coups come first (docs/operations.md: Nice= or "
             "CPUWeight= of the pages' unit)")
    parser.add_argument("--worker-nice", type=int, default=10,
                        help="the Celery worker's nice value (0: none)")
    parser.add_argument("--worker-concurrency", type=int, default=4,
                        help="the Celery worker's pool processes (4: "
                             "deploy/systemd/casino-worker.service)")
    parser.add_argument("--no-beat", action="store_true",
                        help="no Celery beat: no checkpoints, no live surveillance "
                             "(to compare)")
    parser.add_argument("--day-close", action="store_true",
                        help="keep the day's close on beat's schedule (crontabs: "
                             "its first tick closes the history's last day)")
    parser.add_argument("--replay-rate", type=float, default=0.02)
    parser.add_argument("--timeout-rate", type=float, default=0.01)
    parser.add_argument("--report-at", type=float, default=5.0)
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    if not (0 < args.duration <= 600 and 1 <= args.tables <= 2000
            and 1 <= args.bosses <= 100 and args.history_days >= 0):
        sys.exit("--duration in (0, 600], --tables 1..2000, --bosses 1..100")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))

    url = _benchdb.configure()
    redis_given = bool(os.environ.get("BENCH_REDIS_URL"))
    broker = os.environ.get("BENCH_REDIS_URL") or REDIS_URL
    redis_take(broker, redis_given)
    os.environ.update(
        REDIS_URL=broker,
        CELERY_TASK_ALWAYS_EAGER="0",
        MEDIA_ROOT=str(_benchdb.OUT_DIR / "floor-media"),
        TRAIL_ANCHOR_DIR=str(_benchdb.OUT_DIR / "floor-anchors"),
    )
    before = _benchdb.machine()
    print(f"database: {url} (dropped and re-created); broker {broker}",
          flush=True)
    try:
        _benchdb.recreate_database(url)
        run(args, url, before)
    finally:  # an aim missed (exit 1), an error, Ctrl-C or SIGTERM alike
        redis_leave(broker, redis_given)
        if args.keep:
            print(f"kept: {url}")
        else:
            _harness.drop_database(url)


def run(args, url: str, before: dict) -> None:

    from django.db import connection
    from django.utils import timezone

    from casino.tokenauth import token_issue
    from tables.services.floor import gaming_day_for

    t_setup = time.perf_counter()
    manager = _benchdb.make_user("bench-manager", "manager")
    bosses = [_benchdb.make_user(f"bench-boss-{i}", "pitboss")
              for i in range(args.bosses)]
    croupiers = _harness.tablet_users(args.tables, "bench-croupier-")
    manager_token = token_issue(user=manager, device="bench")[1]
    live_day = gaming_day_for(timezone.now(), 6)  # the tables' default cut-off
    hist = history(args, live_day, manager, [c for c, _ in croupiers], bosses[0])
    print(f"history: {hist}", flush=True)
    opened = open_floor(args, hist["first_table"], croupiers, bosses[0])
    setup_s = time.perf_counter() - t_setup
    print(f"set-up: {args.tables} tables open, {args.bosses} pit bosses "
          f"({setup_s:.0f} s)", flush=True)
    connection.close()

    port = pick_port()
    gunicorn = argparse.Namespace(worker_class="gthread", workers=args.workers,
                                  threads=args.threads)
    proc, cmd = _server.start(gunicorn, port, log_name="floor-gunicorn.log",
                              env=ACCESS_LOG)
    pages, page_port = None, port
    celery = clock = None
    try:  # a SIGTERM from here on still stops what was started
        if args.page_workers:
            page_port = pick_port()
            pages, page_cmd = _server.start(
                argparse.Namespace(worker_class="gthread", workers=args.page_workers,
                                   threads=args.page_threads or args.threads),
                page_port, log_name="floor-gunicorn-pages.log", env=ACCESS_LOG)
            cmd = [*cmd, "+ pages:", *page_cmd[1:]]
            if args.page_nice:
                _floor_celery.be_nice(pages.pid, args.page_nice)
        celery = _floor_celery.start_worker(args.worker_nice, args.worker_concurrency)
        clock = _floor_celery.start_worker(args.worker_nice, 2, "clock")
        if not args.no_beat and not args.day_close:
            print("beat: the day's close off for the run: "
                  + "; ".join(_floor_celery.day_schedules_off()), flush=True)
        beat = None if args.no_beat else _floor_celery.start_beat()
    except BaseException:
        _server.stop(proc)
        if pages is not None:
            _server.stop(pages)
        _floor_celery.stop(celery)
        _floor_celery.stop(clock)
        raise
    webs = (proc.pid, pages.pid) if pages is not None else (proc.pid,)
    report_job: dict = {}
    try:
        print(f"server: {' '.join(cmd[1:])} (pid {proc.pid}); celery workers "
              f"(queue celery: pid {celery.pid}, {args.worker_concurrency} pool "
              f"processes; queue clock: pid {clock.pid}, 2; nice "
              f"{args.worker_nice}); "
              + ("no beat" if beat is None else f"celery beat (pid {beat.pid})"),
              flush=True)
        rec = Record()
        behaviour = _tablets.Behaviour(replay_rate=args.replay_rate,
                                       timeout_rate=args.timeout_rate)
        tables = []
        with ThreadPoolExecutor(args.workers * args.threads) as pool:
            # each tablet reads its table's house rules, as a croupier's does
            states = list(pool.map(lambda o: _tablets.table_at(
                port, o["token"], (o["table"], o["session"], o["shoe"]),
                burned=o["burned"]), opened))
        for i, (o, state) in enumerate(zip(opened, states, strict=True)):
            rng = random.Random(zlib.crc32(f"floor-{i}".encode()))
            tablet = _tablets.Tablet(port, o["token"], f"floor-{i}", timeout=60)
            tables.append(LiveTable(i, state, tablet, rng,
                                    state.house.new_shoe(rng, o["burned"]), o["shoe"]))
        warm(tables, args.workers * args.threads, behaviour)
        browsers = []
        for i in range(args.bosses):  # signed in before the window
            b = Browser(page_port)
            b.sign_in(f"bench-boss-{i}", f"bench-boss-{i}" * 2)
            b.request("GET", "/floor/")  # warm: each page once per boss
            b.request("GET", "/floor/queue/")
            browsers.append(b)
        # The client's own collector, out of the window's way: a full
        # collection over the set-up's objects stalled every client thread
        # (the coups' times then counted the client's pause, not the server's)
        if beat is not None:
            beat_caught_up()
        gc.collect()
        gc.freeze()
        start = time.monotonic() + 1.0
        stop = start + args.duration
        period = {"from_day": hist["from_day"], "to_day": live_day.isoformat()}
        threads = [threading.Thread(target=run_tables, daemon=True, args=(
            tables, rec, port, start, stop, behaviour, 64))]
        threads += [threading.Thread(target=run_boss, daemon=True, args=(
            b, rec, i * BOSS_EVERY / args.bosses, start, stop))
            for i, b in enumerate(browsers)]
        mgr = threading.Thread(target=lambda: report_job.update(run_manager(
            port, manager_token, rec, start + args.report_at, stop, period)),
            daemon=True)
        for t in [*threads, mgr]:
            t.start()
        background = ((celery.pid, clock.pid), beat.pid if beat is not None else None)
        time.sleep(max(0.0, start - time.monotonic()))
        cpu0 = cpu_snapshot(webs, background, url.rsplit("/", 1)[1])
        made0 = _floor_celery.checkpoints_at()
        time.sleep(max(0.0, stop - time.monotonic()))
        cpu1 = cpu_snapshot(webs, background, url.rsplit("/", 1)[1])
        made1 = _floor_celery.checkpoints_at()
        print("window over; resolving coups in flight, waiting for the report",
              flush=True)
        for t in threads:
            t.join(timeout=RESOLVE + 60)
        mgr.join(timeout=REPORT_WAIT + 30)
        if any(t.is_alive() for t in [*threads, mgr]):
            rec.error("a client thread did not stop")
    finally:
        _server.stop(proc)
        if pages is not None:
            _server.stop(pages)
        _floor_celery.stop(beat)
        _floor_celery.stop(celery)
        _floor_celery.stop(clock)
    cpu = cpu_report(cpu0, cpu1, stop - start)
    cpu["background"] = _floor_celery.background_report(made0, made1, stop - start)
    cpu["background"]["beat"] = beat is not None
    acked, unresolved = {}, []
    for t in tables:
        acked.update(t.tally.acked)
        unresolved.extend(t.tally.unresolved)
        rec.errors.extend(t.tally.errors)
        timed_ids = zip(t.tally.latencies, t.tally.request_ids, strict=True)
        rec.rows["coup"].extend((t0, s, rid) for (t0, s), rid in timed_ids)
    result = _harness.verify(acked, unresolved, gaming_days=[live_day])
    report(args, cmd, rec, start, stop, tables, result, cpu, report_job, hist,
           before, setup_s)


def beat_caught_up(limit: float = 120.0) -> None:
    """Before the window: beat's first checkpoints cover the set-up's rows
    (a few per table), so that the window sees the floor's steady work, not
    that backlog."""
    from django.db import connection

    from casino.models import ChangeLog, Checkpoint

    t0 = time.monotonic()
    last = ChangeLog.objects.order_by("-id").values_list("id", flat=True).first()
    while time.monotonic() - t0 < limit:
        head = (Checkpoint.objects.order_by("-id").values_list("head_row", flat=True)
                .first())
        if head is not None and last is not None and head >= last:
            print(f"beat: the set-up's rows checkpointed "
                  f"({time.monotonic() - t0:.1f} s)", flush=True)
            break
        time.sleep(0.5)
    else:
        print(f"note: beat had not checkpointed the set-up's rows in {limit:.0f} s")
    connection.close()


def server_times() -> dict[str, float]:
    """Each request's time in Django (ms) by its X-Request-ID, from the
    gunicorn logs' access lines (ACCESS_LOG)."""
    times = {}
    for name in ("floor-gunicorn.log", "floor-gunicorn-pages.log"):
        path = _benchdb.OUT_DIR / name
        if not path.exists():
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"casino.request"' not in line:
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if row.get("request_id") and "duration_ms" in row:
                    times[row["request_id"]] = float(row["duration_ms"])
    return times


def slowest_coups(rec, start, stop, n: int = 10, server=None) -> list[dict]:
    """The n slowest coups of the window and what overlapped each: page loads
    (floor, queue) that took over 50 ms (a shared copy rendered), and the
    report request's build (from its request to its last poll); and its
    time in Django (server_ms: the rest waited for a thread)."""
    coups = sorted((r for r in rec.rows["coup"] if start <= r[0] < stop),
                   key=lambda r: -r[1])[:n]
    pages = [(t0, t0 + s) for kind in ("floor", "queue") for t0, s, _ in rec.rows[kind]
             if s > 0.05]
    asked = [t0 for t0, _, _ in rec.rows["report_request"]]
    polled = [t0 + s for t0, s, _ in rec.rows["report_poll"]]
    build = (asked[0], max(polled)) if asked and polled else None
    out = []
    for t0, seconds, rid in coups:
        t1 = t0 + seconds
        out.append({
            "at_s": round(t0 - start, 1), "ms": round(seconds * 1000, 1),
            "server_ms": (server or {}).get(rid),
            "slow_pages": sum(1 for a, b in pages if a < t1 and b > t0),
            "report": build is not None and build[0] < t1 and build[1] > t0,
        })
    return out


def report(args, cmd, rec, start, stop, tables, result, cpu, job, hist, before,
           setup_s) -> None:
    figures = {k: stats(rec.rows[k], start, stop) for k in KINDS}
    tallies = [t.tally for t in tables]
    coup_statuses: dict[str, int] = {}  # the tablets count theirs (replays too)
    for t in tallies:
        for k, v in t.statuses.items():
            coup_statuses[str(k)] = coup_statuses.get(str(k), 0) + v
    figures["coup"]["statuses"] = coup_statuses
    turns = sum(t.state.turns_opened for t in tables)
    coup_p99 = figures["coup"]["p99_ms"]
    floor_p99 = figures["floor"]["p99_ms"]
    lag = sorted(rec.lag)
    aims = {
        "coup_p99": coup_p99 is not None and coup_p99 <= AIMS["coup_p99_ms"],
        "floor_p99": floor_p99 is not None and floor_p99 <= AIMS["floor_p99_ms"],
        "stored_once": result["ok"],
        "report_built": job.get("status") == "done",
        "no_errors": not rec.errors,
    }
    print(f"\n{'kind':15} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
          f"{'max ms':>8} statuses")
    for kind in KINDS:
        f = figures[kind]
        if not f["n"]:
            continue
        print(f"{kind:15} {f['n']:6d} {f['p50_ms']:8.1f} {f['p95_ms']:8.1f} "
              f"{f['p99_ms']:8.1f} {f['max_ms']:8.1f} {f['statuses']}")
    print(f"coups sent after their slot: median {_lagged(lag, 50)} ms, "
          f"max {_lagged(lag, 100)} ms; replays {sum(t.replays_ok for t in tallies)}"
          f"/{sum(t.replays_asked for t in tallies)} answered with the same coup, "
          f"timeouts {sum(t.timeouts_committed for t in tallies)}"
          f"/{sum(t.timeouts for t in tallies)} found committed on retry, "
          f"shoes replaced {sum(t.state.shoes_opened for t in tables)}, "
          f"banker turns opened after a lost bank {turns}")
    print(f"report: {job}")
    server = server_times()
    in_django = sorted(server[rid] for t0, _, rid in rec.rows["coup"]
                       if start <= t0 < stop and rid in server)
    figures["coup"]["in_django"] = {
        "n": len(in_django),
        **{f"p{q}_ms": round(_tablets.percentile(in_django, q), 1) if in_django
           else None for q in (50, 95, 99)}}
    print("coups' time in Django (the access log): " + ", ".join(
        f"{k} {v}" for k, v in figures["coup"]["in_django"].items()))
    slow = slowest_coups(rec, start, stop, server=server)
    print("slowest coups (s into the window: ms at the client / in Django, with "
          "the pages over 50 ms in flight and the report's build): " + "; ".join(
              f"{c['at_s']} s: {c['ms']} / {c['server_ms']} ms, {c['slow_pages']} pages"
              + (", report" if c["report"] else "") for c in slow))
    print(f"verify (today's sessions): {result['acknowledged']} coups acknowledged,"
          f" {result['coups']} stored, {result['rows_lost']} lost, "
          f"{result['rows_duplicated']} duplicated, {result['unresolved']} "
          f"unresolved; {result['shoes']} shoes, {result['turns']} turns; "
          f"{result['ledger_differences']} ledger differences -> "
          + ("OK" if result["ok"] else "FAILED"))
    for p in result["problems"][:10] + rec.errors[:20]:
        print("  ", p)
    share = cpu["share_of_cores_pct"]
    print(f"\nCPU over the {cpu['window_s']} s window ({cpu['cores']} cores): "
          + ", ".join(f"{k} {v} s ({share[k]} %)" for k, v in cpu["cpu_s"].items())
          + f"; machine idle {cpu['machine_idle_pct']} %"
          + (f"; the web's pages pool {cpu['web_pages_s']} s of it"
             if cpu["web_pages_s"] else ""))
    bg = cpu["background"]
    print("background (beat's schedule): " + (
        f"{bg['checkpoints']} checkpoints signed in the window "
        f"({bg['per_second']}/s, longest gap {bg['max_gap_s']} s) over "
        f"{bg['log_rows']} change-log rows; {bg['surveillance_flags']} live "
        f"surveillance flags; beat sent {bg['beat_sent']}; the worker's tasks in "
        f"the window {bg['tasks_done']}, seconds {bg['worker_s_by_task']}" if bg["beat"]
        else "no beat (--no-beat): no checkpoint, no live surveillance"))
    limit = limit_text(cpu)
    print(f"what limits: {limit}")
    print("aims: coup p99 <= 100 ms {}, floor p99 <= 250 ms {}, stored once {}, "
          "report built {}, no client error {}".format(
              *("met" if v else "MISSED" for v in aims.values())))
    out = _benchdb.OUT_DIR / "floor.json"
    out.write_text(json.dumps({
        "benchmark": "floor", "command": "bench/bench_floor.py "
        + " ".join(sys.argv[1:]), "server": cmd[1:], "tables": args.tables,
        "bosses": args.bosses, "duration_s": args.duration, "history": hist,
        "workers": args.workers, "threads": args.threads,
        "worker_nice": args.worker_nice, "page_workers": args.page_workers,
        "worker_concurrency": args.worker_concurrency, "beat": not args.no_beat,
        "page_nice": args.page_nice, "turns_opened": turns,
        "setup_s": round(setup_s, 1), "latency": figures, "report": job,
        "slowest_coups": slow,
        "lag_ms": {"p50": _lagged(lag, 50), "max": _lagged(lag, 100)},
        "verify": result, "cpu": cpu, "limit": limit, "aims": AIMS, "met": aims,
        "errors": rec.errors[:50], "machine_before": before,
        "machine_after": _benchdb.machine(), "postgres": _benchdb.pg_settings(),
    }, indent=2, default=str) + "\n")
    print(f"written: {out.relative_to(_benchdb.ROOT)}")
    if not all(aims.values()):
        sys.exit(1)


def _lagged(values, q) -> float | None:
    if not values:
        return None
    return round(1000 * values[min(len(values) - 1, int(len(values) * q / 100))], 1)


def limit_text(cpu) -> str:
    used = dict(cpu["cpu_s"])
    top = max(used, key=used.get)
    share = cpu["share_of_cores_pct"][top]
    idle = cpu["machine_idle_pct"]
    if idle is not None and idle < 10:
        return (f"CPU: the machine was {100 - idle:.0f} % busy; the largest user "
                f"was {top} ({share} % of the cores)")
    return (f"not CPU-bound (machine {idle} % idle); the largest user was {top} "
            f"({share} % of the cores): latency is the requests' own work")


if __name__ == "__main__":
    main()
