"""Player card numbers: an optional card on a stake and on a banker's turn,
through the services, the API (both coup write paths: the ORM's and
PostgreSQL's one batch), the trail, corrections and the floor's coup page."""

from __future__ import annotations

from decimal import Decimal

import pytest

from casino.models import ChangeLog
from casino.trail import ledger_digest, trail_verify
from tables import services
from tables.errors import Invalid
from tables.models import BankerTurn, Coup, Stake
from tables.services import ledger_pg

pytestmark = pytest.mark.django_db
D = Decimal


def coup_body(stakes, punter=("2H", "3D"), banker=("8C", "TS")):
    return {"punter": list(punter), "banker": list(banker), "stakes": stakes}


def test_api_stores_the_card_of_each_stake(as_user, croupier, shoe, turn):
    client = as_user(croupier)
    r = client.post(f"/api/v1/shoes/{shoe.pk}/coups/", coup_body([
        {"seat": 2, "amount": "100.00", "player_card": "ab12"},
        {"seat": 3, "amount": "100.00"},
        {"standing": "Mme R.", "amount": "50.00", "player_card": " 0042 "},
    ]), format="json")
    assert r.status_code == 201, r.content
    assert [s["player_card"] for s in r.json()["stakes"]] == ["AB12", "", "0042"]
    assert list(Stake.objects.order_by("position").values_list(
        "player_card", flat=True)) == ["AB12", "", "0042"]
    # the read API says the same
    coup = Coup.objects.get()
    r = client.get(f"/api/v1/coups/{coup.pk}/")
    assert r.status_code == 200
    assert [s["player_card"] for s in r.json()["stakes"]] == ["AB12", "", "0042"]


@pytest.mark.parametrize("bad", [12345, True, None, ["A1"], "AB-12", "é1",
                                 "X" * 21])
def test_api_refuses_a_bad_stake_card_naming_it(as_user, croupier, shoe, turn, bad):
    before = (Coup.objects.count(), ChangeLog.objects.count())
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", coup_body([
        {"seat": 2, "amount": "100.00"},
        {"seat": 3, "amount": "100.00", "player_card": bad},
    ]), format="json")
    assert r.status_code == 400, r.content
    body = r.json()
    assert body["detail"].startswith("stakes[1].player_card:"), body
    assert (Coup.objects.count(), ChangeLog.objects.count()) == before


def test_api_turn_open_with_and_without_a_card(as_user, croupier, shoe):
    client = as_user(croupier)
    url = f"/api/v1/sessions/{shoe.session_id}/turns/"
    for bad in (7, "A B", "x" * 21, False):
        r = client.post(url, {"seat": 1, "bank": "1000.00", "player_card": bad},
                        format="json")
        assert r.status_code == 400 and "player_card" in r.json(), (bad, r.json())
    r = client.post(url, {"seat": 1, "bank": "1000.00", "player_card": "c0ffee"},
                    format="json")
    assert r.status_code == 201 and r.json()["player_card"] == "C0FFEE"
    turn = BankerTurn.objects.get()
    assert turn.player_card == "C0FFEE"
    log = ChangeLog.objects.get(action="tables.turn.opened")
    assert log.new["player_card"] == "C0FFEE"
    assert client.get(f"/api/v1/turns/{turn.pk}/").json()["player_card"] == "C0FFEE"


def test_the_service_refuses_a_bad_card(shoe, turn, croupier, session):
    with pytest.raises(Invalid) as err:
        services.coup_record(
            shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
            stakes=[services.StakeInput(amount=D("100"), seat=2, player_card="a.b")])
    assert err.value.field == "stakes[0].player_card"


def test_a_row_without_a_card_keeps_the_digest_it_had(shoe, turn, croupier):
    """"" is the field's default: left out of the digest, so rows written
    before the field existed still verify; a card changes the digest."""
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=D("100"), seat=2)])
    stake = Stake.objects.get()
    plain = ledger_digest(stake)
    stake.player_card = "A1"
    assert ledger_digest(stake) != plain
    turn.refresh_from_db()
    plain = ledger_digest(turn)
    turn.player_card = "A1"
    assert ledger_digest(turn) != plain


def test_an_idempotent_retry_with_another_card_is_a_different_request(
    as_user, croupier, shoe, turn
):
    client = as_user(croupier)
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    body = coup_body([{"seat": 2, "amount": "100.00", "player_card": "A1"}])
    first = client.post(url, body, format="json", headers={"Idempotency-Key": "k1"})
    again = client.post(url, body, format="json", headers={"Idempotency-Key": "k1"})
    assert first.status_code == 201 and again.status_code in (200, 201)
    assert Coup.objects.count() == 1
    body["stakes"][0]["player_card"] = "B2"
    other = client.post(url, body, format="json", headers={"Idempotency-Key": "k1"})
    assert other.status_code in (409, 422), other.content


