"""Faults: PostgreSQL restarted while tablets record coups, and two tablets
posting to the same shoe at the same instant. Run from the project root (or
`make faults FAULTS_ARGS="..."`):

    .venv/bin/python bench/faults.py [--tablets 6] [--duration 12]
        [--rounds 30] [--port 5439] [--out var/reliability/faults.json]

It starts a throwaway PostgreSQL cluster of its own (initdb in a temporary
directory, port 5439 on 127.0.0.1, --port 0 for any free one; never the
shared server on 5432), a database `fault_casino` in it, and gunicorn
pointed at it. The tablets play by the table's house rules
(bench/_tablets.py, bench/_dealer.py). Then:

1. PostgreSQL restarted during recording. N tablets (threads, keep-alive
   http.client; half at one shared table) record coups for --duration
   seconds. Meanwhile the cluster is restarted twice: once cleanly
   (`pg_ctl restart -m fast`) and once as a crash (`pg_ctl stop -m immediate`,
   down for 2 s, then started again; PostgreSQL recovers from its WAL). The
   tablets see errors (503 "database unavailable", connection resets), retry
   each coup with the same Idempotency-Key until answered, and at the end
   every coup they were told about is in the database exactly once.

2. Two tablets, the same shoe, the same instant. For --rounds rounds, two
   tablets (each its own connection, same croupier) wait at a barrier and
   post different coups with the same expected_seq. Exactly one gets a 201;
   the other a 409 naming expected_seq; it re-reads the shoe and succeeds on
   retry with the same key. Then the same race without expected_seq: both
   are recorded, one after the other. One sequence, no fork, no lost coup.

Afterwards bench/_harness.verify checks the database (every coup once,
unbroken sequences, every banker turn's carry-forward chain re-computes,
rollups equal their recomputation). The cluster is stopped and removed at
the end, also on error. Writes var/reliability/faults.json (--out); exit
status 1 on any failure (a coup a tablet could not record included).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness  # noqa: E402
import _tablets  # noqa: E402
from _pgcluster import PGBIN, Cluster  # noqa: E402


def restart_scenario(args, port, users, cluster, events) -> dict:
    """Tablets record; the cluster is restarted cleanly, then crashed."""
    n = args.tablets
    shared_n = max(2, n // 2)
    # A short first shoe: replaced mid-run, while the database comes and goes.
    shared = _harness.open_table("Fault shared", users[0][0], burned=240)
    shared = _tablets.table_at(port, users[0][1], shared, burned=240)
    tables = [shared] * shared_n
    tokens = [users[0][1]] * shared_n
    for i in range(shared_n, n):
        ids = _harness.open_table(f"Fault #{i}", users[i][0])
        tables.append(_tablets.table_at(port, users[i][1], ids))
        tokens.append(users[i][1])
    from django.db import connections

    connections.close_all()  # the cluster is about to go away under us
    start = time.monotonic()
    stop = start + args.duration
    behaviour = _tablets.Behaviour(replay_rate=0.05, timeout_rate=0.05)
    tallies = [_tablets.Tally() for _ in range(n)]
    threads = []
    for i in range(n):
        tag = f"fault-t{i}"
        kwargs = dict(
            tablet=_tablets.Tablet(port, tokens[i], tag, timeout=10), table=tables[i],
            tally=tallies[i], seed=zlib.crc32(tag.encode()), stop=stop,
            give_up=stop + 30, behaviour=behaviour, tag=tag,
        )  # fmt: skip
        threads.append(
            threading.Thread(target=_tablets.run_tablet, kwargs=kwargs, daemon=True)
        )
    for t in threads:
        t.start()

    def at(fraction: float) -> None:
        time.sleep(max(0.0, start + fraction * args.duration - time.monotonic()))

    at(0.25)
    t0 = time.monotonic()
    cluster.restart_fast()
    events.append({"fault": "pg_ctl restart -m fast", "at_s": round(t0 - start, 2),
                   "down_s": round(time.monotonic() - t0, 2)})  # fmt: skip
    at(0.6)
    t0 = time.monotonic()
    cluster.crash()
    time.sleep(2.0)
    cluster.start()
    events.append({"fault": "pg_ctl stop -m immediate; 2 s down; start",
                   "at_s": round(t0 - start, 2),
                   "down_s": round(time.monotonic() - t0, 2)})  # fmt: skip
    for t in threads:
        t.join(timeout=args.duration + 60)
    if any(t.is_alive() for t in threads):
        sys.exit("a tablet thread did not stop")
    acked, unresolved, errors = {}, [], []
    for t in tallies:
        acked.update(t.acked)
        unresolved.extend(t.unresolved)
        errors.extend(t.errors)
    statuses: dict[str, int] = {}
    for t in tallies:
        for k, v in t.statuses.items():
            statuses[str(k)] = statuses.get(str(k), 0) + v
    return {
        "tablets": n,
        "shared_table_tablets": shared_n,
        "acked": acked,
        "unresolved": unresolved,
        "errors": errors,
        "coups_acknowledged": len(acked),
        "statuses": dict(sorted(statuses.items())),
        "transport_errors_retried": sum(t.unknown_fate for t in tallies)
        - sum(v for k, v in statuses.items() if k in ("429", "500", "502", "503")),
        "error_answers_retried": sum(
            v for k, v in statuses.items() if k in ("429", "500", "502", "503")
        ),
        "timeouts": sum(t.timeouts for t in tallies),
        "retries_found_coup_committed": sum(t.timeouts_committed for t in tallies),
        "shoes_replaced": sum({id(t): t.shoes_opened for t in tables}.values()),
        "ties": sum(t.ties for t in tallies),
        "replays_ok": f"{sum(t.replays_ok for t in tallies)}"
        f"/{sum(t.replays_asked for t in tallies)}",
    }


def race_scenario(args, port, users) -> dict:
    """Two tablets, one shoe, one instant: with expected_seq, then without.
    Both coups of a race carry the same stakes (what the last coup left on
    the table under tie "stay", else one fresh stake), so that whichever
    lands second carries what the first left if it tied."""
    user, token = users[0]
    state = _tablets.table_at(port, token, _harness.open_table("Race", user))
    house, shoe = state.house, state.shoe
    from django.db import connections

    connections.close_all()
    tablets = [_tablets.Tablet(port, token, f"race-{i}") for i in range(2)]
    out = {"rounds": args.rounds, "one_winner": 0, "loser_409_expected_seq": 0,
           "loser_succeeded_on_retry": 0, "both_recorded_without_seq": 0,
           "problems": []}  # fmt: skip
    acked: dict[str, int] = {}
    import random

    rng = random.Random(7)
    for r in range(args.rounds):
        for with_seq in (True, False):
            if len(state.cards) < 14:
                shoe = new_shoe(tablets[0], shoe)
                state.cards = house.new_shoe(rng, 5)
            stakes = state.stays or house.stakes(rng, most=1)
            bodies = []
            for _ in range(2):
                punter, banker = house.deal(rng, state.cards)
                bodies.append({"punter": punter, "banker": banker, "stakes": stakes})
            status, data = tablets[0].request("GET", f"/api/v1/shoes/{shoe}/")
            if status != 200:
                out["problems"].append(f"GET shoe: {status}")
                continue
            if data.get("cards_left", 0) < 14:
                shoe = new_shoe(tablets[0], shoe)
                status, data = tablets[0].request("GET", f"/api/v1/shoes/{shoe}/")
            seq = data["next_seq"]
            # The last coup may have lost the bank: a banker turn must be open.
            _tablets.ensure_turn(tablets[0], state, _tablets.Tally())
            if with_seq:
                for b in bodies:
                    b["expected_seq"] = seq
            keys = [f"race-{r}-{with_seq}-{i}" for i in range(2)]
            answers = race(tablets, shoe, bodies, keys)
            judge(
                out, tablets, shoe, bodies, keys, answers, with_seq, acked, seq, state
            )
    out["acked"] = acked
    return out


def new_shoe(tablet, shoe: int) -> int:
    tablet.request("POST", f"/api/v1/shoes/{shoe}/close/", {})
    status, data = tablet.request("GET", f"/api/v1/shoes/{shoe}/")
    status, data = tablet.request(
        "POST", f"/api/v1/sessions/{data['session']}/shoes/", {"burned": 5}
    )
    assert status == 201, data
    return data["id"]


def race(tablets, shoe, bodies, keys) -> list[tuple[int, dict]]:
    barrier = threading.Barrier(2, timeout=10)
    answers: list = [None, None]

    def post(i):
        barrier.wait()
        answers[i] = tablets[i].request(
            "POST", f"/api/v1/shoes/{shoe}/coups/", bodies[i],
            headers={"Idempotency-Key": keys[i]},
        )  # fmt: skip

    threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return answers


def judge(out, tablets, shoe, bodies, keys, answers, with_seq, acked, seq, state):
    """One winner at `seq`; the other is refused or queued behind it and ends
    at seq + 1. A refusal says why: expected_seq (the shoe moved on) or turn
    (the winner's coup lost the bank: the next banker opens before dealing)."""
    wins = [i for i in range(2) if answers[i][0] == 201]
    if not wins:
        out["problems"].append(f"no winner: {[a[0] for a in answers]}")
        return
    win = min(wins, key=lambda i: answers[i][1]["seq"])
    acked[keys[win]] = answers[win][1]["id"]
    state.learn(answers[win][1])
    if answers[win][1]["seq"] != seq:
        out["problems"].append(f"winner got seq {answers[win][1]['seq']}, not {seq}")
    lose = 1 - win
    status, data = answers[lose]
    if with_seq:
        if status == 201:
            out["problems"].append(f"both won with expected_seq {seq}: a fork")
            return
        out["one_winner"] += 1
        if status == 409 and data["detail"].startswith("expected_seq"):
            out["loser_409_expected_seq"] += 1
        else:
            out["problems"].append(f"loser's answer does not name expected_seq: {data}")
    for _attempt in range(5):
        if status == 201:
            break
        if status == 409 and data["detail"].startswith("turn"):
            _tablets.ensure_turn(tablets[lose], state, _tablets.Tally())
        if with_seq:
            _, shoe_now = tablets[lose].request("GET", f"/api/v1/shoes/{shoe}/")
            bodies[lose]["expected_seq"] = shoe_now["next_seq"]
        status, data = tablets[lose].request(
            "POST", f"/api/v1/shoes/{shoe}/coups/", bodies[lose],
            headers={"Idempotency-Key": keys[lose]},
        )  # fmt: skip
    if status == 201 and data["seq"] == seq + 1:
        acked[keys[lose]] = data["id"]
        state.learn(data)
        done = "loser_succeeded_on_retry" if with_seq else "both_recorded_without_seq"
        out[done] += 1
    else:
        out["problems"].append(f"second coup: {status} {data}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tablets", type=int, default=6)
    parser.add_argument("--duration", type=float, default=12.0)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--port", type=int, default=5439,
                        help="the throwaway cluster's (0: any free port)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--out", type=Path, default=_harness.OUT_DIR / "faults.json",
        help="the figures (JSON); gunicorn's log beside it",
    )  # fmt: skip
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if not 2 <= args.tablets <= 32 or not 4 <= args.duration <= 60:
        sys.exit("--tablets in 2..32, --duration in [4, 60] s")
    if args.port == 5432:
        sys.exit("5432 is the shared server: never restarted here")
    if not (PGBIN / "initdb").exists():
        sys.exit(f"{PGBIN}/initdb not found (set PGBIN)")
    args.port = args.port or _harness.free_port()

    # `timeout` or Ctrl-C: still stop gunicorn and remove the cluster.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    cluster = Cluster(args.port, database="fault_casino", prefix="casino-pgfault-")
    proc = None
    events: list[dict] = []
    try:
        cluster.create()
        print(f"cluster: {cluster.data} on 127.0.0.1:{args.port}", flush=True)
        _harness.configure(cluster.url)
        _harness.recreate_database(cluster.url)
        users = _harness.tablet_users(args.tablets, "fault-tablet-")
        port = _harness.free_port()
        proc = _harness.start_gunicorn(
            port, workers=args.workers, threads=args.threads,
            log=args.out.with_name(f"{args.out.stem}-gunicorn.log"),
        )  # fmt: skip
        print(f"gunicorn on 127.0.0.1:{port} (pid {proc.pid})", flush=True)
        print(f"1. PostgreSQL restarted during recording ({args.duration:.0f} s)...")
        restart = restart_scenario(args, port, users, cluster, events)
        print(f"2. two tablets, one shoe, one instant ({args.rounds} rounds)...")
        racing = race_scenario(args, port, users)
        _harness.stop_gunicorn(proc)
        acked = {**restart.pop("acked"), **racing.pop("acked")}
        result = _harness.verify(acked, restart["unresolved"])
    finally:
        if proc is not None:
            _harness.stop_gunicorn(proc)
        from django.db import connections

        connections.close_all()
        cluster.remove()
    report(args, events, restart, racing, result)
    if not result["ok"] or restart["errors"] or racing["problems"]:
        sys.exit(1)


