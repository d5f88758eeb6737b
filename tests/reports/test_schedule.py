"""The nightly batch (celery beat), the admin's schedules (logged), and a
request made while the task queue is down: a clear 503, the job kept and sent
when the queue is back."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django_celery_beat.models import PeriodicTask

from audit.reports.models import ReportJob
from audit.reports.nightly import dispatch_pending
from audit.reports.services import nightly_reports
from casino.models import ChangeLog
from tables.models import Table
from tables.services import house_rules_change, table_create
from tests.conftest import app_update

from .conftest import DAY1, DAY2, play

PARIS = ZoneInfo("Europe/Paris")


@pytest.mark.django_db
def test_nightly_builds_yesterdays_report_for_each_open_table_once(
    croupier, manager, django_capture_on_commit_callbacks
):
    play(croupier, DAY1, tables=2, shoes=1, seed=31)
    closed = table_create(user=manager, name="Closed")
    app_update(closed, active=False)
    late = table_create(user=manager, name="Late", gaming_day_cutoff=8)
    at_cutoff = datetime(DAY2.year, DAY2.month, DAY2.day, 6, 0, 5, tzinfo=PARIS)
    with django_capture_on_commit_callbacks(execute=True):
        jobs = nightly_reports(now=at_cutoff, cutoff_hour=6)
    names = {Table.objects.get(pk=j.params["tables"][0]).name for j in jobs}
    assert names == {"Sim 31-1", "Sim 31-2"}  # not the closed one, not cut-off 8
    for job in jobs:
        job.refresh_from_db()
        assert job.status == "done", job.error
        assert job.params["from_day"] == job.params["to_day"] == DAY1.isoformat()
        assert job.source == "nightly" and job.format == "pdf"
        assert job.stamp["generated_by"] == "nightly schedule"
        assert job.rows >= 1
    # beat firing again (or a retry) makes nothing new
    with django_capture_on_commit_callbacks(execute=True):
        assert nightly_reports(now=at_cutoff, cutoff_hour=6) == []
    assert ReportJob.objects.count() == 2
    with django_capture_on_commit_callbacks(execute=True):
        later = nightly_reports(now=at_cutoff.replace(hour=8), cutoff_hour=8)
    assert [j.params["tables"] for j in later] == [[late.pk]]


@pytest.mark.django_db
def test_the_schedules_are_in_the_database_and_run_the_tasks(beat_rows):
    from casino.celery import app

    # no schedule per cut-off hour: one hourly close follows the house rules
    assert not PeriodicTask.objects.filter(task="reports.nightly").exists()
    close = PeriodicTask.objects.get(task="reports.gaming_day_close")
    assert close.crontab.hour == "*" and close.crontab.minute == "15"
    assert str(close.crontab.timezone) == "Europe/Paris"
    assert close.kwargs == "{}" and close.enabled
    sweep = PeriodicTask.objects.get(task="reports.dispatch_pending")
    assert sweep.interval.every == 2
    app.loader.import_default_modules()
    assert {"reports.nightly", "reports.gaming_day_close",
            "reports.dispatch_pending", "reports.build",
            "reports.reaudit_chunk", "reports.reaudit_finish"} <= set(app.tasks)


@pytest.mark.django_db
def test_editing_a_schedule_in_the_admin_is_logged(beat_rows, client):
    admin = User.objects.create_superuser("boss", password="pw-boss")
    client.force_login(admin)
    nightly = PeriodicTask.objects.get(task="reports.gaming_day_close")
    url = f"/admin/django_celery_beat/periodictask/{nightly.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update(enabled="", crontab=nightly.crontab_id, kwargs="{}",
                args="[]", headers="{}", priority="", expires="", expire_seconds="",
                queue="", exchange="", routing_key="", description="off for a day",
                start_time_0="", start_time_1="", one_off="", _save="Save")
    r = client.post(url, data)
    assert r.status_code == 302, r.context["adminform"].form.errors
    nightly.refresh_from_db()
    assert not nightly.enabled
    log = ChangeLog.objects.get(action="reports.schedule.changed")
    assert log.user == admin and log.old["enabled"] is True
    assert log.new["enabled"] is False


@pytest.fixture
def dead_broker():
    """Celery pointed at a port where nothing listens (the queue is down)."""
    from casino.celery import app

    saved = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = "redis://127.0.0.1:9/0"
    _forget_connections(app)
    yield app
    app.conf.task_always_eager, app.conf.broker_url = saved
    _forget_connections(app)


def _forget_connections(app):
    # the app caches its connection and producer pools from the first use
    app._pool = None
    app.amqp._producer_pool = None


@pytest.mark.django_db(transaction=True)
def test_queue_down_is_a_clear_503_and_the_job_is_kept(_migration_rows, croupier,
                                                       manager, as_user,
                                                       dead_broker):
    play(croupier, DAY1, tables=1, shoes=1, seed=32)
    api = as_user(manager)
    r = api.post("/api/v1/reports/", {"kind": "commission", "format": "csv",
                                      "from_day": str(DAY1), "to_day": str(DAY1)},
                 format="json")
    assert r.status_code == 503, r.content
    assert r.json()["detail"].startswith("reports are unavailable")
    assert r["Retry-After"]
    job = ReportJob.objects.get(pk=r.json()["id"])
    assert (job.status, job.dispatched_at) == ("queued", None)
    assert ChangeLog.objects.filter(action="reports.report.requested").exists()
    # the page says so too
    page = as_user(manager).get(f"/api/v1/reports/{job.pk}/")
    assert page.json()["status"] == "queued"
    # the queue is back: the sweep sends it (eager here), nothing is lost
    dead_broker.conf.task_always_eager = True
    assert dispatch_pending(older_than=0) == 1
    job.refresh_from_db()
    assert job.status == "done" and job.dispatched_at is not None
    assert dispatch_pending(older_than=0) == 0


@pytest.mark.django_db
def test_rules_change_is_a_house_rules_row_the_nightly_follows(
    croupier, manager, django_capture_on_commit_callbacks
):
    play(croupier, DAY1, tables=1, shoes=1, seed=33)
    table = Table.objects.get()
    house_rules_change(table=table, user=manager, reason="late night",
                       gaming_day_cutoff=7)
    at_six = datetime(DAY2.year, DAY2.month, DAY2.day, 6, 0, 5, tzinfo=PARIS)
    with django_capture_on_commit_callbacks(execute=True):
        assert nightly_reports(now=at_six, cutoff_hour=6) == []
        assert len(nightly_reports(now=at_six.replace(hour=7), cutoff_hour=7)) == 1
