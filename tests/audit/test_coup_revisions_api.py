"""GET /api/v1/coups/ after a correction: each coup once at its latest
revision by default, the history on request (?revisions=all), a bad value
refused naming the parameter; filters, pagination and the own-table rule
hold in both modes; the schema documents it."""

from __future__ import annotations

import json

import pytest

from tables import services
from tables.models import Coup

from .conftest import stake

URL = "/api/v1/coups/"


@pytest.fixture
def corrected(played, pitboss):
    """Coup 2 (a false draw) corrected: revision 2 of it, and revision 2 of
    coups 3 and 4 (re-settled: one card more left the shoe)."""
    fd = played[1]
    services.coup_correct(
        coup=fd, user=pitboss, reason="third card mis-keyed",
        punter=["2H", "2D", "6C"], banker=["3S", "2C", "4H"],
        stakes=[stake("200", seat=3)],
    )
    return played


def rows(client, **params):
    r = client.get(URL, params)
    assert r.status_code == 200, r.content
    return r.json()


def test_each_coup_once_at_its_latest_revision(as_user, auditor, corrected, pitboss):
    shoe = corrected[0].shoe
    body = rows(as_user(auditor), shoe=shoe.pk)
    assert body["count"] == 4
    got = [(c["seq"], c["revision"], c["latest"]) for c in body["results"]]
    assert got == [(4, 2, True), (3, 2, True), (2, 2, True), (1, 1, True)]
    two = body["results"][2]
    assert two["banker_cards"] == ["3S", "2C", "4H"]
    assert (two["corrected_by"], two["correction_reason"]) == (
        str(pitboss), "third card mis-keyed",
    )
    assert two["corrected_at"] is not None
    one = body["results"][3]
    assert (one["corrected_by"], one["corrected_at"], one["correction_reason"]) == (
        None, None, "",
    )
    # Naming the default gives the same list.
    assert rows(as_user(auditor), shoe=shoe.pk, revisions="latest") == body
    # Nothing was rewritten: the originals are still stored.
    assert Coup.objects.filter(shoe=shoe).count() == 7


def test_the_history_on_request(as_user, auditor, corrected):
    shoe = corrected[0].shoe
    body = rows(as_user(auditor), shoe=shoe.pk, revisions="all")
    assert body["count"] == 7
    got = [(c["seq"], c["revision"], c["latest"]) for c in body["results"]]
    assert got == [
        (4, 2, True), (4, 1, False), (3, 2, True), (3, 1, False),
        (2, 2, True), (2, 1, False), (1, 1, True),
    ]
    old = next(c for c in body["results"] if (c["seq"], c["revision"]) == (2, 1))
    assert old["id"] == corrected[1].pk and old["banker_cards"] == ["3S", "2C"]
    assert old["corrected_by"] is None
    # An old revision stays reachable by its id, marked as superseded.
    one = as_user(auditor).get(f"{URL}{corrected[1].pk}/").json()
    assert (one["revision"], one["latest"]) == (1, False)
    # ...and through the coup's own history.
    history = as_user(auditor).get(f"/api/v1/coups/{corrected[1].pk}/revisions/")
    assert [(c["revision"], c["latest"]) for c in history.json()] == [
        (1, False), (2, True),
    ]


def test_filters_and_pagination_in_both_modes(as_user, auditor, corrected):
    client, shoe = as_user(auditor), corrected[0].shoe
    # The false draw was corrected away: only its old revision has a finding.
    assert rows(client, has_findings="true")["count"] == 0
    old = rows(client, has_findings="true", revisions="all")
    assert [(c["seq"], c["revision"]) for c in old["results"]] == [(2, 1)]
    assert rows(client, outcome="tie", table=shoe.session.table_id)["count"] == 1
    assert rows(client, outcome="tie", revisions="all")["count"] == 2
    page = rows(client, revisions="all", limit=2, offset=2)
    assert page["count"] == 7
    assert [(c["seq"], c["revision"]) for c in page["results"]] == [(3, 2), (3, 1)]
    page = rows(client, limit=3)
    assert page["count"] == 4 and len(page["results"]) == 3 and page["next"]


@pytest.mark.parametrize(
    "query",
    [
        "revisions=ALL",
        "revisions=",
        "revisions=true",
        "revisions=history",
        "revisions=all,latest",
        "revisions=all&revisions=latest",
        "revisions=all&revisions=all",
        "revisions=%00",
    ],
)
def test_a_bad_revisions_value_is_a_400_naming_it(as_user, auditor, corrected, query):
    r = as_user(auditor).get(f"{URL}?{query}")
    assert r.status_code == 400, r.content
    body = r.json()
    assert list(body["revisions"]) and body["detail"].startswith("revisions: ")
    assert body["code"] == "invalid"


def test_a_croupier_reads_his_own_table_only_in_both_modes(
    as_user, croupier, croupier2, outsider, corrected
):
    assert rows(as_user(croupier))["count"] == 4
    assert rows(as_user(croupier), revisions="all")["count"] == 7
    assert rows(as_user(croupier2))["count"] == 0
    assert rows(as_user(croupier2), revisions="all")["count"] == 0
    assert as_user(outsider).get(URL, {"revisions": "all"}).status_code == 403


def test_the_schema_documents_the_parameter(as_user, auditor):
    r = as_user(auditor).get("/api/schema/", {"format": "json"})
    op = json.loads(r.content)["paths"]["/api/v1/coups/"]["get"]
    param = next(p for p in op["parameters"] if p["name"] == "revisions")
    assert param["in"] == "query" and not param.get("required", False)
    assert sorted(param["schema"]["enum"]) == ["all", "latest"]
    assert param["schema"]["default"] == "latest"
    assert "400" in op["responses"]
    coup = json.loads(r.content)["components"]["schemas"]["Coup"]["properties"]
    assert coup["latest"]["type"] == "boolean"
    assert {"corrected_by", "corrected_at", "correction_reason"} <= set(coup)
