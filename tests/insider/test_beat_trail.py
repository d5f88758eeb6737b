"""The real `celery -A casino beat` and a worker, on PostgreSQL and Redis,
leave a trail that verifies (issue 33 item 0): on a clean production install
beat wrote its intervals as floats (900.0) that PostgreSQL gives back as
integers, and `verify_trail` called the schedules edited within a minute.

Beat runs with its intervals shortened through the environment
(TRAIL_ANCHOR_MINUTES, TRAIL_TSA_RETRY_MINUTES) and the database's own
schedules (the queue sweep, the hourly gaming-day close) switched to a few
seconds as an operator would switch them; once every scheduled task has run
at least once, beat and the worker are stopped and `manage.py verify_trail`,
anchors included, must exit 0."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.reports.conftest import (  # noqa: F401 (fixtures)
    ROOT,
    _database_url,
    beat_rows,
    start_worker,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

FAST = {"TRAIL_ANCHOR_MINUTES": "0.1", "TRAIL_TSA_RETRY_MINUTES": "0.1",
        "SURVEILLANCE_LIVE_SECONDS": "2"}


def _every_few_seconds():
    """The database's schedules (migrations reports 0002, audit 0004) run
    every 4 s from now on, written through the ORM (bound, as the admin
    writes them), the interval's `every` as a float as beat writes it."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    every = IntervalSchedule.objects.create(every=4.0, period="seconds")
    names = []
    for task in PeriodicTask.objects.exclude(name__startswith="celery."):
        task.interval, task.crontab = every, None
        task.solar = task.clocked = None
        # a start in the past: beat runs it at once (django_celery_beat)
        task.start_time = timezone.now() - timedelta(minutes=1)
        task.save()
        names.append(task.task)
    return names


def _start_beat(env: dict, log):
    celery = os.path.join(os.path.dirname(sys.executable), "celery")
    with open(log, "wb") as out:
        return subprocess.Popen(
            [celery, "-A", "casino", "beat", "--loglevel=INFO", "--pidfile="],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # by PID, its own session
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_beat_and_a_worker_leave_a_trail_that_verifies(
    beat_rows, start_worker, settings, tmp_path  # noqa: F811
):
    anchors = tmp_path / "anchors-beat"
    scheduled = {*_every_few_seconds(), "trail.anchor", "trail.timestamps_retry",
                 "audit.surveillance_live"}
    env = {**FAST, "TRAIL_ANCHOR_DIR": str(anchors)}
    worker = start_worker(env=env)
    beat_env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    beat_env.update(env, DATABASE_URL=_database_url(), REDIS_URL=settings.REDIS_URL,
                    CELERY_TASK_ALWAYS_EAGER="0", CONN_MAX_AGE="0",
                    DJANGO_SETTINGS_MODULE="casino.settings")
    beat_log = tmp_path / "beat.log"
    beat = _start_beat(beat_env, beat_log)
    try:
        deadline = time.monotonic() + 45
        while True:
            text = worker.text()
            done = {name for name in scheduled
                    if re.search(rf"Task {re.escape(name)}\[[^\]]+\] succeeded",
                                 text)}
            if done == scheduled:
                break
            if beat.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"not every scheduled task ran: {sorted(scheduled - done)}\n"
                    f"beat:\n{beat_log.read_text()[-3000:]}\n"
                    f"worker:\n{text[-3000:]}")
            time.sleep(0.5)
    finally:
        _stop(beat)
        worker.stop()
    assert "Traceback" not in beat_log.read_text(), beat_log.read_text()[-3000:]
    # verify_trail as an operator runs it, at the production interval: the
    # last anchor is seconds old, and the rows after it well within it
    verify_env = {**beat_env, "TRAIL_ANCHOR_DIR": str(anchors)}
    for name in FAST:
        verify_env.pop(name)
    result = subprocess.run(
        [sys.executable, "manage.py", "verify_trail"], cwd=ROOT, env=verify_env,
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert any(anchors.glob("*")), "beat's anchors were written"
