"""The live surveillance's look at the largest casinos' size (issue 38): one
look (audit/surveillance/live.py live_look, the body of the beat task
audit.surveillance_live) over an open gaming day of 1,000 tables and
~100,000 coups, its statements counted and timed.

    .venv/bin/python bench/bench_live.py [--tables 1000] [--coups 100000]
                                         [--days 2] [--repeat 5]

A dedicated PostgreSQL database (bench_surveillance's name with "_live",
dropped and re-created) is filled server-side as bench_surveillance.py fills
its own (its setup_floor and load_coups: sessions, shoes of 75 coups, banker
turns half with a player card, 0.3 % false draws and one croupier at 3 %,
0.1 % corrected coups), over ``--days`` gaming days; the last day's sessions
are left open (the shift being dealt), the days before are its history (the
croupiers' trailing reference, the budget's previous day). Then:

- the first look of the day (cold: it reads the trailing days too, and
  raises the planted croupier);
- ``--repeat`` looks after it (warm: the trailing figures are kept for the
  day; nothing new to raise), their median and largest time.

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--coups", type=int, default=100_000,
                    help="coups of the open gaming day (default 100,000)")
    ap.add_argument("--days", type=int, default=2,
                    help="gaming days filled, the last one open (default 2)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    url = _benchdb.configure()
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    _benchdb.recreate_database(url)
    floor_fill.TABLES, floor_fill.DAYS = args.tables, args.days
    floor_fill.CROUPIERS = max(1, args.tables // 5)  # 500 coups each a day
    per_cell = max(1, round(args.coups / args.tables))
    t = time.perf_counter()
    floor = floor_fill.setup_floor(per_cell)
    fill = floor_fill.load_coups(per_cell, floor)
    from django.db import connection

    from tables.models import TableSession

    last = floor_fill.START + timedelta(days=args.days - 1)
    with connection.cursor() as cur:  # the last day is being dealt
        cur.execute(f"UPDATE {TableSession._meta.db_table} SET closed_at = NULL, "
                    "closed_by_id = NULL WHERE gaming_day = %s", [last])
        cur.execute("ANALYZE")
    setup = time.perf_counter() - t
    first, first_n, first_s = look()
    warm = [look() for _ in range(args.repeat)]
    secs = [s for _, _, s in warm]
    out = {
        "machine": _benchdb.machine(), "pg": _benchdb.pg_settings(),
        "tables": args.tables, "days": args.days, "coups_per_table": per_cell,
        "open_day": last.isoformat(), "fill_seconds": round(fill, 1),
        "setup_seconds": round(setup, 1),
        "first_look": {"seconds": round(first_s, 3), "statements": first_n,
                       **first},
        "looks": {"median_s": round(statistics.median(secs), 3),
                  "max_s": round(max(secs), 3),
                  "statements": sorted({n for _, n, _ in warm}),
                  "raised": sum(o.get("raised", 0) for o, _, _ in warm),
                  "coups": warm[-1][0].get("coups")},
    }
    print(f"open day {last}: {first['coups']:,} coups at {args.tables} tables")
    print(f"first look (cold: trailing days read, alerts written): "
          f"{first_s:.3f} s, {first_n} statements, {first['raised']} raised")
    print(f"next {args.repeat} looks: median {out['looks']['median_s']:.3f} s, "
          f"max {out['looks']['max_s']:.3f} s, statements "
          f"{out['looks']['statements']}, raised {out['looks']['raised']}")
    OUT.write_text(json.dumps(out, indent=2, default=str))
    print(f"results: {OUT}")


if __name__ == "__main__":
    main()
