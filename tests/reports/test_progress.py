"""Reports in a real shift (issue "a real shift", item 15):

- asked at 04:00 for "today", the form means the gaming day in progress (the
  one that began at the previous morning's cut-off), and says so;
- a report's progress is real: the rows to write are counted before the
  first is written, and progress is told as the writer goes (Celery eager
  here; a real worker held mid-build in the last test).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from audit.reports import services
from audit.reports.models import ReportJob

from .conftest import DAY1, DAY2, at, play, wait_for

PARIS = ZoneInfo("Europe/Paris")


def four_in_the_morning(day) -> datetime:
    """04:00 on the calendar day after `day`: still gaming day `day`."""
    nxt = day + timedelta(days=1)
    return datetime(nxt.year, nxt.month, nxt.day, 4, tzinfo=PARIS)


@pytest.mark.django_db
def test_at_four_the_form_asks_for_the_gaming_day_in_progress(croupier, manager,
                                                              client):
    play(croupier, DAY1, tables=1, shoes=1, seed=7)  # at 22:00 on DAY1
    client.force_login(manager)
    with at(four_in_the_morning(DAY1)):
        html = client.get("/reports/").content.decode()
    form = html[html.index('action="/reports/request/"'):]
    form = form[:form.index("</form>")]
    assert re.findall(r'name="(from_day|to_day)" value="([\d-]+)"', form) == [
        ("from_day", str(DAY1)), ("to_day", str(DAY1))]
    note = html[html.index('id="gaming-day-note"'):]
    assert f"The gaming day in progress is {DAY1}" in note[:400]
    assert "06:00" in note[:400]
    # and that day is where the night's coups are: the report is not empty
    from audit.reports.sheets import commission_document

    doc = commission_document(params={"from_day": str(DAY1), "to_day": str(DAY1),
                                      "group_by": "table"}, user=manager)
    assert doc.sheets[0].rows


@pytest.mark.django_db
def test_a_house_rule_cut_off_moves_the_gaming_day(croupier, manager, client):
    """A casino whose gaming day starts at 03:00: at 04:00 it is a new day."""
    from tables.models import Table
    from tables.services import house_rules_change

    report = play(croupier, DAY1, tables=1, shoes=1, seed=8)
    table = Table.objects.get(pk=report.table_ids[0])
    house_rules_change(table=table, user=manager, reason="new licence",
                       gaming_day_cutoff=3)
    client.force_login(manager)
    with at(four_in_the_morning(DAY1)):
        html = client.get("/reports/").content.decode()
    assert f'name="from_day" value="{DAY2}"' in html
    assert "03:00" in html


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["csv", "xlsx", "pdf"])
def test_progress_counts_the_rows_as_they_are_written(
        croupier, croupier2, manager, monkeypatch, fmt,
        django_capture_on_commit_callbacks):
    from audit.reports import sheets

    play(croupier, DAY1, tables=2, shoes=1, seed=9, rate=0.05)
    play(croupier2, DAY2, tables=1, shoes=1, seed=10, rate=0.05)
    monkeypatch.setattr(sheets, "PROGRESS_EVERY", 1)  # every row tells
    told = []
    real = services.report_progress

    def spy(job_id, **kw):
        real(job_id, **kw)
        job = ReportJob.objects.get(pk=job_id)
        told.append((kw["rows"], job.rows_expected, job.percent))

    monkeypatch.setattr(services, "report_progress", spy)
    with django_capture_on_commit_callbacks(execute=True):
        job = services.report_request(user=manager, kind="findings", format=fmt,
                                      from_day=DAY1, to_day=DAY2)
    job.refresh_from_db()
    assert job.status == "done", job.error
    expected = job.rows_expected
    assert expected == job.rows > 3
    # told row by row, against the count made before the first was written
    assert [rows for rows, _, _ in told] == list(range(1, expected + 1))
    assert {exp for _, exp, _ in told} == {expected}
    percents = [p for _, _, p in told]
    assert percents == sorted(percents) and percents[0] < 50 and percents[-1] == 99
    assert job.percent == 100


@pytest.mark.django_db
def test_the_job_page_shows_rows_of_rows_expected(croupier, manager, client,
                                                  django_capture_on_commit_callbacks):
    play(croupier, DAY1, tables=2, shoes=1, seed=11, rate=0.05)
    with django_capture_on_commit_callbacks(execute=True):
        job = services.report_request(user=manager, kind="findings", format="csv",
                                      from_day=DAY1, to_day=DAY1)
    job.refresh_from_db()
    client.force_login(manager)
    html = client.get(f"/reports/jobs/{job.pk}/").content.decode()
    assert re.search(rf'<span class="rows">{job.rows}</span> / '
                     rf'<span class="expected">{job.rows_expected}</span>', html)
    polled = client.get(f"/reports/progress.json?job={job.pk}").json()["jobs"][0]
    assert (polled["rows"], polled["rows_expected"], polled["percent"]) == (
        job.rows, job.rows_expected, 100)


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_reports_progress_mid_build(_migration_rows, start_worker,
                                                  tmp_path, croupier, manager,
                                                  as_user, client):
    """The worker is held at its first progress step (tests/reports/
    worker_hold.py: every 20 rows, or a sheet's end): the job says how many
    rows of how many, and the page shows it; released, it finishes."""
    hold = tmp_path / "hold"
    hold.mkdir()
    play(croupier, DAY1, tables=3, shoes=1, seed=12, rate=0.08)
    worker = start_worker(app="tests.reports.worker_hold",
                          env={"REPORTS_TEST_HOLD": str(hold)})
    api = as_user(manager)
    r = api.post("/api/v1/reports/", {"kind": "findings", "format": "csv",
                                      "from_day": str(DAY1), "to_day": str(DAY1)},
                 format="json")
    assert r.status_code == 202, r.content
    job_id = r.data["id"]
    wait_for(lambda: (hold / f"report-{job_id}").exists()
             or worker.proc.poll() is not None, lambda ok: ok, timeout=60)
    assert worker.proc.poll() is None, worker.text()[-3000:]
    mid = api.get(r.data["status_url"]).data
    assert mid["status"] == "running"
    assert 0 < mid["rows"] < mid["rows_expected"]
    assert mid["percent"] == mid["rows"] * 100 // mid["rows_expected"]
    client.force_login(manager)
    page = client.get(f"/reports/jobs/{job_id}/").content.decode()
    assert (f'<span class="rows">{mid["rows"]}</span> / '
            f'<span class="expected">{mid["rows_expected"]}</span>') in page
    (hold / f"report-{job_id}.release").touch()
    done, _ = wait_for(lambda: api.get(r.data["status_url"]).data,
                       lambda j: j["status"] in ("done", "failed"))
    assert done["status"] == "done", (done["error"], worker.text()[-2000:])
    assert done["percent"] == 100 and done["rows"] == done["rows_expected"]
