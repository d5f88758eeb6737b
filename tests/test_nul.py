"""A NUL byte in a query string or a form is refused with a 400 that names the
parameter, before any view reads it (casino/nul.py): PostgreSQL refuses NUL in
text, and the views that filtered or looked up with one answered 500 there.
tests/audit/test_access.py walks every GET URL with NULs as every role."""

from __future__ import annotations

import pytest
from django.test import Client

from casino.nul import MESSAGE

pytestmark = pytest.mark.django_db


def signed_in(user, **kw) -> Client:
    client = Client(raise_request_exception=False, **kw)
    client.force_login(user)
    return client


def test_a_page_names_the_parameter(manager):
    answer = signed_in(manager).get("/floor/trail/?action=%00")
    assert answer.status_code == 400
    assert answer["Content-Type"].startswith("text/plain")
    assert f"'action' {MESSAGE}" in answer.content.decode()
    # the same page without it
    assert signed_in(manager).get("/floor/trail/?action=tables.").status_code == 200


def test_the_api_answers_as_its_other_4xx(manager, table):
    tableau = table.rules.tableau_id
    client = signed_in(manager)
    answer = client.get(f"/api/v1/tableaux/{tableau}/diff/?against=%00")
    assert answer.status_code == 400
    assert answer.json() == {"against": [MESSAGE], "detail": f"against: {MESSAGE}",
                             "code": "invalid"}
    # a NUL anywhere in the value, in a name, after a good parameter
    for query, name in (("against=chemmy%00x", "against"), ("%00x=1", "%00x"),
                        ("table=1&against=a%00", "against")):
        answer = client.get(f"/api/v1/tableaux/{tableau}/diff/?{query}")
        assert answer.status_code == 400 and name in answer.json(), query
    ok = client.get(f"/api/v1/tableaux/{tableau}/diff/?against=punto-banco-1")
    assert ok.status_code == 200


def test_anonymous_gets_the_400_too(db):
    assert Client().get("/api/v1/trail/?action=%00").status_code == 400
    assert Client().get("/floor/trail/?action=%00").status_code == 400


def test_a_form_value_is_refused_and_nothing_is_written(manager, table):
    """A house-rules change whose reason holds a NUL: refused before the
    service, with CSRF checked as usual otherwise."""
    from tables.models import HouseRules

    before = HouseRules.objects.count()
    client = signed_in(manager, enforce_csrf_checks=True)
    client.get(f"/floor/tables/{table.pk}/rules/")
    token = client.cookies["csrftoken"].value
    answer = client.post(f"/floor/tables/{table.pk}/rules/",
                         f"csrfmiddlewaretoken={token}&decks=8&reason=eight%00decks",
                         content_type="application/x-www-form-urlencoded")
    assert answer.status_code == 400
    assert f"'reason' {MESSAGE}" in answer.content.decode()
    assert HouseRules.objects.count() == before
    # multipart too (the test client's default; a form with a file sends it)
    answer = client.post(f"/floor/tables/{table.pk}/rules/",
                         {"csrfmiddlewaretoken": token, "decks": "8",
                          "reason": "\x00"})
    assert answer.status_code == 400
    assert f"'reason' {MESSAGE}" in answer.content.decode()
    answer = client.post(f"/floor/tables/{table.pk}/rules/",
                         {"csrfmiddlewaretoken": token, "decks": "8",
                          "reason": "eight decks"})
    assert answer.status_code == 302 and HouseRules.objects.count() == before + 1


def test_an_api_form_body_is_refused(manager):
    answer = signed_in(manager).post(
        "/api/v1/tables/", "name=T%00&seats=9",
        content_type="application/x-www-form-urlencoded")
    assert answer.status_code == 400
    assert answer.json()["name"] == [MESSAGE]


def test_a_json_body_is_left_to_the_serializers(manager):
    """Not a form: DRF's CharField refuses the NUL itself, naming the field."""
    answer = signed_in(manager).post("/api/v1/tables/", {"name": "T\x00", "seats": 9},
                                     content_type="application/json")
    assert answer.status_code == 400 and "name" in answer.json()


def test_a_body_too_big_is_answered_as_before(manager, table, settings):
    """The middleware reads no body Django refuses to parse: the page answers
    Django's 400, the API (JSON only) its 415 and, for JSON, its 413."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    client = signed_in(manager)
    big = "name=" + "x%00" * 100 + "&seats=9"
    form = "application/x-www-form-urlencoded"
    page = client.post(f"/floor/tables/{table.pk}/rules/", big, content_type=form)
    assert page.status_code == 400 and MESSAGE not in page.content.decode()
    assert client.post("/api/v1/tables/", big, content_type=form).status_code == 415
    answer = client.post("/api/v1/tables/", {"name": "x" * 200, "seats": 9},
                         content_type="application/json")
    assert answer.status_code == 413
