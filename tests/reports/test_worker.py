"""A real Celery worker on Redis, against the same PostgreSQL test database:
the report path (API -> queue -> worker -> file) and the re-audit chord.

The worker runs as `celery -A casino worker --concurrency=2 ...` in the
background and is stopped by its PID (the `worker` fixture, conftest.py). The
tests commit (transaction=True), so the worker sees their rows.
"""

from __future__ import annotations

import pytest

from .conftest import DAY1, DAY2, play, wait_for

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def _rows(_migration_rows):
    pass


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
