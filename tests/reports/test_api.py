"""The reports API: 202 and a status URL, progress and outcome, downloads for
the roles allowed, errors that name the field, the change log."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from audit.reports.models import ReportJob
from casino.models import ChangeLog

from .conftest import DAY1, DAY3

pytestmark = pytest.mark.django_db
URL = "/api/v1/reports/"


def request_report(client, capture, **body):
    body = {"kind": "commission", "format": "csv", "from_day": str(DAY1),
            "to_day": str(DAY3), **body}
    with capture(execute=True):
        return client.post(URL, body, format="json")


def test_request_answers_202_with_a_status_url_then_the_file(
    nights, manager, as_user, django_capture_on_commit_callbacks
):
    api = as_user(manager)
    r = request_report(api, django_capture_on_commit_callbacks, format="xlsx")
    assert r.status_code == 202, r.content
    assert r["Location"] == r.data["status_url"] == f"{URL}{r.data['id']}/"
    status = api.get(r.data["status_url"]).data
    assert status["status"] == "done" and status["percent"] == 100
    assert status["attempts"] == 1  # built once (a redelivered task would show 2)
    assert status["stamp"]["generated_by"] == "manager1"
    assert status["download_url"] == f"{URL}{r.data['id']}/download/"
    download = api.get(status["download_url"])
    assert download.status_code == 200
    assert download["Content-Type"].startswith("application/vnd.openxmlformats")
    assert b"".join(download.streaming_content)[:2] == b"PK"
    log = ChangeLog.objects.get(action="reports.report.requested")
    assert log.user == manager and log.new["format"] == "xlsx"
    assert ChangeLog.objects.filter(action="reports.report.built").exists()
    listed = api.get(URL).data["results"]
    assert [j["id"] for j in listed] == [r.data["id"]]


def test_roles(nights, manager, auditor, croupier, pitboss, outsider, as_user,
               django_capture_on_commit_callbacks):
    api = as_user(manager)
    posted = request_report(api, django_capture_on_commit_callbacks).data
    job = api.get(posted["status_url"]).data  # built on commit, after the 202
    auditor_api = as_user(auditor)
    assert auditor_api.get(job["download_url"]).status_code == 200
    for user in (croupier, pitboss, outsider):
        api = as_user(user)
        assert api.get(job["status_url"]).status_code == 403
        assert api.get(job["download_url"]).status_code == 403
        assert request_report(api, django_capture_on_commit_callbacks).status_code \
            == 403
    from rest_framework.test import APIClient

    assert APIClient().get(job["download_url"]).status_code in (401, 403)


@pytest.mark.parametrize("body,field", [
    ({"from_day": "2025-13-01"}, "from_day"),
    ({"to_day": "yesterday"}, "to_day"),
    ({"from_day": "2025-03-05", "to_day": "2025-03-01"}, "to_day"),
    ({"from_day": "2015-01-01", "to_day": "2025-03-01"}, "to_day"),
    ({"kind": "everything"}, "kind"),
    ({"format": "docx"}, "format"),
    ({"kind": "coups", "format": "pdf"}, "format"),
    ({"group_by": "weather"}, "group_by"),
    ({"tables": [999]}, "tables"),
    ({"tables": "all"}, "tables"),
])
def test_bad_input_is_a_400_naming_the_field(manager, as_user, body, field,
                                             django_capture_on_commit_callbacks):
    r = request_report(as_user(manager), django_capture_on_commit_callbacks, **body)
    assert r.status_code == 400, r.content
    assert field in r.json()
    assert not ReportJob.objects.exists()


def test_a_missing_job_or_file_is_a_404(manager, as_user):
    api = as_user(manager)
    assert api.get(f"{URL}12345/").status_code == 404
    assert api.get(f"{URL}12345/download/").status_code == 404


def test_a_failed_job_shows_why(nights, manager, as_user, monkeypatch,
                                django_capture_on_commit_callbacks):
    from audit.reports import pdf

    monkeypatch.setattr(pdf, "write_pdf", lambda doc, path, **kw: 1 / 0)
    api = as_user(manager)
    r = request_report(api, django_capture_on_commit_callbacks, format="pdf")
    assert r.status_code == 202
    status = api.get(r.data["status_url"]).data
    assert status["status"] == "failed"
    assert status["error"] == "ZeroDivisionError: division by zero"
    assert status["download_url"] is None
    assert api.get(f"{URL}{r.data['id']}/download/").status_code == 404


def test_commission_json_is_read_at_once(nights, auditor, as_user):
    api = as_user(auditor)
    r = api.get(f"{URL}commission/", {"from_day": str(DAY1), "to_day": str(DAY3),
                                      "group_by": "croupier"})
    assert r.status_code == 200
    data = r.json()
    assert [row["label"] for row in data["rows"]] == ["croupier1", "croupier2"]
    assert data["total"]["coups"] == sum(row["coups"] for row in data["rows"])
    assert data["house_rules"][0]["decks"] == 6
    bad = api.get(f"{URL}commission/", {"from_day": "x", "to_day": str(DAY3)})
    assert bad.status_code == 400 and "from_day" in bad.json()


MONEY_KEYS = {"covered", "commission", "cagnotte_counted", "cagnotte_variance",
              "expected", "band_low", "band_high", "commission_rate",
              "commission_unit", "minimum_banco"}


def money_values(node, path="$"):
    """(path, value) of every money key anywhere in a JSON body."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in MONEY_KEYS and v is not None:
                yield f"{path}.{k}", v
            yield from money_values(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from money_values(v, f"{path}[{i}]")


@pytest.mark.parametrize("group_by", ["table", "croupier", "gaming_day", "banker"])
def test_commission_json_writes_money_as_decimal_strings(
    nights, auditor, as_user, group_by
):
    """8072.1 is a float a reader may round; "8072.10" is the cagnotte."""
    from decimal import Decimal

    api = as_user(auditor)
    r = api.get(f"{URL}commission/", {"from_day": str(DAY1), "to_day": str(DAY3),
                                      "group_by": group_by})
    assert r.status_code == 200
    body = json.loads(r.content)  # the bytes on the wire, not r.data
    found = list(money_values(body))
    assert len(found) > 20
    numbers = [(p, v) for p, v in found if not isinstance(v, str)]
    assert not numbers, f"money as JSON numbers: {numbers[:5]}"
    total = Decimal(body["total"]["commission"])
    assert total == sum(Decimal(row["commission"]) for row in body["rows"])
    assert total.as_tuple().exponent == -2


def test_odds_endpoint(auditor, as_user):
    api = as_user(auditor)
    r = api.get(f"{URL}odds/", {"decks": 8, "punto_banco": "true"})
    assert r.status_code == 200
    assert r.json()["counts"]["banker"] == "2292252566437888"
    r = api.get(f"{URL}odds/", {"decks": 6})
    per_unit = r.json()["expected_commission_per_unit"]
    assert isinstance(per_unit, str)  # exact, as money is: never a JSON number
    assert Decimal("0.0228") < Decimal(per_unit) < Decimal("0.0230")
    assert api.get(f"{URL}odds/", {"decks": 9}).status_code == 400
    r = api.get(f"{URL}odds/", {"tableau": "nope"})
    assert r.status_code == 400 and "tableau" in r.json()


def test_the_schema_documents_the_reports_api(manager, as_user):
    r = as_user(manager).get("/api/schema/", {"format": "json"})
    assert r.status_code == 200
    paths = json.loads(r.content)["paths"]
    assert "/api/v1/reports/" in paths and "/api/v1/reports/reaudit/" in paths
