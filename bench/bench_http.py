"""The coup endpoint against the bare one, over HTTP on loopback.

Run from the project root:  .venv/bin/python bench/bench_http.py
    [--clients 1,8,32] [--duration 8] [--warmup 1.5] [--rounds 3]
    [--worker-class gthread] [--workers 2] [--threads 4]

A fresh PostgreSQL database (see _benchdb.py), gunicorn in the background
(stopped by its pid at the end, also on error), and for each client count N,
in `--rounds` alternating pairs of windows: N clients post to
POST /api/v1/bench/bare/ (DRF + token auth + one INSERT), then N concurrent
keep-alive clients (asyncio, in a process of their own) post real coups,
each to its own table, dealt from a shuffled shoe with an Idempotency-Key,
opening a new banker turn when the bank is lost and a new shoe at the cut
card. The guard (issue 15): over the rounds, coup throughput >= 0.25 of the
bare endpoint's at every N, else exit 1.
Prints a table and writes var/bench/http.json. Afterwards every 201 must
match a stored row (Coup rows, bare change-log rows).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402
import _loadgen  # noqa: E402
import _server  # noqa: E402

# The guard (issue 15): in the same run the coup endpoint keeps at least this
# share of the bare single-INSERT endpoint's throughput, at every client
# count; below it the script exits 1. (The earlier aim of 0.5 and a p99 within
# 1.5x is withdrawn: the design's floor, a locked read then one batch of
# writes, is 0.50-0.56 for the coup alone; the p99 factor is still printed.)
GUARD_RATIO = 0.25


def setup(clients: list[int], rounds: int) -> tuple[str, dict[tuple, list[dict]]]:
    """A croupier with a token, and one table per client of each run (a
    round's clients start from a new shoe and the first banker seat)."""
    from casino.tokenauth import token_issue

    user = _benchdb.make_user("bench-croupier", "croupier")
    token = token_issue(user=user, device="bench")[1]
    tables = {}
    for n in clients:
        for r in range(rounds):
            tables[n, r] = []
            for i in range(n):
                _, session, shoe, _ = _benchdb.open_table(
                    user, f"Bench N{n} R{r} #{i}"
                )
                tables[n, r].append({"session": session.pk, "shoe": shoe.pk})
    return token, tables


def merge(parts: list[dict]) -> dict:
    """One window's figures from a run's rounds of that endpoint."""
    out = {"latencies": [], "errors": {}}
    for part in parts:
        out["latencies"] += part["latencies"]
        for what, count in part["errors"].items():
            out["errors"][what] = out["errors"].get(what, 0) + count
        for key in ("done_201", "aux", "aux_s", "server_cpu_s", "postgres_cpu_s",
                    "client_cpu_s"):
            out[key] = out.get(key, 0) + part[key]
    return out


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def summarise(kind: str, n: int, r: dict, duration: float) -> dict:
    lat = sorted(r["latencies"])
    count = max(len(lat), 1)
    # Share of the clients' time in the window spent on turn/shoe calls; a
    # closed loop would have spent it on coups at the same latency.
    aux_share = r["aux_s"] / (n * duration)
    return {
        "endpoint": kind,
        "clients": n,
        "requests": len(lat),
        "per_s": round(len(lat) / duration, 1),
        "aux_time_share": round(aux_share, 3),
        "per_s_without_aux": round(len(lat) / duration / (1 - aux_share), 1),
        "p50_ms": round(pct(lat, 50) * 1000, 2),
        "p99_ms": round(pct(lat, 99) * 1000, 2),
        # What 2 dedicated cores could serve if the server and PostgreSQL
        # were the only CPU users: steadier than req/s on a shared machine.
        "cpu_capacity_per_s": round(
            (os.cpu_count() or 1)
            / max(r["server_cpu_s"] + r["postgres_cpu_s"], 1e-9)
            * len(lat),
            1,
        ),
        "server_cpu_ms_per_req": round(r["server_cpu_s"] / count * 1000, 2),
        "postgres_cpu_ms_per_req": round(r["postgres_cpu_s"] / count * 1000, 2),
        "client_cpu_pct": round(100 * r["client_cpu_s"] / duration, 1),
        "aux_requests": r["aux"],
        "total_201": r["done_201"],
        "errors": r["errors"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=1.5)
    # Windows of the two endpoints alternate (bare, coup, bare, coup...): on a
    # machine whose speed drifts, one window each made the ratio swing by a
    # third from run to run, whatever the code.
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--worker-class", default="gthread", choices=["sync", "gthread"]
    )
    # On 2 cores, 2 gthread workers x 4 threads served the most per CPU second
    # and kept connections alive; sync x4 was close, with a lower p99 at 32.
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    if args.worker_class == "sync":
        args.threads = 1  # more threads would make gunicorn switch to gthread
    clients = [int(c) for c in args.clients.split(",")]
    if not 0 < args.duration <= 60 or max(clients) > 64:
        sys.exit("--duration must be in (0, 60] s and at most 64 clients")
    if not 1 <= args.rounds <= 10:
        sys.exit("--rounds must be in [1, 10]")

    url = _benchdb.configure()
    before = _benchdb.machine()  # what else was running when we started
    print(f"database: {url} (dropped and re-created)")
    _benchdb.recreate_database(url)
    token, tables = setup(clients, args.rounds)
    from django.db import connection

    connection.close()
    port = _server.free_port()
    proc, cmd = _server.start(args, port)
    print(f"server: {' '.join(cmd[1:])}  (pid {proc.pid})")
    rows, windows = [], {}
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            # Interleaved per client count and round, so both endpoints see
            # the same machine load (bare rows go to casino.BenchRow, not the
            # trail).
            for n in clients:
                for r in range(args.rounds):
                    for kind in ("bare", "coup"):
                        cfg = {
                            "kind": kind,
                            "clients": n,
                            "port": port,
                            "token": token,
                            "warmup": args.warmup,
                            "duration": args.duration,
                            "tables": tables[n, r],
                            "tag": f"{kind}{n}r{r}",
                            "master": proc.pid,
                            "db": url.rsplit("/", 1)[1],
                        }
                        got = pool.apply(_loadgen.run, (cfg,))
                        windows.setdefault((kind, n), []).append(got)
                        rate = len(got["latencies"]) / args.duration
                        print(f"  {kind:4s} x{n:<3d} round {r + 1}: {rate:8.1f}/s",
                              flush=True)
                for kind in ("bare", "coup"):
                    part = windows[kind, n]
                    rows.append(summarise(kind, n, merge(part),
                                          args.duration * len(part)))
    finally:
        _server.stop(proc)
    report(args, cmd, clients, rows, before, windows)


def report(args, cmd, clients, rows, before, windows) -> None:
    from casino.models import BenchRow
    from tables.models import Coup

    by = {(r["endpoint"], r["clients"]): r for r in rows}
    coups_201 = sum(r["total_201"] for r in rows if r["endpoint"] == "coup")
    bare_201 = sum(r["total_201"] for r in rows if r["endpoint"] == "bare")
    coup_rows = Coup.objects.count()
    bare_rows = BenchRow.objects.count()
    correct = coups_201 == coup_rows and bare_201 == bare_rows
    print(
        f"\n{'N':>3} {'endpoint':8} {'req/s':>7} {'no-aux':>7} {'p50 ms':>7} "
        f"{'p99 ms':>7} {'srv CPU':>8} {'pg CPU':>7} {'cap/s':>6} {'client':>6} "
        f"{'aux':>4} err"
    )
    ratios = {}
    for n in clients:
        for kind in ("bare", "coup"):
            r = by[(kind, n)]
            print(
                f"{n:3d} {kind:8} {r['per_s']:7.1f} {r['per_s_without_aux']:7.1f} "
                f"{r['p50_ms']:7.2f} {r['p99_ms']:7.2f} "
                f"{r['server_cpu_ms_per_req']:6.2f}ms "
                f"{r['postgres_cpu_ms_per_req']:5.2f}ms "
                f"{r['cpu_capacity_per_s']:6.0f} "
                f"{r['client_cpu_pct']:5.1f}% {100 * r['aux_time_share']:3.0f}% "
                f"{sum(r['errors'].values()) or '-'}"
            )
        bare, coup = by[("bare", n)], by[("coup", n)]
        ratios[n] = {
            "throughput": round(coup["per_s"] / bare["per_s"], 3),
            "throughput_without_aux": round(
                coup["per_s_without_aux"] / bare["per_s"], 3
            ),
            "p99": round(coup["p99_ms"] / bare["p99_ms"], 3),
            "cpu_capacity": round(
                coup["cpu_capacity_per_s"] / bare["cpu_capacity_per_s"], 3
            ),
        }
        x = ratios[n]
        # each round's own ratio, to show the spread the rounds average out
        x["rounds"] = [
            round(len(c["latencies"]) / max(len(b["latencies"]), 1), 3)
            for b, c in zip(windows["bare", n], windows["coup", n], strict=True)
        ]
        print(
            f"    coup/bare: throughput {x['throughput']:.2f} "
            f"({x['throughput_without_aux']:.2f} no-aux; guard >= {GUARD_RATIO})"
            f", cap {x['cpu_capacity']:.2f}, p99 {x['p99']:.2f}x; rounds "
            + " ".join(f"{v:.2f}" for v in x["rounds"])
        )
    for r in rows:
        for what, count in r["errors"].items():
            print(f"errors ({r['endpoint']} x{r['clients']}): {count} x {what}")
    meets = all(x["throughput"] >= GUARD_RATIO for x in ratios.values())
    print(
        "srv/pg CPU: gunicorn workers' and PostgreSQL backends' CPU per request,"
        " for coups incl. the\nturn/shoe calls (aux: the clients' share of time "
        "in them; no-aux: coups/s had that time\ngone to coups at the same "
        "latency); cap/s: req/s that CPU cost allows on all cores"
    )
    print(
        f"correctness: {coups_201} coup 201s, {coup_rows} Coup rows; "
        f"{bare_201} bare 201s, {bare_rows} rows -> "
        f"{'OK' if correct else 'MISMATCH'}"
    )
    print(f"guard (coup/bare throughput >= {GUARD_RATIO}): "
          f"{'held' if meets else 'BROKEN'}")
    result = {
        "benchmark": "http",
        "server": cmd[1:],
        "worker_class": args.worker_class,
        "workers": args.workers,
        "threads": args.threads,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "rounds": args.rounds,
        "results": rows,
        "ratios": ratios,
        "guard": {"throughput_ratio_min": GUARD_RATIO},
        "guard_held": meets,
        "correct": correct,
        "correctness": {
            "coup_201": coups_201,
            "coup_rows": coup_rows,
            "bare_201": bare_201,
            "bare_rows": bare_rows,
        },
        "machine_before": before,
        "machine_after": _benchdb.machine(),
        "postgres": _benchdb.pg_settings(),
    }
    out = _benchdb.OUT_DIR / "http.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {out.relative_to(_benchdb.ROOT)}")
    if not correct or not meets:
        sys.exit(1)


if __name__ == "__main__":
    main()
