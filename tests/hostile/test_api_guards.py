"""The API's guards against hostile requests, one by one (casino/api.py,
casino/drf.py): each was a 5xx or an HTML page before the fuzzers found it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/coups/99999999999999999999999/",  # past a 64-bit id: SQLite overflow
        "/api/v1/coups/-1/",
        "/api/v1/coups/abc/",
        "/api/v1/no-such-endpoint/",
    ],
)
def test_unknown_api_urls_are_json_404s(as_user, auditor, url):
    r = as_user(auditor).get(url)
    assert r.status_code == 404
    assert r["Content-Type"] == "application/json"
    assert r.json()["detail"]


def test_pages_outside_the_api_keep_their_html_404(client):
    r = client.get("/no-such-page/")
    assert r.status_code == 404 and "text/html" in r["Content-Type"]


@pytest.mark.parametrize("param", ["table", "session", "shoe"])
def test_id_filters_refuse_what_the_database_cannot_hold(as_user, auditor, param):
    r = as_user(auditor).get(f"/api/v1/coups/?{param}=99999999999999999999999")
    assert r.status_code == 400 and r.json()["detail"].startswith(param)


def test_a_page_holds_at_most_1000_rows(as_user, auditor, turn):
    r = as_user(auditor).get("/api/v1/sessions/?limit=99999999999999999999999")
    assert r.status_code == 200  # was a 500 on SQLite (LIMIT overflow)
    from casino.drf import Pagination

    assert Pagination.max_limit == 1000


def test_a_database_outage_is_a_503_that_says_retry(as_user, croupier, shoe, turn):
    """A coup is one transaction: if the database is down, nothing was
    written and the tablet retries with the same Idempotency-Key."""
    from unittest import mock

    from django.db import OperationalError

    body = {
        "punter": ["2H", "3D"],
        "banker": ["8C", "TS"],
        "stakes": [{"seat": 2, "amount": "300.00"}],
    }
    with mock.patch(
        "tables.services.coup_record", side_effect=OperationalError("server closed")
    ):
        r = as_user(croupier).post(
            f"/api/v1/shoes/{shoe.pk}/coups/", body, format="json"
        )
    assert r.status_code == 503 and r["Retry-After"] == "1"
    assert "same Idempotency-Key" in r.json()["detail"]


def test_validation_errors_name_the_nested_field(as_user, croupier, shoe, turn):
    body = {
        "punter": ["2H", "3D"],
        "banker": ["8C", "TS"],
        "stakes": [{"seat": 2, "amount": "300.00"}, {"seat": 3, "amount": "x"}],
    }
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", body, format="json")
    assert r.status_code == 400
    assert r.json()["detail"] == (
        'stakes[1].amount: must be a decimal string such as "300.00": digits, at '
        "most 2 after the point, no sign, exponent or spaces"
    )
    assert r.json()["code"] == "invalid"


def test_every_operation_documents_its_errors():
    """What DRF itself may answer is in the schema (CasinoAutoSchema)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, item in schema["paths"].items():
        for method, op in item.items():
            codes = set(op["responses"])
            security = op.get("security", [])
            if any(security):  # a token or a session is accepted
                assert "401" in codes, (method, path)
            if security and {} not in security:  # ... and required
                assert "403" in codes, (method, path)
            if "requestBody" in op:
                assert {"400", "413", "415"} <= codes, (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)


def test_a_commission_unit_past_its_column_is_refused(as_user, manager):
    """HouseRules keeps the unit in 8 digits: a bigger one was a 500."""
    r = as_user(manager).post(
        "/api/v1/tables/", {"name": "T", "commission_unit": "3493202"}, format="json"
    )
    assert r.status_code == 400 and r.json()["detail"].startswith("commission_unit")
