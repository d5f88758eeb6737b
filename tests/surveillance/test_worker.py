"""A real Celery worker on Redis, against the same PostgreSQL test database:
the on-demand run (API -> queue -> worker -> alerts in the queue), and the
nightly one the gaming-day close sends."""

from __future__ import annotations

import pytest

from .conftest import DAY1, wait_for

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def _rows(_migration_rows):
    pass


def test_a_run_is_done_by_the_worker(worker, floor_night, manager, as_user):
    from audit.models import Flag

    api = as_user(manager)
    r = api.post("/api/v1/surveillance/runs/",
                 {"from_day": str(DAY1), "to_day": str(DAY1)}, format="json")
    assert r.status_code == 202, r.content
    assert r.data["status"] in ("queued", "running")  # answered at once
    run, seen = wait_for(lambda: api.get(r.data["status_url"]).data,
                         lambda x: x["status"] in ("done", "failed"))
    assert run["status"] == "done", (run["error"], worker.read_text()[-2000:])
    assert run["percent"] == 100 and run["dispatched_at"] and run["attempts"] == 1
    assert run["alerts_new"] >= 1
    culprit = floor_night["culprit"]
    assert Flag.objects.filter(kind="surveillance", code="false_draw_rate",
                               croupier=culprit).count() == 1
    assert "audit.surveillance_run" in worker.read_text()


def test_the_nightly_run_goes_through_the_worker(worker, floor_night):
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    from audit.models import Flag, SurveillanceRun
    from audit.reports.nightly import gaming_day_close

    after = DAY1 + timedelta(days=1)
    moment = datetime(after.year, after.month, after.day, 6, 30,
                      tzinfo=ZoneInfo("Europe/Paris"))
    out = gaming_day_close(now=moment, ledger=False)
    pk = out[6]["surveillance"]
    run, _ = wait_for(lambda: SurveillanceRun.objects.get(pk=pk),
                      lambda x: x.status in ("done", "failed"))
    assert run.status == "done", (run.error, worker.read_text()[-2000:])
    assert run.source == "nightly" and run.from_day == DAY1
    assert Flag.objects.filter(kind="surveillance",
                               croupier=floor_night["culprit"]).exists()
    assert gaming_day_close(now=moment, ledger=False)[6]["surveillance"] is None