def report(args, events, restart, racing, result) -> None:
    for e in events:
        print(f"   fault: {e['fault']} at {e['at_s']} s (down {e['down_s']} s)")
    print(
        f"   {restart['coups_acknowledged']} coups acknowledged by "
        f"{restart['tablets']} tablets; answers {restart['statuses']}; "
        f"{restart['transport_errors_retried']} transport errors and "
        f"{restart['error_answers_retried']} 5xx/429 answers retried with the "
        f"same key; {restart['retries_found_coup_committed']} retries found "
        f"their coup already committed; replays {restart['replays_ok']}; "
        f"{restart['shoes_replaced']} shoes replaced; {restart['ties']} ties, "
        "their stakes carried"
    )
    for e in restart["errors"][:10]:
        print("  !", e)
    print(
        f"   race: {racing['one_winner']}/{racing['rounds']} rounds one winner, "
        f"{racing['loser_409_expected_seq']} losers got a 409 naming expected_seq, "
        f"{racing['loser_succeeded_on_retry']} succeeded on retry; "
        f"{racing['both_recorded_without_seq']}/{racing['rounds']} races without "
        "expected_seq recorded both, in sequence"
    )
    for p in racing["problems"][:10]:
        print("  !", p)
    ok = result["ok"] and not restart["errors"] and not racing["problems"]
    print(
        f"verify: {result['acknowledged']} acknowledged, {result['coups']} stored, "
        f"{result['rows_lost']} lost, {result['rows_duplicated']} duplicated, "
        f"{result['unresolved']} unresolved; {result['shoes']} shoes in sequence; "
        f"{result['turns']} banker turns re-computed -> " + ("OK" if ok else "FAILED")
    )
    for p in result["problems"][:20]:
        print("  !", p)
    out = args.out
    out.write_text(
        json.dumps(
            {"command": "bench/faults.py " + " ".join(sys.argv[1:]),
             "events": events, "restart": restart, "race": racing,
             "verify": result, "ok": ok},
            indent=2,
        )
        + "\n"
    )  # fmt: skip
    print(f"written: {_harness.shown(out)}")


if __name__ == "__main__":
    main()
