"""The surveillance API: a run over any period answers 202 with its status
URL, progress and counts there, the alerts it found with their evidence;
every role (a croupier included) gets what the permission table says; bad
input names the field; the decisions on an alert (reasons, four eyes) go
through the flags' API like any flag's."""

from __future__ import annotations

import pytest

from audit.models import Flag, SurveillanceRun
from casino.models import ChangeLog

from .conftest import DAY1

pytestmark = pytest.mark.django_db
URL = "/api/v1/surveillance/runs/"


def post(api, capture, **body):
    body = {"from_day": str(DAY1), "to_day": str(DAY1), **body}
    with capture(execute=True):
        return api.post(URL, body, format="json")


def test_a_run_answers_202_then_its_alerts(
        floor_night, manager, as_user, django_capture_on_commit_callbacks):
    api = as_user(manager)
    r = post(api, django_capture_on_commit_callbacks)
    assert r.status_code == 202, r.content
    assert r["Location"] == r.data["status_url"] == f"{URL}{r.data['id']}/"
    assert r.data["status"] in ("queued", "running", "done")
    run = api.get(r.data["status_url"]).data
    assert run["status"] == "done" and run["percent"] == 100, run
    assert run["coups"] > 100 and run["tests"] > 0 and run["alerts"] >= 1
    assert run["fdr"] == "0.0500" and run["attempts"] == 1
    alerts = api.get(run["alerts_url"]).data["results"]
    culprit = floor_night["culprit"]
    mine = [a for a in alerts if a["test"] == "false_draw_rate"
            and a["subject"] == f"croupier:{culprit.pk}"]
    assert len(mine) == 1, alerts
    a = mine[0]
    assert a["severity"] == "warning" and a["status"] == "open"
    assert a["p_value"] < 0.001 and a["q_value"] <= 0.05
    assert a["evidence"]["count"] > 0 and a["raised_by_run"] == run["id"]
    assert a["flag_url"] == f"/floor/flags/{a['id']}/"
    assert ChangeLog.objects.get(action="audit.surveillance.requested").user == \
        manager
    # the same period again: 202, the same alerts, none new in the queue
    again = api.get(post(api, django_capture_on_commit_callbacks)
                    .data["status_url"]).data
    assert again["alerts"] == run["alerts"] and again["alerts_new"] == 0
    assert [x["id"] for x in api.get(again["alerts_url"]).data["results"]] == \
        [x["id"] for x in alerts]
    listed = api.get(URL).data["results"]
    assert [x["id"] for x in listed] == [again["id"], run["id"]]


def test_every_role(floor_night, manager, auditor, pitboss, croupier, outsider,
                    as_user, api, django_capture_on_commit_callbacks):
    # the auditor changes nothing: a run raises alerts into the queue
    assert post(as_user(auditor), django_capture_on_commit_callbacks
                ).status_code == 403
    r = post(as_user(manager), django_capture_on_commit_callbacks)
    assert r.status_code == 202, r.content
    run = r.data
    for user in (manager, auditor):
        client = as_user(user)
        assert client.get(run["status_url"]).status_code == 200
        assert client.get(run["alerts_url"]).status_code == 200
        assert client.get(URL).status_code == 200
    for user in (pitboss, croupier, outsider):
        client = as_user(user)
        assert client.get(URL).status_code == 403
        assert client.get(run["status_url"]).status_code == 403
        assert client.get(run["alerts_url"]).status_code == 403
        assert post(client, django_capture_on_commit_callbacks).status_code == 403
    api.force_authenticate(user=None)
    assert api.get(URL).status_code in (401, 403)
    assert post(api, django_capture_on_commit_callbacks).status_code in (401, 403)
    assert SurveillanceRun.objects.count() == 1
    # another rate than the house's
    r = post(as_user(manager), django_capture_on_commit_callbacks, fdr="0.1")
    assert r.status_code == 202 and r.data["fdr"] == "0.1000"


