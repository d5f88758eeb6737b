"""How soon a restored dump or a cut tail is named (issue 37's aim: "within
2 seconds of the last write it lost, with the witness on another port as
another process").

Real processes: a witness (tools/witness) on its own port and SQLite store,
a Celery worker and `celery beat` (the production schedule: trail.checkpoint
every TRAIL_CHECKPOINT_SECONDS, trail.witnesses every WITNESS_CHECK_SECONDS)
on a database of its own (bench/_benchdb.py: `<name>_bench`) and Redis.

Each run: a table is opened and coups are played through the API (as a
tablet posts them); the bench waits until the witness has cosigned the
tree, plays `--lost` more coups (the writes that will be lost) and waits
until the witness cosigns them too (else nobody outside could know they
existed); then, as the database's superuser (triggers off, one
transaction), either
  - `cut`: the change log's tail is deleted (the rows the witness cosigned),
    or
  - `restore`: the database is put back as a dump taken before those coups
    holds it (the change log, the Merkle tree, the checkpoints and their
    cosignatures, the seals: nothing in the database remembers them),
and the clock runs until the app names it: a fork or rollback recorded
(casino.WitnessEvent, which /health/details/'s "witnesses" check reports,
raises the critical flag and makes every write answer 503 trail_stopped;
all three are checked once named). `manage.py trail_epoch` then declares it
and the next run starts in the new epoch (the witness holds every epoch's
key from the start).

Figures (var/bench/witness_detect.json): per run, the last lost write ->
cosigned, the tamper -> named, and the last lost write -> named.

    .venv/bin/python bench/bench_witness_detect.py [--runs 5] [--lost 2]
        [--port 18060]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402

ROOT = _benchdb.ROOT
CELERY = str(Path(sys.executable).with_name("celery"))


def _start(cmd: list[str], log: Path, env: dict) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # by PID, its own session
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _witness_size(url: str, origin: str) -> int:
    with urllib.request.urlopen(url + "/state", timeout=2) as r:
        for log in json.loads(r.read()):
            if log["origin"] == origin:
                return log["size"]
    return 0


def _tamper(url: str, mode: str, epoch: int, size: int) -> None:
    """As the database's superuser, in one transaction, triggers off."""
    import psycopg

    with psycopg.connect(url) as conn, conn.cursor() as c:
        c.execute("SET session_replication_role = replica")
        c.execute('SELECT "row" FROM casino_treenode WHERE epoch = %s AND level = 0'
                  ' AND "index" = %s', [epoch, size - 1])
        (row,) = c.fetchone()
        if mode == "restore":
            c.execute("DELETE FROM casino_cosignature WHERE checkpoint_id IN (SELECT"
                      " id FROM casino_checkpoint WHERE epoch = %s AND size > %s)",
                      [epoch, size])
            c.execute("DELETE FROM casino_checkpoint WHERE epoch = %s AND size > %s",
                      [epoch, size])
            c.execute('DELETE FROM casino_treenode WHERE epoch = %s AND ("index" + 1)'
                      " * (CAST(1 AS BIGINT) << level) > %s", [epoch, size])
        c.execute("DELETE FROM casino_seal WHERE log_id > %s", [row])
        c.execute("DELETE FROM casino_changelog WHERE id > %s", [row])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each mode")
    parser.add_argument("--lost", type=int, default=2, help="coups lost a run")
    parser.add_argument("--port", type=int, default=18060, help="the witness's port")
    parser.add_argument("--modes", default="cut,restore")
    args = parser.parse_args()
    modes = args.modes.split(",")
    total = args.runs * len(modes)

    db_url = _benchdb.configure()
    redis = os.environ.get("BENCH_REDIS_URL") or "redis://127.0.0.1:6379/12"
    tmp = Path(tempfile.mkdtemp(prefix="bench-witness-"))
    name = "bench.witness.invalid/w1"
    key = subprocess.run(
        [sys.executable, "-m", "tools.witness", "--name", name, "--new-key",
         str(tmp / "w1.key")], cwd=ROOT, capture_output=True, text=True,
        check=True).stdout.strip()
    witness_url = f"http://127.0.0.1:{args.port}"
    os.environ["WITNESS_URLS"] = f"{witness_url};{key}"
    _benchdb.recreate_database(db_url)  # django.setup() with WITNESS_URLS set

    from _dealer import ApiDealer
    from django.conf import settings
    from django.test import RequestFactory
    from rest_framework.test import APIClient

    from casino.health import health_details
    from casino.merkle import current_epoch, log_vkey, origin
    from casino.models import ChangeLog, TreeNode
    from casino.tokenauth import token_issue
    from casino.trailstop import stop_reason_event

    user = _benchdb.make_user("detect", "croupier")
    boss = _benchdb.make_user("detect-boss", "manager")
    boss.is_staff = True  # /health/details/ is staff's
    boss.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)[1]}")

    # the witness knows every epoch's log from the start (each declared loss
    # starts a new one: docs/witness.md)
    cmd = [sys.executable, "-m", "tools.witness", "--name", name, "--key",
           str(tmp / "w1.key"), "--store", str(tmp / "w1.sqlite3"),
           "--port", str(args.port)]
    for epoch in range(1, total + 2):
        cmd += ["--log", log_vkey(epoch)]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    env.update(REDIS_URL=redis, CELERY_TASK_ALWAYS_EAGER="0", CONN_MAX_AGE="0",
               LOG_LEVEL="INFO")
    from casino.celery import app  # nothing left over in the bench's queue

    app.conf.broker_url = redis
    app.control.purge()
    procs = {"witness": _start(cmd, tmp / "witness.log", env)}
    procs["worker"] = _start(
        [CELERY, "-A", "casino", "worker", "--concurrency=2", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=INFO",
         "-n", f"bench-detect-{os.getpid()}@%h"], tmp / "worker.log", env)
    procs["beat"] = _start([CELERY, "-A", "casino", "beat", "--loglevel=INFO",
                            "--pidfile=", "-s", str(tmp / "beat-schedule")],
                           tmp / "beat.log", env)
    runs = []
    try:
        deadline = time.monotonic() + 90
        while b"ready." not in (tmp / "worker.log").read_bytes():
            if time.monotonic() > deadline or procs["worker"].poll() is not None:
                sys.exit("the worker did not start:\n"
                         + (tmp / "worker.log").read_text()[-3000:])
            time.sleep(0.2)

        def wait_cosigned(epoch: int, size: int) -> float:
            end = time.monotonic() + 30
            while _witness_size(witness_url, origin(epoch)) < size:
                if time.monotonic() > end:
                    sys.exit(f"the witness did not cosign {size} in 30 s:\n"
                             + (tmp / "worker.log").read_text()[-3000:])
                time.sleep(0.01)
            return time.monotonic()

        for k in range(total):
            mode = modes[k % len(modes)]
            _, session, shoe, _ = _benchdb.open_table(user, f"Detect {k}")
            dealer = ApiDealer(client, session.pk, shoe.pk, seed=k)

            def coup(i: int, dealer=dealer, k=k) -> None:
                r = dealer.post_coup(dealer.next_coup(), f"detect-{k}-{i}")
                assert r.status_code == 201, r.content
                nxt = r.json()["next_banker_seat"]
                if nxt is not None:
                    assert dealer.open_turn(nxt).status_code == 201

            for i in range(3):
                coup(i)
            epoch = current_epoch()[0]
            kept = ChangeLog.objects.filter(id__gte=current_epoch()[1]).count()
            wait_cosigned(epoch, kept)
            for i in range(3, 3 + args.lost):
                coup(i)
            t_write = time.monotonic()  # the last lost write, committed
            size = ChangeLog.objects.filter(id__gte=current_epoch()[1]).count()
            t_cosigned = wait_cosigned(epoch, size)
            assert TreeNode.objects.filter(epoch=epoch, level=0).count() == size
            _tamper(db_url, mode, epoch, kept)
            t_tamper = time.monotonic()
            while (stop := stop_reason_event()) is None:
                if time.monotonic() - t_tamper > 60:
                    sys.exit(f"run {k} ({mode}): not named in 60 s")
                time.sleep(0.005)
            t_named = time.monotonic()
            # named: the health check says it, a write answers 503
            request = RequestFactory().get("/health/details/")
            request.user = boss
            health = json.loads(health_details(request).content)["checks"][
                "witnesses"]
            boss_api = APIClient()
            boss_api.force_authenticate(user=boss)
            r = boss_api.post("/api/v1/tables/", {"name": f"After {k}",
                                                  "minimum_banco": "200.00"},
                              format="json")
            assert r.status_code == 503 and r.json()["code"] == "trail_stopped", (
                r.status_code, r.content)
            runs.append({
                "mode": mode, "kind": stop.kind, "detail": stop.detail[:200],
                "health_ok": health.get("ok"),
                "write_to_cosigned_s": round(t_cosigned - t_write, 3),
                "tamper_to_named_s": round(t_named - t_tamper, 3),
                "write_to_named_s": round(t_named - t_write, 3),
            })
            print(json.dumps(runs[-1]), flush=True)
            subprocess.run([sys.executable, "manage.py", "trail_epoch", "--reason",
                            f"bench run {k}"], cwd=ROOT, env=env, check=True,
                           capture_output=True)
    finally:
        for proc in procs.values():
            _stop(proc)
    worker_log = (tmp / "worker.log").read_text()
    result = {
        "runs": runs,
        "settings": {"TRAIL_CHECKPOINT_SECONDS": settings.TRAIL_CHECKPOINT_SECONDS,
                     "WITNESS_CHECK_SECONDS": settings.WITNESS_CHECK_SECONDS},
        "summary": {
            mode: {f: {"median": statistics.median(r[f] for r in rs),
                       "max": max(r[f] for r in rs)}
                   for f in ("tamper_to_named_s", "write_to_named_s")}
            for mode in modes
            if (rs := [r for r in runs if r["mode"] == mode])},
        "tracebacks_in_worker": worker_log.count("Traceback"),
        "machine": _benchdb.machine(),
    }
    out = _benchdb.OUT_DIR / "witness_detect.json"
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result["summary"], indent=2))
    print(f"written: {out}")


if __name__ == "__main__":
    main()
