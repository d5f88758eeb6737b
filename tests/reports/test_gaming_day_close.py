"""The nightly jobs follow the tables' cut-off hours by themselves: one hourly
beat task (reports.gaming_day_close) closes each gaming day at each cut-off in
use, in the casino's time zone, once. Time is frozen by handing `now` in (or
patching django.utils.timezone.now, conftest.at), as test_schedule.py does."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from audit.models import GamingDayClose
from audit.reports.models import ReportJob
from audit.reports.nightly import closed_day, cutoffs_in_use, gaming_day_close
from casino.models import ChangeLog
from tables.models import Table
from tables.services import house_rules_change, table_create
from tests.conftest import app_update

from .conftest import DAY1, DAY2, at, play, wait_for

PARIS = ZoneInfo("Europe/Paris")
DAY0 = DAY1 - timedelta(days=1)


def local(day: date, hour: int, minute: int = 15) -> datetime:
    """A moment of the casino's clock, handed in as UTC: the close must read
    the hour in the casino's time zone, not in the moment's."""
    return datetime(day.year, day.month, day.day, hour, minute,
                    tzinfo=PARIS).astimezone(UTC)


@pytest.fixture
def floor(manager):
    return {h: table_create(user=manager, name=f"Cut-off {h}", gaming_day_cutoff=h)
            for h in (4, 6, 9)}


def sweep(day: date, capture, minutes=(5, 15, 15, 45)) -> dict[str, list]:
    """Beat through a whole calendar day: at each of `minutes` past every hour
    (:15 twice: beat firing twice); which table got which report, when."""
    got: dict[str, list] = defaultdict(list)
    for hour in range(24):
        for minute in minutes:
            before = set(ReportJob.objects.values_list("pk", flat=True))
            with capture(execute=False):  # requested; built in another test
                gaming_day_close(now=local(day, hour, minute))
            for job in ReportJob.objects.exclude(pk__in=before):
                name = Table.objects.get(pk=job.params["tables"][0]).name
                got[name].append((hour, minute, job.params["from_day"]))
    return got


@pytest.mark.django_db
def test_each_cutoff_gets_its_report_at_its_hour_once(
    floor, django_capture_on_commit_callbacks
):
    # The first run ever closes the latest closed day of each cut-off: DAY0
    # (at 00:15 on DAY2, no cut-off has closed DAY1 yet).
    with django_capture_on_commit_callbacks(execute=False):
        first = gaming_day_close(now=local(DAY2, 0))
    assert {h: v["day"] for h, v in first.items()} == {
        4: DAY0.isoformat(), 6: DAY0.isoformat(), 9: DAY0.isoformat()}
    got = sweep(DAY2, django_capture_on_commit_callbacks)
    # each table once, for DAY1, at its cut-off + the margin (:15, not :05)
    assert dict(got) == {
        "Cut-off 4": [(4, 15, DAY1.isoformat())],
        "Cut-off 6": [(6, 15, DAY1.isoformat())],
        "Cut-off 9": [(9, 15, DAY1.isoformat())],
    }
    jobs = ReportJob.objects.filter(source="nightly")
    assert jobs.count() == 6  # DAY0 and DAY1 for each, nothing twice
    assert {(j.kind, j.format, j.params["group_by"]) for j in jobs} == {
        ("commission", "pdf", "croupier")}
    # the change log anchored and the ledger re-settled once per cut-off and day
    closes = set(GamingDayClose.objects.values_list("kind", "cutoff_hour",
                                                    "gaming_day"))
    assert closes == {(k, h, d) for k in ("anchor", "ledger") for h in (4, 6, 9)
                      for d in (DAY0, DAY1)}
    runs = ChangeLog.objects.filter(action="audit.ledger.verified")
    assert sorted(r.new["from_day"] for r in runs) == sorted(
        [DAY0.isoformat()] * 3 + [DAY1.isoformat()] * 3)


@pytest.mark.django_db
def test_a_cutoff_no_longer_in_use_runs_nothing(
    floor, manager, django_capture_on_commit_callbacks
):
    moved = table_create(user=manager, name="Moved", gaming_day_cutoff=6)
    with at(local(DAY1, 20)):
        # no session open: in force from the table's next session, i.e. now
        house_rules_change(table=moved, user=manager, reason="later nights",
                           gaming_day_cutoff=9)
        app_update(floor[6], active=False)  # closed
    assert set(cutoffs_in_use(local(DAY2, 0))) == {4, 9}
    with django_capture_on_commit_callbacks(execute=False):
        gaming_day_close(now=local(DAY2, 0))
    got = sweep(DAY2, django_capture_on_commit_callbacks, minutes=(15,))
    assert dict(got) == {
        "Cut-off 4": [(4, 15, DAY1.isoformat())],
        "Cut-off 9": [(9, 15, DAY1.isoformat())],
        "Moved": [(9, 15, DAY1.isoformat())],
    }
    assert not GamingDayClose.objects.filter(cutoff_hour=6).exists()
    assert all(j.params["tables"] != [floor[6].pk] for j in ReportJob.objects.all())


@pytest.mark.django_db
def test_an_open_session_keeps_its_cutoff_until_it_closes(
    croupier, manager, django_capture_on_commit_callbacks
):
    """A session plays the version it opened under, and its coups take their
    gaming day from it: the table stays on that cut-off while it is open."""
    from tables.services import session_open

    table = table_create(user=manager, name="Open late", gaming_day_cutoff=9)
    with at(local(DAY1, 20)):
        session_open(table=table, user=manager, croupier=croupier)
        house_rules_change(table=table, user=manager, reason="earlier",
                           gaming_day_cutoff=4)
    assert set(cutoffs_in_use(local(DAY2, 5))) == {9}


@pytest.mark.django_db
@pytest.mark.parametrize("utc_hour,expected", [(1, []), (2, ["2025-03-29"])])
def test_the_hour_is_the_casinos_across_a_clock_change(
    floor, utc_hour, expected, django_capture_on_commit_callbacks
):
    """2025-03-30, Paris springs forward at 02:00: 04:15 local is 02:15 UTC
    (the day before it was 03:15 UTC)."""
    moment = datetime(2025, 3, 30, utc_hour, 15, tzinfo=UTC)
    assert closed_day(datetime(2025, 3, 30, 2, 15, tzinfo=UTC), 4) == date(2025, 3, 29)
    with django_capture_on_commit_callbacks(execute=False):
        out = gaming_day_close(now=moment, ledger=False)
    assert out[4]["day"] == (expected[0] if expected else "2025-03-28")
    # 03:15 local: the day that closed last at 04:00 is the 28th (its report
    # is the first run's catch-up); at 04:15 local the 29th has closed
    days = {j.params["from_day"] for j in ReportJob.objects.all()
            if j.params["tables"] == [floor[4].pk]}
    assert days == set(expected or ["2025-03-28"])


@pytest.mark.django_db
def test_the_beat_task_builds_the_reports_eagerly(
    croupier, django_capture_on_commit_callbacks
):
    from audit.reports.tasks import gaming_day_close_task

    play(croupier, DAY1, tables=2, shoes=1, seed=51)
    with at(local(DAY2, 6)), django_capture_on_commit_callbacks(execute=True):
        result = gaming_day_close_task.apply(kwargs={"format": "csv"}).get()
    assert result["6"]["day"] == DAY1.isoformat() and result["6"]["ledger"]
    jobs = ReportJob.objects.filter(source="nightly")
    assert jobs.count() == 2
    for job in jobs:
        assert job.status == "done", job.error
        assert job.params["from_day"] == job.params["to_day"] == DAY1.isoformat()
        assert job.rows >= 1 and job.stamp["generated_by"] == "nightly schedule"
    # a redelivery, or beat firing again: nothing new
    with at(local(DAY2, 6, 40)), django_capture_on_commit_callbacks(execute=True):
        again = gaming_day_close_task.apply(kwargs={"format": "csv"}).get()
    assert again["6"]["jobs"] == [] and not again["6"]["ledger"]
    assert ReportJob.objects.filter(source="nightly").count() == 2


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_closes_the_day_once(_migration_rows, worker, manager):
    """The task sent through Redis to a real worker, twice: one report per
    table for the day the clock says closed last, built; nothing twice."""
    from django.utils import timezone

    from audit.reports.tasks import gaming_day_close_task
    from casino.celery import publish

    tables = {h: table_create(user=manager, name=f"Worker {h}", gaming_day_cutoff=h)
              for h in (4, 9)}
    before = {h: closed_day(timezone.now(), h) for h in tables}
    publish(gaming_day_close_task.si(format="csv"))
    jobs, _ = wait_for(lambda: list(ReportJob.objects.filter(source="nightly")),
                       lambda js: len(js) == 2 and all(
                           j.status in ("done", "failed") for j in js))
    publish(gaming_day_close_task.si(format="csv"))
    done = re.compile(r"Task reports\.gaming_day_close\[[^\]]+\] succeeded")
    wait_for(lambda: len(done.findall(worker.read_text())), lambda n: n == 2)
    after = {h: closed_day(timezone.now(), h) for h in tables}
    for job in jobs:
        h = next(h for h, t in tables.items() if job.params["tables"] == [t.pk])
        assert job.status == "done", (job.error, worker.read_text()[-2000:])
        assert job.params["from_day"] in {before[h].isoformat(), after[h].isoformat()}
    # the second delivery made nothing new
    assert ReportJob.objects.filter(source="nightly").count() == 2
    assert GamingDayClose.objects.filter(kind="ledger").count() == 2
    assert ChangeLog.objects.filter(action="audit.ledger.verified").count() == 2