@pytest.mark.parametrize("body, field", [
    ({"from_day": "2025-13-01"}, "from_day"),
    ({"to_day": "2025-03-01"}, "to_day"),
    ({"to_day": "2026-06-01"}, "to_day"),
    ({"tables": [987654]}, "tables"),
    ({"tables": "x"}, "tables"),
    ({"fdr": "0.7"}, "fdr"),
    ({"fdr": "0"}, "fdr"),
    ({"fdr": "nope"}, "fdr"),
])
def test_bad_input_names_the_field(manager, as_user, body, field,
                                   django_capture_on_commit_callbacks):
    r = post(as_user(manager), django_capture_on_commit_callbacks, **body)
    assert r.status_code == 400, r.content
    assert field in r.content.decode()
    assert not SurveillanceRun.objects.exists()


def test_missing_runs_are_404(manager, as_user):
    api = as_user(manager)
    assert api.get(f"{URL}987654/").status_code == 404
    assert api.get(f"{URL}987654/alerts/").status_code == 404


def test_decided_like_a_flag_with_reasons_and_four_eyes(
        floor_night, manager, pitboss, as_user, django_capture_on_commit_callbacks):
    from tests.conftest import make_user

    post(as_user(manager), django_capture_on_commit_callbacks)
    culprit = floor_night["culprit"]
    flag = Flag.objects.get(kind="surveillance", code="false_draw_rate",
                            croupier=culprit)
    base = f"/api/v1/flags/{flag.pk}/"
    detail = as_user(pitboss).get(base)
    assert detail.status_code == 200, detail.content
    assert detail.data["kind"] == "surveillance" and detail.data["table"] is None
    # the croupier it is about may not decide it, even as a pit boss: he
    # does not even see it (issue 38: never an alert about himself), and four
    # eyes would refuse him anyway
    culprit.groups.add(*pitboss.groups.all())
    culprit = type(culprit).objects.get(pk=culprit.pk)
    r = as_user(culprit).post(base + "dismiss/", {"reason": "not me"},
                              format="json")
    assert r.status_code == 404, r.content
    assert as_user(culprit).get(base).status_code == 404
    from audit.services import may_decide

    assert not may_decide(flag, culprit)
    # a pit boss decides it, with a reason
    api = as_user(pitboss)
    assert api.post(base + "confirm/", {}, format="json").status_code == 400
    r = api.post(base + "confirm/", {"reason": "watched the tapes: he "
                                     "draws on 6 all night"}, format="json")
    assert r.status_code == 200, r.content
    flag.refresh_from_db()
    assert flag.status == "confirmed" and flag.decided_by == pitboss
    assert flag.events.filter(action="confirmed").get().reason.startswith("watched")
    log = ChangeLog.objects.get(action="audit.flag.confirmed", object_id=str(flag.pk))
    assert "audit.flagevent" in log.ledger
    # another alert dismissed by another pit boss, with its reason
    other = Flag.objects.filter(kind="surveillance", status="open").exclude(
        pk=flag.pk).first()
    if other is not None:
        boss2 = make_user("pitboss-two", "pitboss")
        r = as_user(boss2).post(f"/api/v1/flags/{other.pk}/dismiss/",
                                {"reason": "explained: a new croupier"},
                                format="json")
        assert r.status_code == 200, r.content
        other.refresh_from_db()
        assert other.status == "dismissed"
    # the queue lists them with their kind
    listed = as_user(pitboss).get("/api/v1/flags/?kind=surveillance").data["results"]
    assert {f["id"] for f in listed} >= {flag.pk}
    assert all(f["kind"] == "surveillance" for f in listed)


@pytest.mark.django_db(transaction=True)
def test_queue_down_503_then_sent_by_the_sweep(manager, as_user, _migration_rows):
    from datetime import timedelta
    from unittest import mock

    from django.utils import timezone

    from audit.surveillance import runs

    with mock.patch("audit.surveillance.runs.publish",
                    side_effect=OSError("redis down")):
        r = as_user(manager).post(URL, {"from_day": str(DAY1),
                                        "to_day": str(DAY1)}, format="json")
    assert r.status_code == 503 and r["Retry-After"] == "120", r.content
    run = SurveillanceRun.objects.get()
    assert run.status == "queued" and run.dispatched_at is None
    assert "kept" in r.data["detail"]
    # the sweep (reports.dispatch_pending) sends it once the queue is back
    SurveillanceRun.objects.filter(pk=run.pk).update(
        requested_at=timezone.now() - timedelta(minutes=5))
    assert runs.dispatch_pending() == 1
    run.refresh_from_db()
    assert run.dispatched_at is not None and run.status == "done"
