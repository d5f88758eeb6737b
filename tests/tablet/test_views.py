"""The tablet's screens through Django's test client: who may see them, what
the forms refuse, and the bank passed in rotation."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tables import services
from tables.models import BankerTurn, Shoe, TableSession

pytestmark = pytest.mark.django_db


def test_signed_out_goes_to_sign_in_and_outsiders_are_refused(client, outsider):
    r = client.get("/tablet/")
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")
    client.force_login(outsider)
    r = client.get("/tablet/")
    assert r.status_code == 403
    assert b"Your role does not allow this on the tablet" in r.content


def test_home_links_to_the_tablet(client, table):
    assert b'href="/tablet/"' in client.get("/").content


def test_open_then_rejoin_a_session(client, croupier, table):
    client.force_login(croupier)
    r = client.post(f"/tablet/tables/{table.pk}/session/")
    session = TableSession.objects.get()
    assert r["Location"] == f"/tablet/sessions/{session.pk}/"
    r = client.post(f"/tablet/tables/{table.pk}/session/")
    assert r["Location"] == f"/tablet/sessions/{session.pk}/"
    assert TableSession.objects.count() == 1
    page = client.get(f"/tablet/sessions/{session.pk}/").content.decode()
    assert "Open a shoe" in page


def test_shoe_form_refuses_what_the_shoe_cannot_hold(client, croupier, session):
    client.force_login(croupier)
    r = client.post(
        f"/tablet/sessions/{session.pk}/shoes/", {"decks": "1", "burned": "50"}
    )
    assert r.status_code == 400
    assert "At most 45 cards can be burned from 1 decks." in r.content.decode()
    r = client.post(f"/tablet/sessions/{session.pk}/shoes/", {"decks": "9"})
    assert r.status_code == 400 and not Shoe.objects.exists()
    r = client.post(
        f"/tablet/sessions/{session.pk}/shoes/", {"decks": "6", "burned": "4"}
    )
    assert r.status_code == 302
    assert Shoe.objects.get().cards_left == 308


def test_bank_form_enforces_the_minimum_banco(client, croupier, shoe):
    client.force_login(croupier)
    url = f"/tablet/sessions/{shoe.session_id}/turns/"
    r = client.post(url, {"seat": "2", "bank": "99.99"})
    assert r.status_code == 400
    assert "at least the minimum banco, 100.00" in r.content.decode()
    r = client.post(url, {"seat": "13", "bank": "500"})
    assert r.status_code == 400
    r = client.post(url, {"seat": "2", "bank": "500"})
    assert r.status_code == 302
    # the hub sends a ready table straight to coup entry
    r = client.get(r["Location"])
    assert r.status_code == 302 and r["Location"] == f"/tablet/shoes/{shoe.pk}/"
    assert client.get(r["Location"]).status_code == 200


def win_a_coup(turn, shoe, croupier):
    return services.coup_record(
        shoe_id=shoe.pk,
        user=croupier,
        punter=["2H", "3D"],
        banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("300"), seat=4)],
    ).coup


def test_a_passed_bank_is_offered_in_rotation_at_its_amount(
    client, croupier, turn, shoe
):
    coup = win_a_coup(turn, shoe, croupier)
    assert coup.bank_after == Decimal("585.00")
    client.force_login(croupier)
    r = client.post(f"/tablet/turns/{turn.pk}/pass/")
    hub = client.get(r["Location"]).content.decode()
    assert "Seat 1 passed the bank. Offer it in rotation at 585.00:" in hub
    order = [hub.index(f"Seat {n} takes the bank of 585.00") for n in range(2, 10)]
    assert order == sorted(order)  # 2, 3, ... 9: from the banker's right
    # the passer cannot take his own bank back at that amount
    client.post(f"/tablet/sessions/{shoe.session_id}/take-bank/", {"seat": "1"})
    assert not BankerTurn.objects.filter(closed_at__isnull=True).exists()
    r = client.post(f"/tablet/sessions/{shoe.session_id}/take-bank/", {"seat": "3"})
    new = BankerTurn.objects.get(closed_at__isnull=True)
    assert (new.seat, new.opening_bank, new.took_passed_bank) == (
        3,
        Decimal("585.00"),
        True,
    )


def test_after_a_lost_bank_the_next_seat_is_proposed(client, croupier, turn, shoe):
    services.coup_record(
        shoe_id=shoe.pk,
        user=croupier,
        punter=["9H", "KD"],
        banker=["2C", "3S"],
        stakes=[services.StakeInput(amount=Decimal("200"), seat=5)],
    )
    client.force_login(croupier)
    r = client.get(f"/tablet/shoes/{shoe.pk}/")
    assert r.status_code == 302  # no bank open: back to the hub
    hub = client.get(r["Location"]).content.decode()
    assert "Seat 1 lost the bank: the shoe passes to seat 2." in hub
    assert 'value="2" checked' in hub


def test_state_json_carries_the_tables_own_tableau(client, croupier, turn, shoe):
    from tables.models import TableauVersion

    client.force_login(croupier)
    state = client.get(f"/tablet/shoes/{shoe.pk}/state/").json()
    rows = TableauVersion.objects.get(version="chemmy-standard-1").rows
    assert state["tableau"] == {"version": "chemmy-standard-1", "rows": rows}
    assert state["shoe"]["next_seq"] == 1 and state["turn"]["bank"] == "1000.00"
    win_a_coup(turn, shoe, croupier)
    state = client.get(f"/tablet/shoes/{shoe.pk}/state/").json()
    assert state["last_coup"]["seq"] == 1
    assert state["last_coup"]["entered_by"] == "croupier1"
    page = client.get(f"/tablet/shoes/{shoe.pk}/").content.decode()
    start = page.index('<script id="tablet-state" type="application/json">')
    embedded = json.loads(page[start:].split(">", 1)[1].split("</script>", 1)[0])
    assert embedded["tableau"] == state["tableau"]
    assert embedded["urls"]["record"] == f"/api/v1/shoes/{shoe.pk}/coups/"


def test_service_worker_is_served_for_the_tablet_scope(client):
    r = client.get("/tablet/sw.js")
    assert r.status_code == 200
    assert r["Content-Type"].startswith("text/javascript")
    assert r["Service-Worker-Allowed"] == "/tablet/"
    assert b'if (req.method !== "GET") return;' in r.content


def test_another_croupier_takes_over_only_by_asking(client, croupier2, turn, shoe):
    client.force_login(croupier2)
    r = client.get(f"/tablet/shoes/{shoe.pk}/")
    assert r.status_code == 302
    page = client.get(r["Location"]).content.decode()
    assert "croupier1 runs this table" in page
    client.post(f"/tablet/tables/{shoe.session.table_id}/session/")
    assert TableSession.objects.get().croupier == croupier2
    assert client.get(f"/tablet/shoes/{shoe.pk}/").status_code == 200


def test_close_the_shoe_then_the_session(client, croupier, pitboss, turn, shoe):
    client.force_login(croupier)
    r = client.post(f"/tablet/shoes/{shoe.pk}/close/")
    assert r.status_code == 400  # the tablet asks for the cards counted left
    assert "Count the cards left in the shoe" in r.content.decode()
    assert Shoe.objects.get().is_open
    r = client.post(f"/tablet/shoes/{shoe.pk}/close/", {"cards_left": "307"})
    assert "Open a shoe" in client.get(r["Location"]).content.decode()
    assert Shoe.objects.get().left_counted == 307
    r = client.post(f"/tablet/sessions/{shoe.session_id}/close/")
    assert r.status_code == 403  # a croupier does not close the session
    client.force_login(pitboss)
    client.post(f"/tablet/sessions/{shoe.session_id}/close/")
    assert not TableSession.objects.get().is_open
