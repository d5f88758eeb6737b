"""Time the surveillance core in memory: detect() on synthetic coups.

    .venv/bin/python bench/bench_surveillance_core.py            # 30k and 1M
    .venv/bin/python bench/bench_surveillance_core.py --size day   # one size

One gaming day of a 40-table casino is ~30,000 coups (750 a table), a month
~1M (40 tables x 25 days x 1,000). The issue's budgets: under 10 s and under
2 min for the whole nightly run; this is the statistics' share (no database).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from audit.surveillance import detect, synth  # noqa: E402

SIZES = {"day": dict(tables=40, days=1, coups_per_day=750),
         "month": dict(tables=40, days=25, coups_per_day=1000)}


def run(name: str, **size) -> None:
    t0 = time.perf_counter()
    s = synth.honest(seed=1, **size)
    t1 = time.perf_counter()
    report = detect.analyse(s.rows, s.shoes)
    t2 = time.perf_counter()
    # a second call: the CUSUM limit and the multinomial tables are cached
    detect.analyse(s.rows, s.shoes)
    t3 = time.perf_counter()
    print(f"{name}: {len(s.rows):,} coups, {len(s.shoes):,} shoes, "
          f"{report.tests:,} tests, {len(report.alerts)} alerts | "
          f"synth {t1 - t0:.2f} s, detect {t2 - t1:.2f} s (cold), "
          f"{t3 - t2:.2f} s (warm)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=sorted(SIZES), action="append")
    args = ap.parse_args()
    for name in args.size or ["day", "month"]:
        run(name, **SIZES[name])


if __name__ == "__main__":
    main()
