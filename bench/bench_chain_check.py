"""What it costs to check the keyed chain before an anchor is signed (issue
34 item 3, casino/chain_check.py): each anchor checks the rows written since
the last checked one (their links, HMACs and public links), read from
PostgreSQL in pages of 2,000.

Run from the project root:
    .venv/bin/python bench/bench_chain_check.py [--tables 20] [--shoes 10]
        [--tails 500,6500,20000] [--repeat 3] [--reuse]

Fills a database of its own (bench_chain_check) through the services
(`tables.simulation.simulate`: every coup with its change-log row, links
and HMACs), then times the check over the last N log rows for each N of
`--tails` (best of `--repeat`), and one whole anchor (`trail_anchor`: the
check since the last anchor, the signature, the file). Two tails are the
ones to read: a month of 40 tables writes about 1.5M log rows (docs/benchmarks.md,
*Benchmarks*), 520 per 15 minutes; a 500-table floor about 6,500.
Writes var/bench/chain_check.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_chain_check")
import _benchdb  # noqa: E402

OUT = _benchdb.OUT_DIR / "chain_check.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=20)
    p.add_argument("--shoes", type=int, default=10)
    p.add_argument("--tails", default="500,6500,20000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--reuse", action="store_true")
    args = p.parse_args()
    url = _benchdb.configure()
    os.environ["TRAIL_ANCHOR_DIR"] = str(_benchdb.OUT_DIR / "chain_check_anchors")
    if not args.reuse:
        _benchdb.recreate_database(url)
    import django

    django.setup()
    from casino.anchors import trail_anchor
    from casino.chain_check import _walk
    from casino.models import ChangeLog
    from tables.simulation import simulate

    if not args.reuse:
        user = _benchdb.make_user("bench-chain", "manager")
        started = time.perf_counter()
        simulate(user=user, tables=args.tables, shoes=args.shoes, seed=1)
        print(f"filled in {time.perf_counter() - started:.0f} s")
    head = ChangeLog.objects.order_by("-id").values_list("id", flat=True).first()
    figures = {"log_rows": head, "tails": {}, "machine": _benchdb.machine()}
    for tail in (int(t) for t in args.tails.split(",")):
        first = max(head - tail, 0)
        start = (ChangeLog.objects.filter(id=first)
                 .values_list("id", "hash", "link").first()) or (0, "0" * 64,
                                                                 "0" * 64)
        best, cpu = min(_timed(_walk, start, head) for _ in range(args.repeat))
        n = head - start[0]
        figures["tails"][n] = {"seconds": round(best, 4), "cpu_seconds": round(
            cpu, 4), "us_per_row": round(best / n * 1e6, 1)}
        print(f"check of the last {n} rows: {best * 1000:.0f} ms wall, "
              f"{cpu * 1000:.0f} ms CPU in this process ({best / n * 1e6:.1f} us "
              "a row)")
    trail_anchor(reason="bench: the whole chain, once")
    _more(args)
    since = ChangeLog.objects.order_by("-id").values_list("id", flat=True).first()
    took, _ = _timed(trail_anchor, reason="bench")
    figures["anchor"] = {"rows_since_last": since - head, "seconds": round(took, 4)}
    figures["load_average"] = os.getloadavg()
    print(f"one anchor, {since - head} rows since the last: {took * 1000:.0f} ms "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    OUT.write_text(json.dumps(figures, indent=2))
    print(f"written to {OUT}")


def _more(args) -> None:
    """One more table's shoe: rows written since the last anchor."""
    from django.contrib.auth import get_user_model

    from tables.simulation import simulate

    simulate(user=get_user_model().objects.get(username="bench-chain"), tables=1,
             shoes=1, seed=2, table_prefix=f"More{time.time_ns()}")


def _timed(fn, *args, **kwargs) -> tuple[float, float]:
    """(wall, CPU of this process) seconds: the machine is shared, and the
    CPU time is what the work costs here (the server's part is not in it)."""
    started, cpu = time.perf_counter(), time.process_time()
    fn(*args, **kwargs)
    return time.perf_counter() - started, time.process_time() - cpu


if __name__ == "__main__":
    main()
