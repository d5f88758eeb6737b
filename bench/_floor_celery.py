"""The floor bench's background work, as production runs it: a Celery worker
and one Celery beat with the project's own schedule (django-celery-beat's
database scheduler, CELERY_BEAT_SCHEDULE copied into it at start, as
deploy/systemd/casino-beat.service runs it), so that every beat task the
project schedules (the trail's checkpoints every TRAIL_CHECKPOINT_SECONDS,
its witnesses, the live surveillance once it is scheduled...) runs during the
window with no change here. What they did is read afterwards: the checkpoints
made in the window (from the database) and the tasks beat sent (its log).
Used by bench_floor.py; not a benchmark itself."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import _benchdb

CELERY = str(Path(sys.executable).with_name("celery"))
WORKER_LOG = _benchdb.OUT_DIR / "floor-celery.log"
CLOCK_LOG = _benchdb.OUT_DIR / "floor-celery-clock.log"
LOGS = {"worker_log": WORKER_LOG, "clock_log": CLOCK_LOG}
BEAT_LOG = _benchdb.OUT_DIR / "floor-beat.log"


def _spawn(cmd: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, cwd=_benchdb.ROOT, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(proc, log: Path, text: bytes, what: str) -> None:
    deadline = time.monotonic() + 60
    while text not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            sys.exit(f"the Celery {what} did not start; see {log}")
        time.sleep(0.2)


def start_worker(nice: int, concurrency: int, queue: str = "celery"
                 ) -> subprocess.Popen:
    """`celery -A casino worker -Q <queue>`, its pool of `concurrency`
    processes, at `nice`: as deploy/systemd runs them, casino-worker.service
    (queue celery, 4 processes) and casino-clock.service (queue clock, 2:
    the checkpoints, witnesses and live looks never wait behind the month's
    report)."""
    # The reports wait for the CPU the floor leaves: on one box the tablets
    # and the pit bosses come first (nice 10: about a tenth of a core when
    # the web wants both, all of what is idle otherwise).
    cmd = ["nice", "-n", str(nice)] if nice else []
    cmd += [CELERY, "-A", "casino", "worker", "-Q", queue,
            f"--concurrency={concurrency}",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel=INFO", "-n", f"bench-floor-{queue}-{os.getpid()}@%h"]
    log = WORKER_LOG if queue == "celery" else CLOCK_LOG
    proc = _spawn(cmd, log)
    _wait_for(proc, log, b"ready.", "worker")
    # Linux shares the CPU between sessions (autogroups) before it looks at
    # a process's nice value: the worker, a session of its own, would take a
    # third of the cores however nice. Its session is made nice as a whole
    # (as a systemd unit's CPUWeight would).
    autogroup(proc.pid, nice)
    return proc


def start_beat() -> subprocess.Popen:
    """`celery -A casino beat` as deploy/systemd/casino-beat.service runs it
    (no nice: the unit sets none), with the settings' scheduler and
    schedule; no pid file (the unit keeps none either)."""
    proc = _spawn([CELERY, "-A", "casino", "beat", "--loglevel=INFO", "--pidfile=",
                   "-s", str(_benchdb.OUT_DIR / "floor-celerybeat-schedule")],
                  BEAT_LOG)
    _wait_for(proc, BEAT_LOG, b"beat: Starting", "beat")
    return proc


def day_schedules_off() -> list[str]:
    """The schedules of the day's close (crontabs: the hourly gaming-day
    close, the nightly reports and ledger re-settlement) switched off, as an
    operator would in the admin (through the ORM: bound to the trail), and
    their names. A fresh database's crontabs count from the migration's time,
    so beat's first tick ran the hourly close at once: the history's last
    day closed, a report for each of a thousand tables, in the window (a
    once-a-day load that bench_reports.py measures). --day-close keeps them."""
    from django.db import connection
    from django_celery_beat.models import PeriodicTask

    names = []
    for task in PeriodicTask.objects.filter(crontab__isnull=False, enabled=True):
        task.enabled = False
        task.save()
        names.append(task.name)
    connection.close()
    return names


def autogroup(pid: int, nice: int) -> None:
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError as exc:
        print(f"note: the autogroup of {pid} stays at nice 0 ({exc})")


def be_nice(pid: int, nice: int) -> None:
    """Renice a process started in a session of its own (gunicorn: its master
    and the workers it forked; those it forks later inherit it), and its
    session's autogroup: Linux shares the CPU between sessions first."""
    os.setpriority(os.PRIO_PGRP, pid, nice)
    autogroup(pid, nice)


def stop(proc) -> None:
    """A warm shutdown, by its pid (a worker finishes the task at hand)."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def checkpoints_at() -> dict:
    """The trail's checkpoints and change-log rows so far (ids only: two
    index probes), and the live surveillance's flags."""
    from django.db import connection

    from audit.models import Flag
    from casino.models import ChangeLog, Checkpoint

    out = {"checkpoint": Checkpoint.objects.order_by("-id").values_list(
               "id", flat=True).first() or 0,
           "log_row": ChangeLog.objects.order_by("-id").values_list(
               "id", flat=True).first() or 0,
           "surveillance_flags": Flag.objects.filter(
               kind=Flag.Kind.SURVEILLANCE).count(),
           **{k: p.stat().st_size if p.exists() else 0 for k, p in LOGS.items()}}
    connection.close()
    return out


def background_report(a: dict, b: dict, window_s: float) -> dict:
    """What beat's work made between two checkpoints_at(): the checkpoints
    signed in the window, the longest wait between two of them, the
    change-log rows they covered; the tasks beat sent over its life."""
    from django.db import connection

    from casino.models import Checkpoint

    made = list(Checkpoint.objects.filter(id__gt=a["checkpoint"],
                                          id__lte=b["checkpoint"])
                .order_by("id").values_list("at", "size"))
    gaps = [(y[0] - x[0]).total_seconds() for x, y in zip(made, made[1:], strict=False)]
    connection.close()
    sent: Counter = Counter()
    if BEAT_LOG.exists():
        for m in re.finditer(r"Sending due task .+? \(([\w.]+)\)$",
                             BEAT_LOG.read_text(errors="replace"), re.M):
            sent[m.group(1)] += 1
    # the worker's time by task over the window: its log's lines between the
    # two sizes ("Task trail.checkpoint[...] succeeded in 0.012s")
    busy: Counter = Counter()
    tasks: Counter = Counter()
    for key, path in LOGS.items():  # both workers' (queue celery, clock)
        if not path.exists():
            continue
        with open(path, "rb") as f:
            f.seek(a[key])
            part = f.read(b[key] - a[key]).decode(errors="replace")
        for m in re.finditer(r"Task ([\w.]+)\[[^\]]+\] (?:succeeded|raised|failed)"
                             r"\S* in ([\d.]+)s", part):
            busy[m.group(1)] += float(m.group(2))
            tasks[m.group(1)] += 1
    return {
        "worker_s_by_task": {k: round(v, 2) for k, v in busy.most_common()},
        "tasks_done": dict(tasks),
        "checkpoints": len(made),
        "per_second": round(len(made) / window_s, 2) if window_s else None,
        "max_gap_s": round(max(gaps), 2) if gaps else None,
        "log_rows": b["log_row"] - a["log_row"],
        "surveillance_flags": b["surveillance_flags"] - a["surveillance_flags"],
        "beat_sent": dict(sent),
    }
