"""Report jobs against the runtime role (issue 33, items 3 and 4).

A download is served only from the path the app derives (the job's id, kind,
format and period), and only when the bytes have the SHA-256 that the trail
sealed with the job's finishing write: a path stored by hand, a row edited, a
file replaced or a link put in its place is refused (409 naming the job) and
raises a critical flag; the genuine download still works. A job inserted
behind the app's back under the nightly keys suppresses no report, and
verify_trail names it."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import date, timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from audit.reports.files import job_path
from audit.reports.models import ReportJob
from audit.reports.services import report_request
from casino.trail import trail_verify
from tables.models import Coup
from tables.simulation import simulate
from tests.evidence.conftest import signing_key  # noqa: F401 (fixture)
from tests.insider.test_continuity import alarms, sql

pytestmark = [pytest.mark.postgres, pytest.mark.tampers, pytest.mark.django_db]
LABEL = "reports.reportjob"


@pytest.fixture(autouse=True)
def _eager(settings, tmp_path):
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


@pytest.fixture
def built(croupier, manager, django_capture_on_commit_callbacks):
    """A commission CSV built by the app, and its bytes."""
    simulate(user=croupier, tables=1, shoes=1, seed=5)
    day = Coup.objects.values_list("gaming_day", flat=True).first()
    with django_capture_on_commit_callbacks(execute=True):
        job = report_request(user=manager, kind="commission", format="csv",
                             from_day=day, to_day=day)
    job.refresh_from_db()
    assert job.status == "done", job.error
    return job, job_path(job).read_bytes()


def download(client, user, job):
    client.force_login(user)
    api = client.get(f"/api/v1/reports/{job.pk}/download/")
    page = client.get(f"/reports/jobs/{job.pk}/download/")
    return api, page


def served(response) -> bytes:
    return b"".join(response.streaming_content)


def assert_refused(client, manager, job, *, flagged=True):
    api, page = download(client, manager, job)
    assert api.status_code == 409, api.content
    assert api.json()["code"] == "record_changed"
    assert f"reportjob {job.pk}" in api.json()["detail"]
    assert page.status_code == 409
    assert f"reportjob {job.pk}" in page.content.decode()
    if flagged:
        assert alarms(LABEL), "a critical flag names the job"


def test_the_genuine_download_works(built, client, manager, auditor):
    job, body = built
    for user in (manager, auditor):
        api, page = download(client, user, job)
        assert api.status_code == page.status_code == 200
        assert served(api) == served(page) == body
        assert job.file == f"reports/{job_path(job).name}"
    assert not alarms()
    assert trail_verify(anchors=False).ok


@pytest.mark.parametrize("stored", [
    "/etc/passwd", "../../../../etc/passwd", "reports/../../../etc/hostname",
])
def test_a_path_stored_by_hand_is_refused(built, client, manager, stored):
    job, _ = built
    sql("UPDATE reports_reportjob SET file = %s WHERE id = %s", [stored, job.pk])
    assert_refused(client, manager, job)
    assert f"reportjob {job.pk}" in " ".join(trail_verify(anchors=False).problems)


def test_a_period_climbing_out_is_refused(built, client, manager):
    job, _ = built
    params = {**job.params, "from_day": "../../../etc/passwd"}
    sql("UPDATE reports_reportjob SET params = %s WHERE id = %s",
        [json.dumps(params), job.pk])
    assert_refused(client, manager, job)


def test_a_replaced_file_is_refused_even_with_its_digest_stored(
    built, client, manager
):
    job, body = built
    forged = body.replace(b"Commission", b"Commissionx")
    job_path(job).write_bytes(forged)
    assert_refused(client, manager, job)
    # and the runtime role writing the forged file's digest over the sealed one
    sql("UPDATE reports_reportjob SET sha256 = %s, file_size = %s WHERE id = %s",
        [hashlib.sha256(forged).hexdigest(), len(forged), job.pk])
    assert_refused(client, manager, job)


def test_a_link_at_the_derived_path_is_refused(built, client, manager, tmp_path):
    job, body = built
    path = job_path(job)
    outside = tmp_path / "outside.csv"
    outside.write_bytes(body)  # the same bytes: the link alone is refused
    path.unlink()
    os.symlink(outside, path)
    assert_refused(client, manager, job)
    path.unlink()
    os.symlink("/etc/passwd", path)
    assert_refused(client, manager, job)


def test_a_deleted_file_is_refused(built, client, manager):
    job, _ = built
    job_path(job).unlink()
    assert_refused(client, manager, job)


def test_the_folder_swapped_for_a_link_is_refused(built, client, manager, tmp_path):
    job, body = built
    folder = Path(settings.MEDIA_ROOT) / "reports"
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    os.symlink(elsewhere, folder)
    assert_refused(client, manager, job)


def test_a_done_job_inserted_by_hand_serves_nothing(db, client, manager):
    sql("INSERT INTO reports_reportjob (kind, format, params, source, status, "
        "percent, rows, rows_expected, error, requested_at, attempts, file, "
        "file_size, sha256, stamp, data_position, task_id) VALUES ('commission', "
        "'csv', %s, 'manual', 'done', 100, 1, 1, '', now(), 1, '/etc/passwd', 1, "
        "%s, '{}', '{}', '')",
        [json.dumps({"from_day": "2026-01-01", "to_day": "2026-01-01",
                     "tables": []}), hashlib.sha256(b"x").hexdigest()])
    job = ReportJob.objects.get()
    assert_refused(client, manager, job)


def test_an_evidence_bundle_replaced_is_refused(croupier, manager, signing_key,  # noqa: F811
                                                client,
                                                django_capture_on_commit_callbacks):
    simulate(user=croupier, tables=1, shoes=1, seed=3)
    day = Coup.objects.values_list("gaming_day", flat=True).first()
    with django_capture_on_commit_callbacks(execute=True):
        job = report_request(user=manager, kind="evidence", format="zip",
                             from_day=day, to_day=day)
    job.refresh_from_db()
    assert job.status == "done", job.error
    api, _ = download(client, manager, job)
    assert api.status_code == 200 and served(api) == job_path(job).read_bytes()
    with open(job_path(job), "ab") as f:
        f.write(b"PK")  # one more byte at the end
    assert_refused(client, manager, job)


# -- item 4: the nightly close ------------------------------------------------------

def test_jobs_inserted_under_the_nightly_keys_suppress_nothing(
    db, table, django_capture_on_commit_callbacks
):
    from audit.reports.nightly import closed_day, gaming_day_close

    now = timezone.now()
    day = closed_day(now, 6)
    for n in range(3):
        d = (day + timedelta(days=n)).isoformat()
        sql("INSERT INTO reports_reportjob (kind, format, params, source, "
            "dedupe_key, status, percent, rows, rows_expected, error, "
            "requested_at, attempts, file, file_size, sha256, stamp, "
            "data_position, task_id) VALUES ('commission', 'csv', %s, "
            "'nightly', %s, 'done', 100, 0, 0, '', now(), 1, '', 0, '', '{}', "
            "'{}', '')",
            [json.dumps({"from_day": d, "to_day": d, "tables": [table.pk]}),
             f"nightly:commission:{table.pk}:{d}:csv"])
    forged = set(ReportJob.objects.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        out = gaming_day_close(now=now, format="csv")
    built = ReportJob.objects.exclude(pk__in=forged)
    assert out[6]["jobs"] == [j.pk for j in built], out
    job = built.get()
    assert job.status == "done", job.error
    assert job.params["from_day"] == day.isoformat()
    assert job.dedupe_key.startswith(f"nightly:commission:{table.pk}:{day}:csv:")
    assert alarms(LABEL)
    # the next run finds the sealed job: the day is not built twice
    assert gaming_day_close(now=now, format="csv")[6]["jobs"] == []
    assert ReportJob.objects.count() == len(forged) + 1
    problems = " | ".join(trail_verify(anchors=False).problems)
    for pk in forged:
        assert f"reportjob {pk}: no trail row wrote it" in problems, problems


def test_a_queued_job_inserted_by_hand_is_not_built(db, table):
    """A forged message naming a job the trail does not know builds nothing."""
    from audit.reports.services import report_build

    sql("INSERT INTO reports_reportjob (kind, format, params, source, status, "
        "percent, rows, rows_expected, error, requested_at, attempts, file, "
        "file_size, sha256, stamp, data_position, task_id) VALUES ('commission', "
        "'csv', %s, 'manual', 'queued', 0, 0, 0, '', now(), 0, '', 0, '', '{}', "
        "'{}', '')",
        [json.dumps({"from_day": str(date.today()), "to_day": str(date.today()),
                     "tables": []})])
    job = ReportJob.objects.get()
    assert report_build(job_id=job.pk).status == "queued"
    assert not (Path(settings.MEDIA_ROOT) / "reports").exists() or not any(
        (Path(settings.MEDIA_ROOT) / "reports").iterdir())
    assert alarms(LABEL)


def test_jobs_of_the_previous_release_are_sealed_on_upgrade(db, client, manager):
    """Migration reports 0008: a job built before report jobs were bound (no
    trail entry) is sealed as it stands; its file, under the name the build
    always wrote, downloads as before, and the trail verifies."""
    import importlib

    from django.apps import apps

    from tests.insider.test_tampering import superuser

    upgrade = importlib.import_module(
        "audit.reports.migrations.0008_bind_report_jobs")
    body = b"kind,commission\r\nold,1.00\r\n"
    params = {"from_day": "2026-01-01", "to_day": "2026-01-01", "tables": []}
    with superuser() as cursor:  # as the previous release left it
        cursor.execute(
            "INSERT INTO reports_reportjob (kind, format, params, source, status, "
            "percent, rows, rows_expected, error, requested_at, attempts, file, "
            "file_size, sha256, stamp, data_position, task_id) VALUES "
            "('commission', 'csv', %s, 'manual', 'done', 100, 1, 1, '', now(), 1, "
            "%s, %s, %s, '{}', '{}', '') RETURNING id",
            [json.dumps(params), "", len(body), hashlib.sha256(body).hexdigest()])
        pk = cursor.fetchone()[0]
    job = ReportJob.objects.get(pk=pk)
    job_path(job).parent.mkdir(parents=True)
    job_path(job).write_bytes(body)
    assert "no trail row wrote it" in " ".join(trail_verify(anchors=False).problems)
    upgrade.seal(apps, None)
    assert trail_verify(anchors=False).ok
    api, page = download(client, manager, job)
    assert api.status_code == page.status_code == 200
    assert served(api) == served(page) == body
