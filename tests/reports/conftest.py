"""Fixtures for the reports tests: nights of simulated play on chosen gaming
days, eager Celery (unless the test runs a real worker), files in a tmp dir,
and real Celery workers (`worker`, `start_worker`) for the redis tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from unittest import mock
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import _missing, seed_tableau


@pytest.fixture(autouse=True)
def _reports_env(request, settings, tmp_path):
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    if request.node.get_closest_marker("redis"):
        yield  # a real broker and worker: leave Celery as configured
        return
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


@contextmanager
def at(moment: datetime):
    """Make "now" a fixed moment (the coups' gaming day follows from it)."""
    with mock.patch("django.utils.timezone.now", return_value=moment):
        yield


def evening(day: date, hour: int = 22) -> datetime:
    """A moment inside gaming day `day` (cut-off 06:00, Europe/Paris)."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=ZoneInfo("Europe/Paris"))


def play(user, day: date, *, tables=1, shoes=1, seed=1, rate=0.0, prefix="Sim"):
    """Simulated shoes recorded through the services on gaming day `day`."""
    from tables.simulation import simulate

    with at(evening(day)):
        report = simulate(user=user, tables=tables, shoes=shoes, seed=seed,
                          false_draw_rate=rate, table_prefix=prefix)
    close_sessions(user, report.table_ids, day)
    return report


def close_sessions(user, table_ids, day):
    from tables.models import TableSession
    from tables.services import session_close

    with at(evening(day, 23)):
        for s in TableSession.objects.filter(table_id__in=table_ids,
                                             closed_at__isnull=True):
            session_close(session=s, user=user)


DAY1 = date(2025, 3, 3)
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY1 + timedelta(days=2)


@pytest.fixture
def nights(croupier, croupier2):
    """Three gaming days, two tables, two croupiers, a few false draws."""
    a = play(croupier, DAY1, tables=2, shoes=1, seed=1, rate=0.03)
    b = play(croupier2, DAY2, tables=2, shoes=1, seed=2, rate=0.03)
    c = play(croupier, DAY3, tables=1, shoes=2, seed=1, rate=0.03)
    return [a, b, c]


@pytest.fixture
def _migration_rows(transactional_db):
    """Put back what data migrations wrote (roles, tableaux): a transactional
    test before this one flushed every table (serialized_rollback cannot help:
    it would UPDATE append-only tableau rows, which PostgreSQL refuses)."""
    import importlib

    from django.contrib.auth.models import Group

    from casino.roles import ROLES
    from tables.models import TableauVersion

    for name in ROLES:
        Group.objects.get_or_create(name=name)
    seeds = importlib.import_module("tables.migrations.0002_seed_tableaux")
    for version, rows in (("chemmy-standard-1", seeds.CHEMMY),
                          ("punto-banco-1", seeds.PUNTO_BANCO)):
        if not TableauVersion.objects.filter(version=version).exists():
            seed_tableau(version, rows)


@pytest.fixture
def beat_rows(db):
    """The schedules migrations reports 0002 and audit 0004 leave, put back if
    a transactional test elsewhere flushed them (the migrations' own
    functions, idempotent)."""
    import importlib

    from django.apps import apps

    for name in ("audit.reports.migrations.0002_schedules",
                 "audit.migrations.0004_gaming_day_close"):
        importlib.import_module(name).create(apps, None)


# -- real workers (test_worker.py, test_worker_lost.py) ------------------------

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    from django.db import connection

    from tests.conftest import APP_ROLE

    db = connection.settings_dict
    # A worker connects as the runtime role, as in production (trust auth here).
    auth = APP_ROLE
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/{db['NAME']}"


class Worker:
    """A `celery worker` subprocess, in its own process group (session)."""

    def __init__(self, proc: subprocess.Popen, log: Path, name: str):
        self.proc, self.log, self.name = proc, log, name

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the whole worker, main process and pool (a host lost, the
        OOM killer): its own process group, started by start_worker."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # warm shutdown, by PID
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


@pytest.fixture
def start_worker(transactional_db, settings, tmp_path):
    """start_worker(app="casino", env={...}, args=("-Q", "clock")) starts a
    worker on the test database and Redis, waits until it is ready and
    returns a Worker; every worker started is stopped at the end (by PID)."""
    from django.db import connection

    # The tests' postgres/redis markers say so first; this guards a test
    # that forgot them (a failure under CI, as every missing service).
    if connection.vendor != "postgresql":
        _missing("PostgreSQL", "a Celery worker needs the test database on it")
    if not settings.REDIS_URL:
        _missing("Redis", "a Celery worker needs a broker: set REDIS_URL")
    from casino.celery import app

    app.conf.task_always_eager = False
    app._pool = None
    app.amqp._producer_pool = None
    app.control.purge()  # nothing left over from an earlier run...
    with app.connection_for_write() as conn:  # ...nor unacked by a killed worker
        conn.default_channel.client.delete("unacked", "unacked_index")
    started: list[Worker] = []

    def start(app: str = "casino", env: dict | None = None,
              args: tuple[str, ...] = ()) -> Worker:
        n = len(started) + 1
        log = tmp_path / f"worker-{n}.log"
        name = f"reports-test-{os.getpid()}-{n}@%h"
        full_env = {
            # not PYTEST_XDIST_WORKER: the worker takes REDIS_URL as given (the
            # test worker's own Redis database), not shifted again by settings
            **{k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"},
            "DATABASE_URL": _database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "MEDIA_ROOT": settings.MEDIA_ROOT,
            "CONN_MAX_AGE": "0",  # no connection left open when the test DB goes
            "DJANGO_SETTINGS_MODULE": "casino.settings",
            **(env or {}),
        }
        celery = Path(sys.executable).with_name("celery")
        cmd = [str(celery), "-A", app, "worker", "--concurrency=2",
               "--without-gossip", "--without-mingle", "--without-heartbeat",
               "--loglevel=INFO", "-n", name, *args]
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        worker = Worker(proc, log, name)
        started.append(worker)
        deadline = time.monotonic() + 60
        while b"ready." not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the worker did not start:\n{worker.text()[-3000:]}")
            time.sleep(0.2)
        return worker

    try:
        yield start
    finally:
        for worker in started:
            worker.stop()


@pytest.fixture
def worker(start_worker):
    """One worker (`celery -A casino`), started; its log file."""
    return start_worker().log


def wait_for(fetch, done, timeout=90):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        value = fetch()
        seen.append(value)
        if done(value):
            return value, seen
        time.sleep(0.2)
    pytest.fail(f"timed out; last state {seen[-1] if seen else None}")
