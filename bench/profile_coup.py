"""Where a coup's time goes: queries per request and a cProfile of the coup
endpoint, in-process (DRF's APIClient, no network) against PostgreSQL.

Run from the project root:  .venv/bin/python bench/profile_coup.py
    [--coups N] [--top 30] [--sql]

Prints, for the coup endpoint and for the bare endpoint: queries per request,
wall time per request, the queries of one coup request (--sql: in full), the
functions with the most cumulative time, and a split of the coup request's
time into areas (database round trips, ORM, DRF, engine...). Also the wall
time of the request's steps (token auth, validation, the lock and write round
trips, the engine, the response), and a floor: the bare request's time plus
the coup's round trips (the lock; the chain and the writes), i.e. what a
coup would cost if everything else in it were free; bare / floor is the
best throughput ratio this design can reach (bench_http.py's guard is
0.25), without and with the turn openings a lost bank adds. Writes
var/bench/profile_coup.json.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402

# Areas of a coup request, by the file a function's own time is spent in.
AREAS = [
    ("database wait (psycopg)", "psycopg"),
    ("Django ORM / SQL compiler", "django/db"),
    ("DRF (serializers, views)", "rest_framework"),
    ("other Django (request, middleware)", "django/"),
    ("engine (tables/chemmy)", "tables/chemmy"),
    # this checkout, wherever it is (a worktree of an older release too)
    ("services & views (tables/, casino/)", str(_benchdb.ROOT) + "/"),
    ("json / decimal / stdlib", ""),
]


def shape(sql: str) -> str:
    if sql.startswith("WITH "):  # ledger_pg's batches: one statement each
        from tables.services.ledger_pg import statement_parts

        return "WITH " + " + ".join(statement_parts(sql))
    sql = re.sub(r'"s\d+_x\d+"', "<savepoint>", sql)
    m = re.match(r'(SELECT|INSERT INTO|UPDATE|DELETE FROM)\s.*?"(\w+)"', sql, re.S)
    if m and m.group(1) == "SELECT":
        where = re.search(r'FROM "(\w+)"', sql)
        lock = " FOR UPDATE" if re.search(r"FOR (NO KEY )?UPDATE", sql) else ""
        joins = sql.count(" JOIN ")
        return (
            f"SELECT {where.group(1) if where else '?'}"
            + (f" +{joins} joins" if joins else "")
            + lock
        )
    return f"{m.group(1)} {m.group(2)}" if m else sql.split()[0] + " " + sql[:40]


class Queries:
    """Records the SQL of every query (execute_wrapper: works with DEBUG
    off, unlike connection.queries, and has no 9,000-query cap)."""

    def __init__(self):
        self.sql: list[tuple[str, float]] = []

    def __call__(self, execute, sql, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.sql.append((sql, time.perf_counter() - t0))


class Phases:
    """Wall time spent inside a few functions of the request path, by label:
    wraps them with perf_counter while installed (no profiler overhead)."""

    # (label, module path, attribute path): the steps of a coup request and
    # of a turn opening, outermost first.
    POINTS = [
        (
            "token auth (both endpoints)",
            "casino.tokenauth",
            "TokenAuthentication.authenticate",
        ),
        (
            "coup: input validation",
            "tables.api.serializers",
            "CoupInSerializer.is_valid",
        ),
        ("coup: lock round trip", "tables.services.ledger_pg", "lock_for_coup"),
        ("coup: engine, settlement, rows", "tables.services.coups", "coup_prepare"),
        ("coup: write round trip", "tables.services.ledger_pg", "coup_write"),
        ("coup: response body", "tables.api.serializers", "coup_payload"),
        ("coup: service in all (+BEGIN/COMMIT)", "tables.services", "coup_record"),
        ("turn: lock round trip", "tables.services.ledger_pg", "lock_for_turn"),
        ("turn: write round trip", "tables.services.ledger_pg", "turn_write"),
        ("turn: service in all (+BEGIN/COMMIT)", "tables.services", "banker_turn_open"),
    ]

    def __init__(self):
        self.wall: Counter = Counter()
        self._undo = []

    def install(self) -> None:
        import importlib

        for label, module, attr in self.POINTS:
            owner = importlib.import_module(module)
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            own = name in vars(owner)  # not inherited: put it back on undo
            original = getattr(owner, name)
            setattr(owner, name, self._timed(label, original))
            self._undo.append((owner, name, original, own))

    def remove(self) -> None:
        for owner, name, original, own in reversed(self._undo):
            if own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
        self._undo.clear()

    def _timed(self, label, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[label] += time.perf_counter() - t0

        return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coups", type=int, default=300)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="cumulative", help="pstats sort key")
    parser.add_argument("--sql", action="store_true")
    parser.add_argument(
        "--pstats", metavar="FILE", help="also write the cProfile data there"
    )
    parser.add_argument(
        "--server-binding",
        action="store_true",
        help="try OPTIONS server_side_binding + prepare_threshold=5",
    )
    args = parser.parse_args()

    url = _benchdb.configure()
    _benchdb.recreate_database(url)
    from django.db import connection

    if args.server_binding:  # an experiment: settings.py has no switch for it
        connection.close()
        connection.settings_dict["OPTIONS"].update(
            server_side_binding=True, prepare_threshold=5
        )
    from _dealer import ApiDealer
    from rest_framework.test import APIClient

    from casino.tokenauth import token_issue

    user = _benchdb.make_user("bench-profile", "croupier")
    _, session, shoe, _ = _benchdb.open_table(user, "Profile")
    client = APIClient()
    token = token_issue(user=user, device="profile")[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    dealer = ApiDealer(client, session.pk, shoe.pk)

    def next_coup(k: int):  # a new shoe, when due, before the timer starts
        return dealer.next_coup(), f"profile-{k}"

    # The turn a lost bank makes the next banker open (a third of the
    # clients' time in bench_http.py): timed and counted on their own.
    turns = {"n": 0, "wall": 0.0, "cpu": 0.0, "queries": 0, "cpus": []}

    def after(resp):
        assert resp.status_code == 201, resp.content
        nxt = resp.json()["next_banker_seat"]
        if nxt is not None:
            ctx = Queries()
            t0, c0 = time.perf_counter(), time.process_time()
            with connection.execute_wrapper(ctx):
                r = dealer.open_turn(nxt)
            turns["wall"] += time.perf_counter() - t0
            turns["cpu"] += time.process_time() - c0
            turns["cpus"].append(time.process_time() - c0)
            turns["n"] += 1
            turns["queries"] += len(ctx.sql)
            assert r.status_code == 201, r.content

    def post_coup(coup):
        return dealer.post_coup(*coup)

    for k in range(20):  # warm-up: caches, connection, first shoe
        after(post_coup(next_coup(k)))

    # 1. Plain timing: wall and this process's CPU (the rest is waiting on
    # PostgreSQL), coup requests only.
    wall = cpu = 0.0
    cpus = []  # per request: the median is steadier than the mean on a VM
    for k in range(20, 20 + args.coups):
        coup = next_coup(k)
        t0, c0 = time.perf_counter(), time.process_time()
        resp = post_coup(coup)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        cpus.append(time.process_time() - c0)
        after(resp)
    # 1b. The same, with the request's steps timed (Phases): coup requests
    # and the turn openings that follow them, then bare requests.
    phases = Phases()
    phases.install()
    turns_before = dict(turns)
    t0 = time.perf_counter()
    for k in range(10_000, 10_000 + args.coups):
        coup = next_coup(k)
        c0 = time.perf_counter()
        resp = post_coup(coup)
        phases.wall["coup: whole request"] += time.perf_counter() - c0
        after(resp)
    phases.wall["turn: whole request"] = turns["wall"] - turns_before["wall"]
    phase_turns = turns["n"] - turns_before["n"]
    phases.remove()
    # 2. Queries and cProfile, coups only.
    counts, shapes, one = [], Counter(), None
    prof = cProfile.Profile()
    for k in range(20 + args.coups, 20 + 2 * args.coups):
        coup, ctx = next_coup(k), Queries()
        with connection.execute_wrapper(ctx):
            prof.enable()
            resp = post_coup(coup)
            prof.disable()
        after(resp)
        counts.append(len(ctx.sql))
        shapes.update(shape(sql) for sql, _ in ctx.sql)
        one = one or ctx.sql
    # 3. The bare endpoint, last: its rows are outside the change log's hash
    # chain, and a chained row written after one fails.
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(args.coups):
        client.post("/api/v1/bench/bare/", {}, format="json")
    bare_ms = (time.perf_counter() - t0) / args.coups * 1000
    bare_cpu = (time.process_time() - c0) / args.coups * 1000
    ctx = Queries()
    with connection.execute_wrapper(ctx):
        client.post("/api/v1/bench/bare/", {}, format="json")
    bare_q = len(ctx.sql)

    n = len(counts)
    n = args.coups
    print(
        f"coup endpoint: {sum(counts) / n:.2f} queries per request (+ BEGIN and "
        f"COMMIT), {wall / n * 1000:.2f} ms per request, of which "
        f"{cpu / n * 1000:.2f} ms CPU in this process"
    )
    tn = max(turns["n"], 1)
    print(
        f"turn opening (after a lost bank, {turns['n']} of them): "
        f"{turns['queries'] / tn:.2f} queries, {turns['wall'] / tn * 1000:.2f} ms "
        f"per request, of which {turns['cpu'] / tn * 1000:.2f} ms CPU"
    )
    med = statistics.median(cpus) * 1000
    med_turn = statistics.median(turns["cpus"] or [0]) * 1000
    print(
        f"median CPU: coup {med:.2f} ms, turn opening {med_turn:.2f} ms; per coup "
        f"with its share of turn openings: "
        f"{med + med_turn * turns['n'] / (20 + 3 * args.coups):.2f} ms"
    )
    print(
        f"bare endpoint: {bare_q} queries per request, {bare_ms:.2f} ms per "
        f"request, of which {bare_cpu:.2f} ms CPU in this process\n"
    )
    print(
        f"where a coup request's wall time goes ({args.coups} coups, "
        f"{phase_turns} turn openings; ms per request of its kind):"
    )
    per = {}
    order = [label for label, _, _ in Phases.POINTS]
    order.insert(7, "coup: whole request")  # after the coup's steps
    order.append("turn: whole request")
    for label in order:
        seconds = phases.wall[label]
        count = phase_turns if label.startswith("turn") else args.coups
        if label.startswith("token"):
            count = args.coups + phase_turns
        per[label] = seconds / max(count, 1) * 1000
        print(f"  {per[label]:6.2f} ms  {label}")
    # The floor: a coup request that cost the bare request plus its two
    # database round trips and nothing else, and a turn opening likewise.
    share = phase_turns / args.coups
    floor = bare_ms + per["coup: lock round trip"] + per["coup: write round trip"]
    turn_floor = (
        bare_ms
        + per.get("turn: lock round trip", 0)
        + per.get("turn: write round trip", 0)
    )
    print(
        f"floor: bare {bare_ms:.2f} ms + the coup's round trips = "
        f"{floor:.2f} ms -> at best {bare_ms / floor:.2f} of the bare throughput;"
        f"\n       with {share:.2f} turn openings per coup at their own floor "
        f"({turn_floor:.2f} ms): at best "
        f"{bare_ms / (floor + share * turn_floor):.2f}\n"
    )
    print("queries per coup request, by shape:")
    for s, c in shapes.most_common():
        print(f"  {c / n:5.2f}  {s}")
    print("\none coup request:")
    for sql, t in one:
        print(f"  {t * 1000:6.2f} ms  " + (sql if args.sql else shape(sql)))
    if args.pstats:
        prof.dump_stats(args.pstats)
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())  # own time of every function
    areas = Counter()
    for (file, _, _), v in stats.stats.items():
        areas[next(a for a, key in AREAS if key in file)] += v[2]
    print("\nwhere a coup request's time goes (cProfile own time, by area):")
    for area, t in areas.most_common():
        print(f"  {100 * t / total:5.1f}%  {area}")
    print()
    stats.sort_stats(args.sort).print_stats(args.top)
    out = _benchdb.OUT_DIR / "profile_coup.json"
    out.write_text(
        json.dumps(
            {
                "coups": n,
                "queries_per_coup": round(sum(counts) / n, 2),
                "ms_per_coup": round(wall / n * 1000, 2),
                "cpu_ms_per_coup": round(cpu / n * 1000, 2),
                "bare_queries": bare_q,
                "bare_ms": round(bare_ms, 2),
                "bare_cpu_ms": round(bare_cpu, 2),
                "server_binding": args.server_binding,
                "phases_ms": {k: round(v, 3) for k, v in per.items()},
                "turn_openings_per_coup": round(share, 3),
                "floor_ratio": round(bare_ms / floor, 3),
                "floor_ratio_with_turns": round(
                    bare_ms / (floor + share * turn_floor), 3
                ),
                "query_shapes_per_coup": {
                    s: round(c / n, 2) for s, c in shapes.items()
                },
                "areas_share": {a: round(t / total, 3) for a, t in areas.items()},
                "machine": _benchdb.machine(),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written: {out.relative_to(_benchdb.ROOT)}")


if __name__ == "__main__":
    main()
