"""Celery workers started by a benchmark, and the CPU time of processes read
from /proc (workers, PostgreSQL backends, the machine). Used by
bench_reaudit.py; not a benchmark itself."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import _benchdb

ROOT = _benchdb.ROOT


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a process has used, 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def cpu_stall_us() -> int:
    """Microseconds some runnable task waited for a CPU (Linux PSI), 0 if
    the kernel does not say."""
    try:
        with open("/proc/pressure/cpu") as fh:
            return int(fh.readline().split("total=")[1])
    except (OSError, IndexError, ValueError):
        return 0


def task_seconds(logs: list[Path]) -> float:
    """Seconds the workers spent inside re-audit chunk tasks (their logs)."""
    pattern = re.compile(r"reports\.reaudit_chunk\[[^\]]+\] succeeded in ([0-9.]+)s")
    return sum(float(m) for log in logs for m in pattern.findall(log.read_text()))


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine (/proc/stat)."""
    with open("/proc/stat") as fh:
        values = [int(x) for x in fh.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class Workers:
    """`celery -A casino worker` processes on the bench database and Redis,
    concurrency 1 each, started here and stopped by PID."""

    def __init__(self, n: int, redis: str, url: str):
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": redis,
               "CELERY_TASK_ALWAYS_EAGER": "0", "CONN_MAX_AGE": "600",
               "LOG_LEVEL": "WARNING"}
        celery = Path(sys.executable).with_name("celery")
        for i in range(n):
            log = _benchdb.OUT_DIR / f"reaudit-worker-{i + 1}.log"
            self.logs.append(log)
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(
                    [str(celery), "-A", "casino", "worker", "--concurrency=1",
                     "--without-gossip", "--without-mingle", "--without-heartbeat",
                     "--loglevel=INFO", "-n", f"bench-reaudit-{i + 1}@%h"],
                    cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True))
        deadline = time.monotonic() + 90
        for proc, log in zip(self.procs, self.logs, strict=True):
            while b"ready." not in log.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    sys.exit(f"worker did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)

    def pids(self) -> list[int]:
        return [q for p in self.procs for q in (p.pid, *children(p.pid))]

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def pg_cpu(dbname: str) -> dict[int, float]:
    """CPU seconds of this database's live backends, and under key 0 of every
    backend that has exited (the postmaster's children's times: a worker
    reconnects for each task, as Celery's Django fixup closes connections;
    other databases' exited backends count here too)."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [dbname])
        pids = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT pg_backend_pid()")
        me = cur.fetchone()[0]
    with open(f"/proc/{me}/stat") as fh:
        postmaster = int(fh.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{postmaster}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    reaped = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    return {0: reaped, **{p: cpu_of(p) for p in pids}}
