"""The REST API end to end: a table's night through HTTP, and every refusal."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from casino.models import ChangeLog
from tables.models import Coup, Stake

D = Decimal


def coup_body(punter=("2H", "3D"), banker=("8C", "TS"), stakes=None, **extra):
    return {
        "punter": list(punter),
        "banker": list(banker),
        "stakes": [{"seat": 2, "amount": "300.00"}] if stakes is None else stakes,
        **extra,
    }


def post(client, url, body=None, **headers):
    return client.post(url, body or {}, format="json", headers=headers)


def test_token_then_a_night_at_the_table(api, manager, croupier, pitboss):
    r = api.post(
        "/api/v1/auth/token/",
        {"username": "croupier1", "password": "pw-croupier1"},
        format="json",
    )
    assert r.status_code == 200, r.content
    token = r.json()["token"]
    api.force_authenticate(user=manager)
    r = post(api, "/api/v1/tables/", {"name": "Privé", "minimum_banco": "200.00"})
    assert r.status_code == 201, r.json()
    table_id = r.json()["id"]
    assert r.json()["rules"]["commission_rate"] == "0.0500"
    api.force_authenticate(user=None)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    session = post(api, f"/api/v1/tables/{table_id}/sessions/").json()
    shoe = post(api, f"/api/v1/sessions/{session['id']}/shoes/", {"burned": 3}).json()
    assert shoe["cards_left"] == 309
    r = post(
        api, f"/api/v1/sessions/{session['id']}/turns/", {"seat": 4, "bank": "150"}
    )
    assert r.status_code == 400 and "bank" in r.json()  # under the minimum banco
    turn = post(
        api, f"/api/v1/sessions/{session['id']}/turns/", {"seat": 4, "bank": "1000.00"}
    ).json()

    r = post(
        api,
        f"/api/v1/shoes/{shoe['id']}/coups/",
        coup_body(),
        **{"Idempotency-Key": "a1"},
    )
    assert r.status_code == 201, r.json()
    c = r.json()
    assert (c["seq"], c["outcome"], c["punter_total"], c["banker_total"]) == (
        1,
        "banker",
        5,
        8,
    )
    assert (c["covered"], c["garage"], c["commission"]) == ("300.00", "700.00", "15.00")
    assert (c["bank_before"], c["bank_after"]) == ("1000.00", "585.00")
    assert c["findings"] == [] and c["next_banker_seat"] is None
    assert c["cards_left"] == 305
    assert c["stakes"][0]["payout"] == "-300.00"

    # the retry of the same key and body: the same coup, 200
    r2 = post(
        api,
        f"/api/v1/shoes/{shoe['id']}/coups/",
        coup_body(),
        **{"Idempotency-Key": "a1"},
    )
    assert r2.status_code == 200 and r2.json()["id"] == c["id"]
    # same key, another body: 409
    r3 = post(
        api,
        f"/api/v1/shoes/{shoe['id']}/coups/",
        coup_body(stakes=[{"seat": 2, "amount": "100"}]),
        **{"Idempotency-Key": "a1"},
    )
    assert r3.status_code == 409 and "Idempotency-Key" in r3.json()

    # a punter win ends the turn and names the next banker
    r = post(
        api,
        f"/api/v1/shoes/{shoe['id']}/coups/",
        coup_body(
            punter=("9H", "KD"),
            banker=("5C", "2S"),
            stakes=[{"seat": 6, "amount": "585.00", "announcement": "banco_solo"}],
        ),
    )
    assert r.status_code == 201, r.json()
    assert r.json()["next_banker_seat"] == 5 and r.json()["bank_after"] == "0.00"
    t = api.get(f"/api/v1/turns/{turn['id']}/").json()
    assert (t["end"], t["closing_amount"], t["commission_total"]) == (
        "lost",
        "700.00",
        "15.00",
    )
    r = post(api, f"/api/v1/shoes/{shoe['id']}/coups/", coup_body())
    assert r.status_code == 409 and "turn" in r.json()

    assert Coup.objects.count() == 2
    assert ChangeLog.objects.filter(action="tables.coup.recorded").count() == 2


@pytest.fixture
def coups_url(shoe, turn):
    return f"/api/v1/shoes/{shoe.pk}/coups/"


@pytest.mark.parametrize(
    "body, field",
    [
        (coup_body(punter=["2H"]), "punter"),
        (coup_body(banker=["2H", "3H", "4H", "5H"]), "banker"),
        (coup_body(punter=["2H", "1X"]), "punter[1]"),
        (coup_body(punter="2H3D"), "punter"),
        (coup_body(punter=[2, 3]), "punter[0]"),
        (coup_body(stakes=[]), "stakes"),
        (coup_body(stakes=[{"seat": 2, "amount": "5.00"}]), "stakes[0].amount"),
        (coup_body(stakes=[{"seat": 2, "amount": "-100"}]), "stakes"),
        (coup_body(stakes=[{"seat": 2, "amount": "0"}]), "stakes"),
        (coup_body(stakes=[{"seat": 2, "amount": "1e20"}]), "stakes"),
        (coup_body(stakes=[{"seat": 2, "amount": "NaN"}]), "stakes"),
        (coup_body(stakes=[{"seat": 2, "amount": "0.000000001"}]), "stakes"),
        (coup_body(stakes=[{"seat": 2, "amount": "abc"}]), "stakes"),
        (coup_body(stakes=[{"seat": 2}]), "stakes"),
        (coup_body(stakes=[{"amount": "100"}]), "stakes"),
        (coup_body(stakes=[{"seat": 1, "amount": "100"}]), "stakes[0].seat"),
        (
            coup_body(stakes=[{"seat": 2, "amount": "100", "announcement": "x"}]),
            "stakes",
        ),
        (
            coup_body(
                stakes=[{"seat": 2, "amount": "100", "announcement": "banco_solo"}]
            ),
            "stakes[0].amount",
        ),
        (coup_body(declared_bank="-1"), "declared_bank"),
        ({"banker": ["8C", "TS"], "stakes": [{"seat": 2, "amount": "100"}]}, "punter"),
    ],
)
def test_refusals_name_the_field_and_write_nothing(
    as_user, croupier, coups_url, body, field
):
    client = as_user(croupier)
    before = (Coup.objects.count(), Stake.objects.count(), ChangeLog.objects.count())
    r = post(client, coups_url, body)
    assert r.status_code == 400, r.content
    # The field is a key of the body, or (nested serializer errors) the
    # start of `detail`: {"punter": {"0": [...]}, "detail": "punter[0]: ..."}
    body = r.json()
    assert field in body or body["detail"].startswith(f"{field}:"), body
    assert (
        Coup.objects.count(),
        Stake.objects.count(),
        ChangeLog.objects.count(),
    ) == before


def test_malformed_json_is_a_400(as_user, croupier, coups_url):
    r = as_user(croupier).post(
        coups_url, data="{not json", content_type="application/json"
    )
    assert r.status_code == 400
    assert "detail" in r.json()


def test_wrong_top_level_type_is_a_400(as_user, croupier, coups_url):
    r = as_user(croupier).post(
        coups_url, data=json.dumps([1, 2]), content_type="application/json"
    )
    assert r.status_code == 400


def test_oversized_body_is_refused(as_user, croupier, coups_url):
    big = json.dumps(coup_body(note="x" * 400_000))
    r = as_user(croupier).post(coups_url, data=big, content_type="application/json")
    assert 400 <= r.status_code < 500


def test_unknown_shoe_is_404(as_user, croupier, turn):
    r = post(as_user(croupier), "/api/v1/shoes/999999/coups/", coup_body())
    assert r.status_code == 404


def test_expected_seq_conflict(as_user, croupier, coups_url):
    client = as_user(croupier)
    assert post(client, coups_url, coup_body(expected_seq=1)).status_code == 201
    r = post(client, coups_url, coup_body(expected_seq=1))
    assert r.status_code == 409
    assert "moved on" in r.json()["expected_seq"][0]


def test_closed_shoe_is_409(as_user, croupier, shoe, coups_url):
    client = as_user(croupier)
    assert post(client, f"/api/v1/shoes/{shoe.pk}/close/").status_code == 200
    r = post(client, coups_url, coup_body())
    assert r.status_code == 409 and "shoe" in r.json()


def test_roles_on_recording(as_user, manager, auditor, outsider, coups_url, api):
    assert post(api, coups_url, coup_body()).status_code == 401
    for user in (manager, auditor, outsider):
        assert post(as_user(user), coups_url, coup_body()).status_code == 403
    assert Coup.objects.count() == 0


def test_list_and_filter_coups(as_user, croupier, auditor, coups_url, shoe):
    client = as_user(croupier)
    post(client, coups_url, coup_body())
    post(client, coups_url, coup_body(punter=["2H", "2D", "6C"], banker=["3S", "2C"]))
    client = as_user(auditor)
    all_ = client.get("/api/v1/coups/", {"shoe": shoe.pk}).json()
    assert all_["count"] == 2
    flagged = client.get("/api/v1/coups/", {"has_findings": "true"}).json()
    assert [c["seq"] for c in flagged["results"]] == [2]
    assert flagged["results"][0]["findings"][0]["code"] == "false_draw"
    clean = client.get(
        "/api/v1/coups/", {"has_findings": "false", "table": shoe.session.table_id}
    ).json()
    assert [c["seq"] for c in clean["results"]] == [1]
    day = str(Coup.objects.first().gaming_day)
    assert client.get("/api/v1/coups/", {"gaming_day": day}).json()["count"] == 2
    assert (
        client.get("/api/v1/coups/", {"gaming_day": "2001-01-01"}).json()["count"] == 0
    )
    one = client.get(f"/api/v1/coups/{flagged['results'][0]['id']}/")
    assert one.status_code == 200 and one.json()["seq"] == 2


def test_check_endpoint_stores_nothing(as_user, auditor):
    r = post(
        as_user(auditor),
        "/api/v1/check/",
        {"punter": ["2h", "3d"], "banker": ["3S", "2C"]},
    )
    assert r.status_code == 200
    v = r.json()
    assert (v["punter"], v["outcome"], v["punter_choice"]) == (
        ["2H", "3D"],
        "tie",
        "stand",
    )
    assert v["findings"][0]["code"] == "false_draw"
    assert v["findings"][0]["side"] == "banker"
    assert Coup.objects.count() == 0
    r = post(
        as_user(auditor), "/api/v1/check/", {"punter": ["2h"], "banker": ["3S", "2C"]}
    )
    assert r.status_code == 400 and "punter" in r.json()


def test_schema_documents_the_coup_endpoint(as_user, auditor):
    r = as_user(auditor).get("/api/schema/", {"format": "json"})
    assert r.status_code == 200
    schema = json.loads(r.content)
    op = schema["paths"]["/api/v1/shoes/{id}/coups/"]["post"]
    assert {"201", "200", "400", "409"} <= set(op["responses"])
    assert any(p["name"] == "Idempotency-Key" for p in op["parameters"])


def test_fast_payload_equals_the_serializer(as_user, croupier, coups_url):
    from tables.api.serializers import CoupSerializer, coup_payload
    from tables.api.views import coups_queryset

    r = post(
        as_user(croupier),
        coups_url,
        coup_body(
            punter=["2H", "2D", "6C"],
            banker=["3S", "2C"],
            declared_bank="999.00",
            stakes=[
                {"seat": 2, "amount": "300"},
                {"standing": "Mme R.", "amount": "50"},
            ],
        ),
    )
    assert r.status_code == 201
    coup = coups_queryset().get(pk=r.json()["id"])
    assert coup.finding_count == 2
    expected = json.loads(json.dumps(CoupSerializer(coup).data))
    assert json.loads(json.dumps(coup_payload(coup))) == expected
    assert r.json() == expected


def test_a_croupier_reads_only_his_tables_coups(
    as_user, croupier, croupier2, auditor, coups_url
):
    r = post(as_user(croupier), coups_url, coup_body())
    coup_id = r.json()["id"]
    assert as_user(croupier).get("/api/v1/coups/").json()["count"] == 1
    assert as_user(croupier2).get("/api/v1/coups/").json()["count"] == 0
    assert as_user(croupier2).get(f"/api/v1/coups/{coup_id}/").status_code == 404
    assert as_user(auditor).get(f"/api/v1/coups/{coup_id}/").status_code == 200


def test_fast_turn_payload_equals_the_serializer(as_user, croupier, session, shoe):
    from tables.api.serializers import TurnSerializer, turn_payload
    from tables.models import BankerTurn

    r = as_user(croupier).post(
        f"/api/v1/sessions/{session.pk}/turns/",
        {"seat": 3, "bank": "250.5"},
        format="json",
    )
    assert r.status_code == 201, r.content
    turn = BankerTurn.objects.get(pk=r.json()["id"])
    expected = json.loads(json.dumps(TurnSerializer(turn).data))
    assert r.json() == expected == json.loads(json.dumps(turn_payload(turn)))
    assert expected["bank"] == "250.50" and expected["closed_at"] is None
    turn.closed_at, turn.end, turn.closing_amount = turn.opened_at, "lost", 0
    closed = json.loads(json.dumps(TurnSerializer(turn).data))
    assert json.loads(json.dumps(turn_payload(turn))) == closed
