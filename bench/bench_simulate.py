"""Coups per second through the services: ``tables.simulation.simulate``
against PostgreSQL (a fresh database, see _benchdb.py). Target: >= 1,000
coups/s.

Run from the project root:  .venv/bin/python bench/bench_simulate.py
    [--tables T] [--shoes S] [--seed N] [--repeat R]

Each repeat simulates T tables x S shoes on new tables (about 60 coups per
shoe; each shoe is one shoe_play call, which checks every coup and turn event
as coup_record and the turn services do and writes every coup's stakes,
findings and change-log row). The best repeat and the median are printed,
with the load average, and written to var/bench/simulate.json with the query
count per coup.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402

TARGET = 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=2)
    parser.add_argument("--shoes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    url = _benchdb.configure()
    machine_before = _benchdb.machine()  # what else was running when we started
    print(f"database: {url} (dropped and re-created)")
    _benchdb.recreate_database(url)

    from django.db import connection

    from tables.models import Coup
    from tables.simulation import simulate

    user = _benchdb.make_user("bench-sim", "croupier")
    # Count the queries on a shoe of its own, then time the others.
    queries: list[str] = []

    def record(execute, sql, *rest):
        queries.append(sql)
        return execute(sql, *rest)

    before = Coup.objects.count()
    with connection.execute_wrapper(record):
        simulate(user=user, tables=1, shoes=1, seed=args.seed, table_prefix="Count")
    queries_per_coup = len(queries) / (Coup.objects.count() - before)
    runs = []
    for r in range(args.repeat):
        before = Coup.objects.count()
        start = time.perf_counter()
        report = simulate(
            user=user,
            tables=args.tables,
            shoes=args.shoes,
            seed=args.seed + r,
            table_prefix=f"Bench{r}",
        )
        elapsed = time.perf_counter() - start
        stored = Coup.objects.count() - before
        if stored != report.coups:
            sys.exit(f"simulate reported {report.coups} coups, {stored} stored")
        rate = report.coups / elapsed
        runs.append(
            {
                "coups": report.coups,
                "shoes": report.shoes,
                "seconds": round(elapsed, 3),
                "coups_per_s": round(rate, 1),
                "findings": report.findings,
            }
        )
        print(
            f"run {r + 1}: {report.coups} coups, {report.shoes} shoes in "
            f"{elapsed:.2f}s = {rate:,.0f} coups/s"
        )

    rates = [run["coups_per_s"] for run in runs]
    best, median = max(rates), statistics.median(rates)
    verdict = "meets" if median >= TARGET else "MISSES"
    print(
        f"\nsimulate(): best {best:,.0f} coups/s, median {median:,.0f} coups/s "
        f"-> {verdict} the {TARGET:,.0f} coups/s target"
    )
    print(
        f"queries per coup (a whole shoe, incl. its shoe and turn services): "
        f"{queries_per_coup:.2f}"
    )
    after = _benchdb.machine()
    print(
        f"load average (1 min) {machine_before['loadavg_1m']} before, "
        f"{after['loadavg_1m']} after, on {after['cpus']} CPUs; CPU pressure "
        f"{after['cpu_pressure_avg60_pct']} % (avg60)"
    )
    result = {
        "benchmark": "simulate",
        "target_coups_per_s": TARGET,
        "tables": args.tables,
        "shoes": args.shoes,
        "seed": args.seed,
        "best_coups_per_s": best,
        "median_coups_per_s": median,
        "meets_target": median >= TARGET,
        "runs": runs,
        "queries_per_coup": round(queries_per_coup, 2),
        "machine_before": machine_before,
        "machine_after": after,
        "postgres": _benchdb.pg_settings(),
    }
    out = _benchdb.OUT_DIR / "simulate.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {out.relative_to(_benchdb.ROOT)}")


if __name__ == "__main__":
    main()
