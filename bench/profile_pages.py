"""Where a pit boss's page goes: queries and CPU of the floor page, its
cards' refresh and the review queue, in-process (Django's test client, no
network) against the floor bench_floor.py leaves with --keep.

Run from the project root, after `bench/bench_floor.py --keep`:

    .venv/bin/python bench/profile_pages.py [--reads 200] [--top 30] [--render]

The pages are read as bench_floor's pit bosses read them (bench-boss-0..,
signed in: a session in the database), with the floor's shared copies in
Redis (BENCH_REDIS_URL, flushed before and after; without it db 13, which
must be empty) and fresh: what is printed is a page's fixed cost, the part
every reader pays, not the rendering of 500 tables one reader in many does
(FLOOR_SHARE_SECONDS is set high, so no copy expires during the run);
with --render, FLOOR_SHARE_SECONDS is 0 and every read renders the whole
floor and queue, as the first reader after a change of state does (a flag
raised, a box counted: audit/pages/shared.py). For
each page: queries per read (by shape), wall and CPU ms per read, the
functions with the most cumulative time, and the CPU by area.
Writes var/bench/profile_pages.json.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402
from profile_coup import Queries, shape  # noqa: E402

PAGES = (("floor", "/floor/"), ("floor cards (htmx)", "/floor/tables/"),
         ("queue", "/floor/queue/"))
AREAS = [
    ("database wait (psycopg)", "psycopg"),
    ("Redis client", "redis"),
    ("templates", "django/template"),
    ("Django ORM / SQL compiler", "django/db"),
    ("sessions, auth, middleware", "django/contrib"),
    ("other Django", "django/"),
    ("this project (casino/, tables/, audit/)", str(_benchdb.ROOT) + "/"),
    ("stdlib and the rest", ""),
]


def area_split(stats: pstats.Stats) -> list[tuple[str, float]]:
    own: Counter = Counter()
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():
        for label, needle in AREAS:
            if needle in filename:
                own[label] += tottime
                break
    total = sum(own.values()) or 1.0
    return [(label, own[label] / total) for label, _ in AREAS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--render", action="store_true",
                        help="no shared copy: every read renders its page")
    args = parser.parse_args()
    os.environ.setdefault("BENCH_DATABASE_URL",
                          "postgres://postgres@127.0.0.1:5432/bench_floor")
    url = _benchdb.configure()
    given = os.environ.get("BENCH_REDIS_URL")
    redis_url = given or "redis://127.0.0.1:6379/13"
    os.environ["REDIS_URL"] = redis_url  # the cache as in production
    import bench_floor

    bench_floor.redis_take(redis_url, bool(given))
    try:
        out = profile(args, url)
    finally:
        bench_floor.redis_leave(redis_url, bool(given))
    path = _benchdb.OUT_DIR / ("profile_pages_render.json" if args.render
                               else "profile_pages.json")
    path.write_text(json.dumps(out, indent=2))
    print(f"written: {path.relative_to(_benchdb.ROOT)}")


def profile(args, url: str) -> dict:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    settings.FLOOR_SHARE_SECONDS = 0 if args.render else 3600
    boss = get_user_model().objects.filter(username="bench-boss-0").first()
    if boss is None:
        sys.exit(f"no bench-boss-0 in {url}: run bench/bench_floor.py --keep first")
    client = Client()
    client.force_login(boss)
    out = {"database": url.rsplit("/", 1)[1], "reads": args.reads,
           "render": args.render, "pages": {}}
    for label, path in PAGES:
        for _ in range(3):  # the shared copies made, every code path warm
            assert client.get(path).status_code == 200, path
        queries = Queries()
        with connection.execute_wrapper(queries):
            wall0, cpu0 = time.perf_counter(), time.process_time()
            for _ in range(args.reads):
                client.get(path)
            wall = (time.perf_counter() - wall0) / args.reads
            cpu = (time.process_time() - cpu0) / args.reads
        shapes = Counter(shape(sql) for sql, _ in queries.sql)
        db_ms: Counter = Counter()
        for sql, seconds in queries.sql:
            db_ms[shape(sql)] += 1000 * seconds / args.reads
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.reads):
            client.get(path)
        prof.disable()
        stats = pstats.Stats(prof)
        print(f"\n== {label} ({path}): {len(queries.sql) / args.reads:.2f} queries, "
              f"{wall * 1000:.2f} ms wall, {cpu * 1000:.2f} ms CPU per read")
        for s, n in shapes.most_common():
            print(f"   {n / args.reads:5.2f}  {db_ms[s]:7.2f} ms  {s}")
        print("CPU by area (cProfile own time):")
        split = area_split(stats)
        for name, share in split:
            print(f"   {share * 100:5.1f}%  {name}")
        stats.sort_stats("cumulative").print_stats(args.top)
        out["pages"][label] = {
            "path": path, "queries": round(len(queries.sql) / args.reads, 2),
            "wall_ms": round(wall * 1000, 2), "cpu_ms": round(cpu * 1000, 2),
            "shapes": {s: round(n / args.reads, 2) for s, n in shapes.items()},
            "db_ms": {s: round(v, 2) for s, v in db_ms.items()},
            "areas": {name: round(share, 3) for name, share in split}}
    return out


if __name__ == "__main__":
    main()
