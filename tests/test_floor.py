"""Sessions, shoes, banker turns and the suite (passing the bank), via the API."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tables import services
from tables.errors import Conflict, Forbidden, Invalid, NotFound
from tables.models import BankerTurn

D = Decimal


def post(client, url, body=None):
    return client.post(url, body or {}, format="json")


def win(shoe, user, amount="100"):
    return services.coup_record(
        shoe_id=shoe.pk,
        user=user,
        punter=["2H", "3D"],
        banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=D(amount), seat=2)],
    ).coup


def test_one_open_session_per_table(as_user, croupier, table):
    client = as_user(croupier)
    assert post(client, f"/api/v1/tables/{table.pk}/sessions/").status_code == 201
    r = post(client, f"/api/v1/tables/{table.pk}/sessions/")
    assert r.status_code == 409 and "table" in r.json()


def test_one_open_shoe_per_session(as_user, croupier, session):
    client = as_user(croupier)
    url = f"/api/v1/sessions/{session.pk}/shoes/"
    first = post(client, url, {"burned": 2})
    assert first.status_code == 201 and first.json()["decks"] == 6
    assert post(client, url).status_code == 409
    assert post(client, f"/api/v1/shoes/{first.json()['id']}/close/").status_code == 200
    second = post(client, url, {"decks": 8, "burned": 0})
    assert second.status_code == 201 and second.json()["number"] == 2
    assert second.json()["cards_left"] == 416
    assert post(client, url.replace("shoes", "shoes"), {"decks": 9}).status_code == 400


def test_turn_needs_the_minimum_banco_and_a_real_seat(session, croupier):
    with pytest.raises(Invalid) as err:
        services.banker_turn_open(
            session=session, user=croupier, seat=1, bank=D("99.99")
        )
    assert err.value.field == "bank"
    with pytest.raises(Invalid) as err:
        services.banker_turn_open(
            session=session, user=croupier, seat=10, bank=D("100")
        )
    assert err.value.field == "seat"
    services.banker_turn_open(session=session, user=croupier, seat=1, bank=D("100"))
    with pytest.raises(Conflict):
        services.banker_turn_open(session=session, user=croupier, seat=2, bank=D("100"))


def test_turn_opening_reads_the_session_under_its_lock(
    as_user, session, croupier, croupier2, pitboss
):
    """The session is named by id and read once, locked: no such session is
    a 404 naming it, another croupier's a 403, and nothing is written."""
    with pytest.raises(NotFound) as err:
        services.banker_turn_open(
            session=session.pk + 1000, user=croupier, seat=1, bank=D("100")
        )
    assert err.value.field == "session"
    with pytest.raises(Forbidden) as err:
        services.banker_turn_open(
            session=session.pk, user=croupier2, seat=1, bank=D("100")
        )
    assert err.value.field == "session"
    url = f"/api/v1/sessions/{session.pk}/turns/"
    r = post(as_user(croupier2), url, {"seat": 1, "bank": "100"})
    assert r.status_code == 403 and "session" in r.json()
    r = post(as_user(croupier), f"/api/v1/sessions/{session.pk + 1000}/turns/",
             {"seat": 1, "bank": "100"})
    assert r.status_code == 404 and "session" in r.json()
    assert not BankerTurn.objects.exists()
    # A pit boss may open it anywhere; the croupier who runs it, by id too.
    turn = services.banker_turn_open(
        session=session.pk, user=pitboss, seat=3, bank=D("100")
    )
    assert (turn.session_id, turn.number, turn.seat) == (session.pk, 1, 3)


def test_pass_offers_the_standing_bank_in_rotation(as_user, croupier, session, shoe):
    turn = services.banker_turn_open(
        session=session, user=croupier, seat=8, bank=D("1000")
    )
    client = as_user(croupier)
    assert post(client, f"/api/v1/turns/{turn.pk}/pass/").status_code == 409  # no coup
    win(shoe, croupier, "1000")  # bank 1000 + 1000 - 50 = 1950
    r = post(client, f"/api/v1/turns/{turn.pk}/pass/")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["offered_bank"] == "1950.00"
    assert body["offer_order"] == [9, 1, 2, 3, 4, 5, 6, 7]
    assert (body["turn"]["end"], body["turn"]["closing_amount"]) == (
        "passed",
        "1950.00",
    )
    # the taker opens with exactly the standing amount, even above the minimum rule
    taken = post(
        client, f"/api/v1/sessions/{session.pk}/turns/", {"seat": 9, "bank": "1950.00"}
    ).json()
    assert taken["took_passed_bank"] is True and taken["opening_bank"] == "1950.00"


def test_nobody_takes_the_pass_so_a_fresh_bank_opens(croupier, session, shoe):
    turn = services.banker_turn_open(
        session=session, user=croupier, seat=3, bank=D("500")
    )
    win(shoe, croupier)
    services.banker_turn_pass(turn=turn, user=croupier)
    fresh = services.banker_turn_open(
        session=session, user=croupier, seat=4, bank=D("200")
    )
    assert not fresh.took_passed_bank and fresh.bank == D("200")


def test_session_close_ends_the_turn_with_bank_and_garage(
    as_user, pitboss, croupier, session, shoe, turn
):
    win(shoe, croupier, "100")  # garage 900, bank 195
    assert (
        post(as_user(croupier), f"/api/v1/sessions/{session.pk}/close/").status_code
        == 403
    )
    r = post(as_user(pitboss), f"/api/v1/sessions/{session.pk}/close/")
    assert r.status_code == 200 and r.json()["closed_at"]
    turn = BankerTurn.objects.get(pk=turn.pk)
    assert (turn.end, turn.closing_amount) == ("session_closed", D("1095.00"))
    shoe.refresh_from_db()
    assert not shoe.is_open
    assert (
        post(as_user(pitboss), f"/api/v1/sessions/{session.pk}/close/").status_code
        == 409
    )


def test_tables_list_and_manager_only_creation(as_user, manager, croupier, table):
    r = post(as_user(croupier), "/api/v1/tables/", {"name": "X"})
    assert r.status_code == 403
    r = post(as_user(manager), "/api/v1/tables/", {"name": "Y", "decks": 9})
    assert r.status_code == 400 and "decks" in r.json()
    r = post(as_user(manager), "/api/v1/tables/", {"name": "Table 1"})
    assert r.status_code == 400 and "name" in r.json()
    r = post(
        as_user(manager), "/api/v1/tables/", {"name": "Z", "tableau_version": "nope"}
    )
    assert r.status_code == 400 and "tableau_version" in r.json()
    tables = as_user(croupier).get("/api/v1/tables/").json()
    assert [t["name"] for t in tables] == ["Table 1"]


def test_house_rules_are_versioned(manager, table):
    first = table.rules
    second = services.house_rules_change(
        table=table, user=manager, reason="8 decks", decks=8
    )
    assert (first.version, second.version, second.decks) == (1, 2, 8)
    assert second.commission_rate == first.commission_rate
    table.refresh_from_db()
    assert table.rules == second
    assert table.rule_versions.count() == 2
