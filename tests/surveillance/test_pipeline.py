"""The run over a small database: the injected pattern (one croupier's false
draws) raises its alert into the queue as kind "surveillance", with its
evidence, once even when the period is run twice; the run's summary holds the
page's charts; everything it wrote is in the trail."""

from __future__ import annotations

import pytest

from audit.models import Flag, FlagEvent, SurveillanceEvidence, SurveillanceRun
from audit.surveillance import runs
from casino.models import ChangeLog

from .conftest import DAY1

pytestmark = pytest.mark.django_db


def _run(user, **kw):
    run = runs.surveillance_request(user=user, from_day=DAY1, to_day=DAY1, **kw)
    return runs.surveillance_execute(run_id=run.pk)


def test_the_culprit_is_raised_once_with_evidence(floor_night, manager):
    culprit = floor_night["culprit"]
    run = _run(manager)
    assert run.status == "done", run.error
    assert run.percent == 100 and run.coups > 100 and run.tests > 0
    flags = Flag.objects.filter(kind=Flag.Kind.SURVEILLANCE)
    mine = flags.filter(code="false_draw_rate", croupier=culprit)
    assert mine.count() == 1, list(flags.values_list("ident", flat=True))
    flag = mine.get()
    assert flag.severity == "warning" and flag.status == "open"
    assert flag.table_id is None and flag.session_id is None
    assert f"croupier:{culprit.pk}" in flag.message
    ev = SurveillanceEvidence.objects.get(flag=flag)
    assert ev.run_id == run.pk and ev.p_value < 0.001
    body = ev.evidence
    assert body["count"] > 0 and body["coups"] > 0
    assert body["rate"] > body["floor_rate"]
    assert body["funnel"]["points"] and "hi998" in body["funnel"]
    assert FlagEvent.objects.filter(flag=flag, action="raised").count() == 1
    log = ChangeLog.objects.filter(action="audit.surveillance.alert",
                                   object_id=str(flag.pk)).get()
    assert "audit.surveillanceevidence" in log.ledger  # bound to the trail
    # the page's overview
    s = run.summary
    assert s["funnel"]["points"] and s["tables"] and s["bankers"]
    assert all("cusum" in t and t["cusum"]["limit"] > 0 for t in s["tables"])
    assert set(run.timings) >= {"collect", "detect", "write", "total"}

    again = _run(manager)  # the same period again: nothing raised twice
    assert again.status == "done" and again.alerts == run.alerts
    assert again.alerts_new == 0
    assert Flag.objects.filter(kind=Flag.Kind.SURVEILLANCE).count() == \
        flags.count()
    assert SurveillanceEvidence.objects.count() == run.alerts_new
    assert ChangeLog.objects.filter(
        action="audit.surveillance.done").count() == 2


def test_a_redelivered_task_leaves_a_done_run_alone(floor_night, manager):
    run = _run(manager)
    before = Flag.objects.count()
    same = runs.surveillance_execute(run_id=run.pk)
    assert same.attempts == 1 and same.status == "done"
    assert Flag.objects.count() == before


def test_an_honest_floor_raises_nothing(croupier, croupier2, manager):
    from .conftest import play

    play(croupier, DAY1, tables=2, shoes=2, seed=21, rate=0.0, prefix="A")
    play(croupier2, DAY1, tables=1, shoes=2, seed=22, rate=0.0, prefix="B")
    run = _run(manager)
    assert run.status == "done" and run.alerts == 0, run.summary
    assert not Flag.objects.filter(kind=Flag.Kind.SURVEILLANCE).exists()


def test_an_empty_period_is_a_done_run(manager):
    run = _run(manager)
    assert run.status == "done" and run.coups == 0 and run.alerts == 0


def test_requests_are_checked(manager, auditor):
    from tables.errors import Forbidden, Invalid

    with pytest.raises(Invalid) as e:
        runs.surveillance_request(user=manager, from_day="2025-03-05",
                                  to_day="2025-03-04")
    assert e.value.field == "to_day"
    with pytest.raises(Invalid) as e:
        runs.surveillance_request(user=manager, from_day="x", to_day=DAY1)
    assert e.value.field == "from_day"
    for bad in ("0", "0.5", "abc", "-1", "0.123456"):
        with pytest.raises(Invalid) as e:
            runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1,
                                      fdr=bad)
        assert e.value.field == "fdr"
    with pytest.raises(Invalid) as e:
        runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1,
                                  table_ids=[987654])
    assert e.value.field == "tables"
    # the house's rate by default; another rate is a manager's (the nightly
    # run has no user and runs at the house's)
    run = runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1)
    assert str(run.fdr) == "0.0500"
    with pytest.raises(Forbidden) as e:
        runs.surveillance_request(user=auditor, from_day=DAY1, to_day=DAY1,
                                  fdr="0.1")
    assert e.value.field == "fdr"
    run = runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1,
                                    fdr="0.1")
    assert str(run.fdr) == "0.1000"
    assert SurveillanceRun.objects.count() == 2


