"""A real Celery worker on Redis, against the same PostgreSQL test database:
the report path (API -> queue -> worker -> file) and the re-audit chord.

The worker runs as `celery -A casino worker --concurrency=2 ...` in the
background and is stopped by its PID. The tests commit (transaction=True), so
the worker sees their rows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import DAY1, DAY2, play

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _rows(_migration_rows):
    pass


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    auth = db["USER"] or ""
    if db.get("PASSWORD"):
        auth += f":{db['PASSWORD']}"
    host = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    return f"postgres://{auth}@{host}/{db['NAME']}"


@pytest.fixture
def worker(transactional_db, settings, tmp_path):
    """Start a worker on the test database and Redis; stop it by PID."""
    from django.db import connection

    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs PostgreSQL and Redis")  # the markers already say why
    from casino.celery import app

    app.conf.task_always_eager = False
    app._pool = None
    app.amqp._producer_pool = None
    app.control.purge()  # nothing left over from an earlier run
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "MEDIA_ROOT": settings.MEDIA_ROOT,
        "CONN_MAX_AGE": "0",  # no connection left open when the test DB goes
        "DJANGO_SETTINGS_MODULE": "casino.settings",
    }
    celery = Path(sys.executable).with_name("celery")
    cmd = [str(celery), "-A", "casino", "worker", "--concurrency=2",
           "--without-gossip", "--without-mingle", "--without-heartbeat",
           "--loglevel=INFO", "-n", f"reports-test-{os.getpid()}@%h"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while b"ready." not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the worker did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield log
    finally:
        proc.send_signal(signal.SIGTERM)  # warm shutdown, by PID
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own group, started above
            proc.wait(timeout=10)


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


def test_a_report_is_built_by_the_worker(worker, croupier, manager, as_user):
    play(croupier, DAY1, tables=2, shoes=2, seed=41, rate=0.05)
    api = as_user(manager)
    r = api.post("/api/v1/reports/", {"kind": "commission", "format": "pdf",
                                      "from_day": str(DAY1), "to_day": str(DAY1),
                                      "group_by": "croupier"}, format="json")
    assert r.status_code == 202, r.content
    assert r.data["status"] in ("queued", "running")  # answered at once
    job, _ = wait_for(lambda: api.get(r.data["status_url"]).data,
                      lambda j: j["status"] in ("done", "failed"))
    assert job["status"] == "done", (job["error"], worker.read_text()[-2000:])
    assert job["percent"] == 100 and job["dispatched_at"]
    body = b"".join(api.get(job["download_url"]).streaming_content)
    assert body.startswith(b"%PDF")
    # the coup detail export, with progress rows
    r = api.post("/api/v1/reports/", {"kind": "coups", "format": "csv",
                                      "from_day": str(DAY1), "to_day": str(DAY1)},
                 format="json")
    job, _ = wait_for(lambda: api.get(r.data["status_url"]).data,
                      lambda j: j["status"] in ("done", "failed"))
    assert job["status"] == "done" and job["rows"] == job["rows_expected"] > 100
    assert "reports.build" in worker.read_text()


def test_reaudit_runs_as_a_chord_on_the_workers(worker, croupier, manager, capsys):
    from django.core.management import call_command

    from audit.reports.models import ReauditChunk, ReauditRun
    from tables.models import Coup

    play(croupier, DAY1, tables=2, shoes=1, seed=42, rate=0.1)
    play(croupier, DAY2, tables=2, shoes=1, seed=42, rate=0.1)
    call_command("reaudit", "--from", str(DAY1), "--to", str(DAY2),
                 "--chunk-size", "50", "--user", "manager1", "--timeout", "120")
    out = capsys.readouterr().out
    run = ReauditRun.objects.get()
    assert run.status == "done", (run.error, worker.read_text()[-2000:])
    assert run.chunks_done == run.chunks_total >= 4
    assert run.coups_checked == Coup.objects.count()
    assert not ReauditChunk.objects.filter(run=run, done_at=None).exists()
    assert f"re-audit #{run.pk} done" in out and "% (" in out
    log = worker.read_text()
    assert "reports.reaudit_chunk" in log and "reports.reaudit_finish" in log
