"""Load: N simulated tablets recording real coups over HTTP, then proof that
nothing was lost or doubled.

Run from the project root (or `make load LOAD_ARGS="..."`):

    .venv/bin/python bench/load.py [--clients 8,32,64] [--duration 6]
        [--shared 0.25] [--replay-rate 0.05] [--timeout-rate 0.05]
        [--workers 3] [--threads 4] [--database-url postgres://.../load_casino]
        [--out var/reliability/load.json]

A fresh PostgreSQL database (default load_casino on 127.0.0.1:5432, dropped
and re-created, migrated), gunicorn on a free loopback port, and for each
client count N: N tablets (threads, keep-alive http.client, one token each),
a quarter of them (--shared) at ONE shared table, the others each at a table
of its own. Tablets read their table's house rules, deal real coups and
stake them by those rules (bench/_dealer.py: a tie's stakes stay on the
table for the next coup under the default tie rule), and post them with an
Idempotency-Key;
they re-send some coups they got a 201 for, give up waiting on others after
a few milliseconds and retry them (the first request often committed), and
retry anything answered with a transport error or a 5xx. Each level runs for
--duration seconds (after a 1 s warm-up) and stops by itself; coups in
flight at the end are resolved within 20 s.

Afterwards (bench/_harness.verify): the database holds exactly the coups
the tablets were told about (201/200 by key), each once, the sequence numbers
on every shoe run 1..n, every banker turn's carry-forward chain re-computes
from its coups, and the daily rollups equal a recomputation.

Prints a table (coups/s, p50/p99 of the coup POST) and writes
var/reliability/load.json (--out). Exit status 1 if any check fails: the
verification, or any coup a tablet could not record (a refusal included).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness  # noqa: E402
import _tablets  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/load_casino"
WARMUP, RESOLVE = 1.0, 20.0


def run_level(n: int, port: int, users: list, args) -> tuple[dict, list]:
    """N tablets; returns the level's figures and its tallies. The tablets
    at the shared table all belong to its croupier (one token, several
    devices); every other table has a croupier and a tablet of its own."""
    shared_n = max(2, round(n * args.shared)) if n > 1 else 0
    tables, tokens = [], []
    if shared_n:
        shared_user, shared_token = users[0]
        # A short first shoe: the tablets must replace it mid-run, together.
        shared = _harness.open_table(f"Load N{n} shared", shared_user, burned=240)
        state = _tablets.table_at(port, shared_token, shared, burned=240)
        tables += [state] * shared_n
        tokens += [shared_token] * shared_n
    for i in range(shared_n, n):
        user, token = users[i]
        ids = _harness.open_table(f"Load N{n} #{i}", user)
        tables.append(_tablets.table_at(port, token, ids))
        tokens.append(token)
    from django.db import connection

    connection.close()  # the run is the server's; verify() reconnects
    behaviour = _tablets.Behaviour(
        replay_rate=args.replay_rate, timeout_rate=args.timeout_rate
    )
    start = time.monotonic() + WARMUP
    stop = start + args.duration
    tallies = [_tablets.Tally() for _ in range(n)]
    threads = []
    for i in range(n):
        tag = f"n{n}-t{i}"
        tablet = _tablets.Tablet(port, tokens[i], tag)
        kwargs = dict(
            tablet=tablet, table=tables[i], tally=tallies[i],
            seed=zlib.crc32(tag.encode()), stop=stop, give_up=stop + RESOLVE,
            behaviour=behaviour, tag=tag,
        )  # fmt: skip
        threads.append(
            threading.Thread(target=_tablets.run_tablet, kwargs=kwargs, daemon=True)
        )
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=args.duration + WARMUP + RESOLVE + 30)
    if any(t.is_alive() for t in threads):
        sys.exit("a tablet thread did not stop")
    lat = [s for tally in tallies for t0, s in tally.latencies if start <= t0 < stop]
    acks = sum(1 for tally in tallies for t in tally.ack_times if start <= t < stop)
    shared_acks = sum(
        1 for tally in tallies[:shared_n] for t in tally.ack_times if start <= t < stop
    )
    row = {
        "clients": n,
        "shared_table_clients": shared_n,
        "coups_per_s": round(acks / args.duration, 1),
        "shared_table_coups_per_s": round(shared_acks / args.duration, 1),
        "requests": len(lat),
        "p50_ms": round(_tablets.percentile(lat, 50) * 1000, 1),
        "p99_ms": round(_tablets.percentile(lat, 99) * 1000, 1),
        **summary(tallies),
        "shoes_replaced": sum({id(t): t.shoes_opened for t in tables}.values()),
    }
    return row, tallies


def summary(tallies) -> dict:
    def total(attr):
        return sum(getattr(t, attr) for t in tallies)

    statuses: dict[int, int] = {}
    conflicts: dict[str, int] = {}
    for t in tallies:
        for k, v in t.statuses.items():
            statuses[k] = statuses.get(k, 0) + v
        for k, v in t.conflicts.items():
            conflicts[k] = conflicts.get(k, 0) + v
    return {
        "created": total("created"),
        "replays_asked": total("replays_asked"),
        "replays_ok": total("replays_ok"),
        "timeouts": total("timeouts"),
        "timeouts_committed": total("timeouts_committed"),
        "ties": total("ties"),
        "unknown_fate_retries": total("unknown_fate"),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "conflicts": conflicts,
        "client_errors": [e for t in tallies for e in t.errors][:20],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="8,32,64")
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--shared", type=float, default=0.25)
    parser.add_argument("--replay-rate", type=float, default=0.05)
    parser.add_argument("--timeout-rate", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--database-url", default=os.environ.get("LOAD_DATABASE_URL", DEFAULT_URL)
    )
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument(
        "--out", type=Path, default=_harness.OUT_DIR / "load.json",
        help="the figures (JSON); gunicorn's log beside it",
    )  # fmt: skip
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    clients = [int(c) for c in args.clients.split(",")]
    if not 0 < args.duration <= 60 or not all(0 < c <= 128 for c in clients):
        sys.exit("--duration must be in (0, 60] s, clients in 1..128")

    # `timeout` or Ctrl-C: still stop gunicorn (finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    env = _harness.configure(args.database_url)
    print(f"database: {args.database_url} (dropped and re-created)", flush=True)
    _harness.recreate_database(args.database_url)
    users = _harness.tablet_users(max(clients), "tablet-")
    port = _harness.free_port()
    proc = _harness.start_gunicorn(
        port, workers=args.workers, threads=args.threads,
        log=args.out.with_name(f"{args.out.stem}-gunicorn.log"),
    )  # fmt: skip
    print(
        f"gunicorn gthread -w {args.workers} --threads {args.threads} on "
        f"127.0.0.1:{port} (pid {proc.pid})",
        flush=True,
    )
    rows, acked, unresolved, errors = [], {}, [], []
    try:
        for n in clients:
            row, tallies = run_level(n, port, users, args)
            rows.append(row)
            for t in tallies:
                acked.update(t.acked)
                unresolved.extend(t.unresolved)
                errors.extend(t.errors)
            print(
                f"  {n:3d} tablets: {row['coups_per_s']:7.1f} coups/s  "
                f"p50 {row['p50_ms']:6.1f} ms  p99 {row['p99_ms']:6.1f} ms",
                flush=True,
            )
    finally:
        _harness.stop_gunicorn(proc)
    result = _harness.verify(acked, unresolved)
    report(args, rows, result, errors, env)
    if not args.keep:
        _harness.drop_database(args.database_url)
    if not result["ok"] or errors:
        sys.exit(1)


def report(args, rows, result, errors, env) -> None:
    print(
        f"\n{'N':>3} {'shared':>6} {'coups/s':>8} {'(shared)':>8} {'p50 ms':>7} "
        f"{'p99 ms':>7} {'replays':>9} {'timeouts':>9} {'shoes':>5} {'ties':>4} "
        "statuses"
    )
    for r in rows:
        print(
            f"{r['clients']:3d} {r['shared_table_clients']:6d} "
            f"{r['coups_per_s']:8.1f} {r['shared_table_coups_per_s']:8.1f} "
            f"{r['p50_ms']:7.1f} {r['p99_ms']:7.1f} "
            f"{r['replays_ok']:4d}/{r['replays_asked']:<4d} "
            f"{r['timeouts_committed']:4d}/{r['timeouts']:<4d} "
            f"{r['shoes_replaced']:5d} {r['ties']:4d} {r['statuses']}"
        )
    print(
        "replays: re-sent after a 201 -> answered 200 with the same coup; "
        "timeouts: gave up waiting -> the retry found the coup already committed;\n"
        "shoes: shoes the tablets closed and replaced (at the cut card, or "
        "409 shoe);\nties: coups tied, their stakes carried to the next coup "
        "(house rule tie stay)"
    )
    print(
        f"verify: {result['acknowledged']} coups acknowledged, {result['coups']} "
        f"stored, {result['rows_lost']} lost, {result['rows_duplicated']} "
        f"duplicated, {result['unresolved']} unresolved; {result['shoes']} shoes "
        f"in sequence, {result['turns']} banker turns re-computed; trail "
        f"{result['trail_rows']} rows, {result['ledger_rows_bound']} ledger rows "
        f"bound; {result['ledger_differences']} ledger differences -> "
        + ("OK" if result["ok"] and not errors else "FAILED")
    )
    for p in result["problems"][:20] + errors[:20]:
        print("  ", p)
    out = args.out
    out.write_text(
        json.dumps(
            {
                "command": "bench/load.py " + " ".join(sys.argv[1:]),
                "duration_s": args.duration,
                "workers": args.workers,
                "threads": args.threads,
                "results": rows,
                "verify": result,
                "client_errors": errors[:50],
                "cpus": os.cpu_count(),
                "loadavg_1m": round(os.getloadavg()[0], 2),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written: {_harness.shown(out)}")


if __name__ == "__main__":
    main()