def test_shoe_play_opens_turns_with_the_bankers_card(shoe, croupier):
    played = services.shoe_play(shoe_id=shoe.pk, user=croupier, events=[
        services.TurnOpen(seat=3, bank=D("500.00"), player_card="vip7"),
        services.CoupEvent(["2H", "3D"], ["8C", "TS"], [
            services.StakeInput(amount=D("100"), seat=4, player_card="p4")]),
    ])
    assert played.turns[-1].player_card == "VIP7"
    assert BankerTurn.objects.get().player_card == "VIP7"
    assert Stake.objects.get().player_card == "P4"
    with pytest.raises(Invalid) as err:
        services.shoe_play(shoe_id=shoe.pk, user=croupier, events=[
            services.TurnPass(), services.TurnOpen(seat=4, bank=D("500"),
                                                   player_card="no way")])
    assert err.value.field == "events[1].player_card"


def test_a_correction_keeps_who_sat_there(shoe, turn, croupier, pitboss):
    coup = services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=D("100"), seat=2, player_card="A1"),
                services.StakeInput(amount=D("100"), seat=3)]).coup
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=D("100"), seat=2, player_card="A1")])
    services.coup_correct(
        coup=coup, user=pitboss, reason="the banker's second card was a 9",
        punter=["2H", "3D"], banker=["8C", "9S"],
        stakes=[services.StakeInput(amount=D("100"), seat=2),
                services.StakeInput(amount=D("100"), seat=3, player_card="b2")])
    fixed = Coup.objects.get(shoe=shoe, seq=1, revision=2)
    assert [s.player_card for s in fixed.stakes.order_by("position")] == ["A1", "B2"]
    later = Coup.objects.filter(shoe=shoe, seq=2).order_by("-revision").first()
    assert [s.player_card for s in later.stakes.all()] == ["A1"]


def test_the_floors_coup_page_shows_the_cards(client, pitboss, croupier, shoe,
                                              session):
    services.banker_turn_open(session=session, user=croupier, seat=1,
                              bank=D("1000"), player_card="BANK9")
    coup = services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=D("100"), seat=2, player_card="P22")]).coup
    client.force_login(pitboss)
    page = client.get(f"/floor/coups/{coup.pk}/").content.decode()
    assert "BANK9" in page and "P22" in page and "Card no." in page
    page = client.get(f"/floor/coups/{coup.pk}/", HTTP_ACCEPT_LANGUAGE="fr")
    assert "N° de carte" in page.content.decode()


def test_tablet_bank_forms_take_a_card(client, croupier, shoe, session):
    client.force_login(croupier)
    url = f"/tablet/sessions/{session.pk}/turns/"
    r = client.post(url, {"seat": "2", "bank": "500.00", "player_card": "a-1"})
    assert r.status_code == 400 and "letters and digits only" in r.content.decode()
    assert not BankerTurn.objects.exists()
    r = client.post(url, {"seat": "2", "bank": "500.00", "player_card": "a1"})
    assert r.status_code == 302 and BankerTurn.objects.get().player_card == "A1"
    page = client.get(f"/tablet/sessions/{session.pk}/",
                      HTTP_ACCEPT_LANGUAGE="fr")
    assert page.status_code == 302  # shoe and bank open: the coup screen


@pytest.mark.postgres
def test_both_coup_paths_store_the_same_cards(manager, croupier, monkeypatch):
    def night(name):
        table = services.table_create(user=manager, name=name)
        session = services.session_open(table=table, user=croupier)
        shoe = services.shoe_open(session=session, user=croupier, burned=3)
        services.banker_turn_open(session=session, user=croupier, seat=1,
                                  bank=D("1000"), player_card="B1")
        for card in ("P1", "", "P3"):
            services.coup_record(
                shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"],
                banker=["8C", "TS"],
                stakes=[services.StakeInput(amount=D("100"), seat=2, player_card=card),
                        services.StakeInput(amount=D("50"), seat=3, player_card="Q")])
        return list(Stake.objects.filter(coup__shoe=shoe).order_by("id")
                    .values_list("position", "player_card"))

    assert ledger_pg.supported()
    fast = night("Fast")
    monkeypatch.setattr(ledger_pg, "supported", lambda: False)
    orm = night("ORM")
    assert fast == orm == [(0, "P1"), (1, "Q"), (0, ""), (1, "Q"), (0, "P3"), (1, "Q")]
    assert trail_verify().ok
