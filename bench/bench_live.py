"""The live surveillance's look at the largest casinos' size (issue 38): one
look (audit/surveillance/live.py live_look, the body of the beat task
audit.surveillance_live) over an open gaming day of 1,000 tables and
~100,000 coups and the closed days of its window, its statements counted
and timed.

    .venv/bin/python bench/bench_live.py [--tables 1000] [--coups 100000]
                                         [--window 7] [--days 8] [--repeat 5]

A dedicated PostgreSQL database (bench_surveillance's name with "_live",
dropped and re-created) is filled server-side as bench_surveillance.py fills
its own (its setup_floor and load_coups: sessions, shoes of 75 coups, banker
turns half with a player card, 0.3 % false draws and one croupier at 3 %,
0.1 % corrected coups), ``--coups`` a day over ``--days`` gaming days
(default: the window and the day before it, the first window's budget),
with the table-day rollups the coups keep in step (the closed days' key,
the croupiers' trailing reference); the last day's sessions are left open
(the shift being dealt). ``SURVEILLANCE_LIVE_WINDOW_DAYS`` is ``--window``.
Then:

- the first look (cold: it reads each day's trailing figures and each closed
  day's groups, and raises the planted croupier);
- the first look of another worker process (its memory empty: the closed
  days' groups and the trailing figures from the shared cache);
- ``--repeat`` looks after it (warm: the closed days kept; nothing new to
  raise), their median and largest time.

Each look's statements are counted (connection.execute_wrapper). Results go
to var/bench/live.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_live")
import _benchdb  # noqa: E402
import bench_surveillance as floor_fill  # noqa: E402

OUT = _benchdb.OUT_DIR / "live.json"


class Count:
    """Statements a block sends (connection.execute_wrapper)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, execute, sql, params, many, context):
        self.n += 1
        return execute(sql, params, many, context)


def look() -> tuple[dict, int, float]:
    from django.db import connection

    from audit.surveillance.live import live_look

    counter = Count()
    t = time.perf_counter()
    with connection.execute_wrapper(counter):
        out = live_look()
    return out, counter.n, time.perf_counter() - t


def fill_rollups() -> float:
    """The table-day rollups of the current coups, in SQL (what the coup path
    keeps in step as it writes; the levy columns, which no look reads, 0)."""
    from django.db import connection

    from tables.models import Coup, Finding, Shoe, TableDayRollup, TableSession

    c, f = Coup._meta.db_table, Finding._meta.db_table
    s, ts = Shoe._meta.db_table, TableSession._meta.db_table
    t = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(f"""
            INSERT INTO {TableDayRollup._meta.db_table} (table_id, gaming_day,
              rules_id, coups, banker_wins, punter_wins, ties, covered, covered_sq,
              commission, levy_mean, levy_var, findings)
            SELECT ts.table_id, c.gaming_day, c.rules_id, count(*),
              count(*) FILTER (WHERE c.outcome = 'banker'),
              count(*) FILTER (WHERE c.outcome = 'punter'),
              count(*) FILTER (WHERE c.outcome = 'tie'),
              sum(c.covered), sum(c.covered * c.covered), sum(c.commission), 0, 0,
              jsonb_build_object('false_draw', count(*) FILTER (WHERE EXISTS (
                SELECT 1 FROM {f} x WHERE x.coup_id = c.id
                AND x.code = 'false_draw')))
            FROM {c} c JOIN {s} s ON s.id = c.shoe_id
            JOIN {ts} ts ON ts.id = s.session_id
            WHERE NOT EXISTS (SELECT 1 FROM {c} n WHERE n.shoe_id = c.shoe_id
                              AND n.seq = c.seq AND n.revision > c.revision)
            GROUP BY ts.table_id, c.gaming_day, c.rules_id""")
        cur.execute("VACUUM ANALYZE")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--coups", type=int, default=100_000,
                    help="coups of the open gaming day (default 100,000)")
    ap.add_argument("--window", type=int, default=7,
                    help="SURVEILLANCE_LIVE_WINDOW_DAYS (default 7)")
    ap.add_argument("--days", type=int, default=None,
                    help="gaming days filled, the last one open (default: "
                         "the window and the day before it)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    args.days = args.days or args.window + 1
    url = _benchdb.configure()
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ["SURVEILLANCE_LIVE_WINDOW_DAYS"] = str(args.window)
    _benchdb.recreate_database(url)
    floor_fill.TABLES, floor_fill.DAYS = args.tables, args.days
    floor_fill.CROUPIERS = max(1, args.tables // 5)  # 500 coups each a day
    per_cell = max(1, round(args.coups / args.tables))
    t = time.perf_counter()
    floor = floor_fill.setup_floor(per_cell)
    fill = floor_fill.load_coups(per_cell, floor)
    fill += fill_rollups()
    from django.db import connection

    from tables.models import TableSession

    last = floor_fill.START + timedelta(days=args.days - 1)
    with connection.cursor() as cur:  # the last day is being dealt
        cur.execute(f"UPDATE {TableSession._meta.db_table} SET closed_at = NULL, "
                    "closed_by_id = NULL WHERE gaming_day = %s", [last])
        cur.execute("ANALYZE")
    setup = time.perf_counter() - t
    first, first_n, first_s = look()
    from audit.surveillance import live_days

    with live_days._cache_lock:  # another process: its memory empty
        live_days._groups_cache.clear()
        live_days._trailing_cache.clear()
    other, other_n, other_s = look()
    warm = [look() for _ in range(args.repeat)]
    secs = [s for _, _, s in warm]
    out = {
        "machine": _benchdb.machine(), "pg": _benchdb.pg_settings(),
        "tables": args.tables, "days": args.days, "coups_per_table": per_cell,
        "open_day": last.isoformat(), "fill_seconds": round(fill, 1),
        "setup_seconds": round(setup, 1),
        "window": args.window,
        "first_look": {"seconds": round(first_s, 3), "statements": first_n,
                       **first},
        "other_process_first_look": {"seconds": round(other_s, 3),
                                     "statements": other_n, **other},
        "looks": {"median_s": round(statistics.median(secs), 3),
                  "max_s": round(max(secs), 3),
                  "statements": sorted({n for _, n, _ in warm}),
                  "raised": sum(o.get("raised", 0) for o, _, _ in warm),
                  "coups": warm[-1][0].get("coups")},
    }
    print(f"open day {last}: {first['coups']:,} coups at {args.tables} tables")
    print(f"window {args.window} days, {args.days} days filled")
    print(f"first look (cold: trailing figures and closed days' groups read, "
          f"alerts written): {first_s:.3f} s, {first_n} statements, "
          f"{first['raised']} raised")
    print(f"another process's first look (shared cache): {other_s:.3f} s, "
          f"{other_n} statements")
    print(f"next {args.repeat} looks: median {out['looks']['median_s']:.3f} s, "
          f"max {out['looks']['max_s']:.3f} s, statements "
          f"{out['looks']['statements']}, raised {out['looks']['raised']}")
    OUT.write_text(json.dumps(out, indent=2, default=str))
    print(f"results: {OUT}")


if __name__ == "__main__":
    main()