def test_the_gaming_day_close_surveys_the_day_once(
        floor_night, beat_rows, django_capture_on_commit_callbacks):
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    from audit.reports.nightly import gaming_day_close

    culprit = floor_night["culprit"]
    after = DAY1 + timedelta(days=1)
    moment = datetime(after.year, after.month, after.day, 6, 15,
                      tzinfo=ZoneInfo("Europe/Paris"))
    with django_capture_on_commit_callbacks(execute=True):
        out = gaming_day_close(now=moment, ledger=False)
    run = SurveillanceRun.objects.get()
    assert out[6]["surveillance"] == run.pk and out[6]["day"] == str(DAY1)
    assert run.source == "nightly" and run.from_day == run.to_day == DAY1
    assert sorted(run.tables) == sorted(
        floor_night["honest"].table_ids + floor_night["bad"].table_ids)
    run.refresh_from_db()
    assert run.status == "done", run.error
    assert Flag.objects.filter(kind="surveillance", code="false_draw_rate",
                               croupier=culprit).count() == 1
    # the hourly task fires again, and again: the day is surveyed once
    again = gaming_day_close(now=moment + timedelta(hours=1), ledger=False)
    assert again[6]["surveillance"] is None
    assert SurveillanceRun.objects.count() == 1


def test_the_nightly_cusum_reads_the_trailing_days(floor_night, croupier):
    """The nightly run tests its own gaming day, but a table's CUSUM runs
    over the trailing window (a drift shows over several nights)."""
    from datetime import timedelta

    from .conftest import DAY2, play

    honest = floor_night["honest"].table_ids
    play(croupier, DAY2, tables=1, shoes=1, seed=41, prefix="Second")
    run = runs.surveillance_nightly(cutoff=6, day=DAY2, table_ids=honest)
    run = runs.surveillance_execute(run_id=run.pk)
    assert run.status == "done", run.error
    assert run.coups == 0  # the honest tables did not play on DAY2
    s = run.summary
    assert s["cusum_from"] == str(DAY2 - timedelta(days=runs.NIGHTLY_CUSUM_DAYS - 1))
    paths = {t["table"]: t["cusum"] for t in s["tables"]}
    assert set(paths) == set(honest)  # yesterday's coups of those tables
    assert all(set(p["day"]) == {str(DAY1)} for p in paths.values())
    manual = _run(None)
    assert manual.summary["cusum_from"] == str(DAY1)


@pytest.mark.parametrize("value", ["0", "0.5", "0.7", "-0.1", "five percent"])
def test_the_house_rate_is_checked_at_start(value):
    from tests.test_settings import start

    result = start(SURVEILLANCE_FDR=value)
    assert result.returncode != 0
    assert "SURVEILLANCE_FDR" in result.stderr


def test_the_house_rate_is_a_setting(settings, manager):
    settings.SURVEILLANCE_FDR = 0.01
    run = runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1)
    assert str(run.fdr) == "0.0100"


def test_idents_and_evidence_as_json():
    import math
    from datetime import date

    import numpy as np

    from audit.surveillance.alerts import MAX_POINTS, alert_ident, plain
    from audit.surveillance.data import Alert

    a, b = date(2025, 3, 1), date(2025, 3, 31)
    day = date(2025, 3, 12).toordinal()

    def alert(kind, subject, test="t"):
        return Alert(kind, subject, test, 1.0, 0.01, day, {})

    # a subject over a period: once per period
    assert alert_ident(alert("croupier", "croupier:7"), a, b) == \
        "v:t:croupier:7:2025-03-01:2025-03-31"
    assert alert_ident(alert("banker", "card:A1"), a, a) != \
        alert_ident(alert("banker", "card:A1"), a, b)
    # a CUSUM crossing: its day, whatever the window
    assert alert_ident(alert("table_cusum", "table:3"), a, b) == \
        alert_ident(alert("table_cusum", "table:3"), b, b) == "v:t:table:3:2025-03-12"
    # a shoe, a table's day: the subject says it all
    assert alert_ident(alert("shoe", "shoe:9"), a, b) == "v:t:shoe:9"
    long = plain({"x": np.arange(5000), "y": [math.nan, math.inf, 1.5],
                  "z": np.float64(2.5), "n": np.int64(3), "d": date(2025, 3, 1)})
    assert len(long["x"]) == MAX_POINTS and long["x"][0] == 0
    assert long["x"][-1] == 4999
    assert long["y"] == [None, None, 1.5] and long["z"] == 2.5 and long["n"] == 3
    assert long["d"] == "2025-03-01"


def test_planted_patterns_reach_the_queue_once(croupier, croupier2, manager):
    """simulate --inject: a croupier at 3x the floor's false draws and a shoe
    short of four 9s. The croupier is a surveillance alert; the short shoe
    is the close's own shoe_count flag, not raised a second time."""
    from tables.models import ShoeFinding
    from tables.sim_patterns import injection_parse
    from tables.simulation import simulate

    from .conftest import DAY1, close_sessions

    inject = injection_parse(["croupier-false-draw=4", "short-shoe=9x4"])
    report = simulate(user=croupier, croupiers=[croupier, croupier2], tables=3,
                      shoes=3, seed=7, inject=inject, start=DAY1, days=1,
                      table_prefix="Planted")
    close_sessions(croupier, report.table_ids, DAY1)
    short = ShoeFinding.objects.get(code="shoe_count")
    assert Flag.objects.filter(ident=f"h:{short.shoe_id}:shoe_count").count() == 1
    run = _run(manager)
    assert run.status == "done", run.error
    idents = run.summary["alert_idents"]
    assert f"h:{short.shoe_id}:shoe_count" in idents
    assert Flag.objects.filter(shoe_id=short.shoe_id,
                               code__in=("shoe_count", "count")).count() == 1
    cheat = report.injected["croupier"]["user"]
    assert cheat == croupier.username
    flags = Flag.objects.filter(kind="surveillance", code="false_draw_rate")
    assert list(flags.values_list("croupier__username", flat=True)) == [cheat]
