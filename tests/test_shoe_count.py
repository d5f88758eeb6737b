"""The cards counted left at a shoe's close (docs/rules.md, "The shoe"):
stored on the shoe, a short or long shoe a certain, critical shoe_count
finding of the shoe, in the pit boss's queue from the close's own
transaction, bound to the trail (the autouse fixture verifies it)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit.models import Flag, FlagEvent
from audit.services.flags import decision_barred, flag_confirm
from casino.models import ChangeLog
from tables import services
from tables.errors import Invalid
from tables.models import Shoe, ShoeFinding

pytestmark = pytest.mark.django_db
D = Decimal


def deal(shoe, user, n=3):
    """n coups of 4 cards each (no third card: 9s and 8s are naturals)."""
    for _ in range(n):
        services.coup_record(
            shoe_id=shoe.pk, user=user, punter=["2H", "3D"], banker=["8C", "TS"],
            stakes=[services.StakeInput(amount=D("100"), seat=2)],
        )
    shoe.refresh_from_db()
    return shoe


def test_a_true_count_is_stored_and_raises_nothing(shoe, turn, croupier):
    shoe = deal(shoe, croupier)
    assert shoe.dealt == 12 and shoe.cards_left == 312 - 5 - 12
    closed = services.shoe_close(shoe=shoe, user=croupier, cards_left=295)
    assert closed.left_counted == 295 and not closed.is_open
    assert not ShoeFinding.objects.exists() and not Flag.objects.exists()
    log = ChangeLog.objects.filter(action="tables.shoe.closed").get()
    assert log.new["left_counted"] == 295 and log.new["findings"] == []


def test_a_short_shoe_is_a_critical_finding_and_a_flag(shoe, turn, croupier):
    shoe = deal(shoe, croupier)
    services.shoe_close(shoe=shoe, user=croupier, cards_left=291)  # four short
    finding = ShoeFinding.objects.get()
    assert (finding.shoe_id, finding.code, finding.severity) == (
        shoe.pk, "shoe_count", "critical")
    assert finding.detail == {
        "expected": 312, "dealt": 12, "burned": 5, "left": 291, "difference": -4}
    # In the pit boss's queue, raised by the close, about the shoe (no coup).
    flag = Flag.objects.get()
    assert (flag.kind, flag.code, flag.severity, flag.status) == (
        "shoe", "shoe_count", "critical", "open")
    assert flag.ident == f"h:{shoe.pk}:shoe_count"
    assert (flag.shoe_id, flag.session_id, flag.coup_id, flag.seq) == (
        shoe.pk, shoe.session_id, None, None)
    assert flag.raised_at == finding.created_at == Shoe.objects.get().closed_at
    event = FlagEvent.objects.get(flag=flag)
    assert event.action == "raised" and event.detail["difference"] == -4
    # The finding is bound to the close's log row with the shoe.
    log = ChangeLog.objects.filter(action="tables.shoe.closed").get()
    assert log.new["findings"] == ["shoe_count"]
    assert set(log.ledger) == {"tables.shoe", "tables.shoefinding"}
    assert list(log.ledger["tables.shoefinding"]) == [str(finding.pk)]


def test_a_long_shoe_too_and_four_eyes_on_its_flag(shoe, turn, croupier, pitboss):
    shoe = deal(shoe, croupier, n=1)
    services.shoe_close(shoe=shoe, user=croupier, cards_left=310)  # 7 more
    flag = Flag.objects.get()
    assert ShoeFinding.objects.get().detail["difference"] == 7
    assert croupier.pk in decision_barred(flag)  # he closed it and runs the table
    flag_confirm(flag=flag, user=pitboss, reason="cards added: video checked")
    flag.refresh_from_db()
    assert flag.status == "confirmed"


def test_no_count_no_check(shoe, turn, croupier):
    closed = services.shoe_close(shoe=shoe, user=croupier)
    assert closed.left_counted is None
    assert not ShoeFinding.objects.exists() and not Flag.objects.exists()
    assert "left_counted" not in ChangeLog.objects.filter(
        action="tables.shoe.closed").get().new


def test_closing_the_session_closes_the_shoe_without_a_count(shoe, turn, pitboss):
    services.session_close(session=shoe.session, user=pitboss)
    shoe.refresh_from_db()
    assert not shoe.is_open and shoe.left_counted is None


@pytest.mark.parametrize("bad", [-1, True, 2.0, "47", 10_000])
def test_the_service_refuses_a_count_that_is_not_one(shoe, croupier, bad):
    with pytest.raises(Invalid) as err:
        services.shoe_close(shoe=shoe, user=croupier, cards_left=bad)
    assert err.value.field == "cards_left"
    assert Shoe.objects.get().is_open


# -- the API --------------------------------------------------------------------

def test_api_close_with_a_count(as_user, croupier, shoe, turn):
    client = as_user(croupier)
    r = client.post(f"/api/v1/shoes/{shoe.pk}/close/", {"cards_left": 303},
                    format="json")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["left_counted"] == 303
    assert [f["code"] for f in body["findings"]] == ["shoe_count"]
    assert body["findings"][0]["detail"]["difference"] == -4
    assert Flag.objects.get().kind == "shoe"


def test_api_close_without_a_count(as_user, croupier, shoe):
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/close/", format="json")
    assert r.status_code == 200 and r.json()["left_counted"] is None
    assert r.json()["findings"] == []


@pytest.mark.parametrize("bad", ["47", 47.0, True, -1, 100_000, [47], {"n": 1}])
def test_api_refuses_a_loose_count_naming_the_field(as_user, croupier, shoe, bad):
    before = ChangeLog.objects.count()
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/close/",
                               {"cards_left": bad}, format="json")
    assert r.status_code == 400, r.content
    assert "cards_left" in r.json()
    assert Shoe.objects.get().is_open and ChangeLog.objects.count() == before


# -- the tablet and the floor ----------------------------------------------------

def test_tablet_close_asks_for_the_count(client, croupier, shoe, turn):
    client.force_login(croupier)
    url = f"/tablet/shoes/{shoe.pk}/close/"
    for bad in ("", "abc", "-3"):
        r = client.post(url, {"cards_left": bad})
        assert r.status_code == 400, bad
        assert Shoe.objects.get().is_open
    r = client.post(url, {"cards_left": "300"})
    assert r.status_code == 302
    assert Shoe.objects.get().left_counted == 300
    assert ShoeFinding.objects.get().detail["difference"] == -7


def test_tablet_close_in_french(client, croupier, shoe, turn):
    client.force_login(croupier)
    page = client.get(f"/tablet/sessions/{shoe.session_id}/",
                      HTTP_ACCEPT_LANGUAGE="fr")
    r = client.post(f"/tablet/shoes/{shoe.pk}/close/", HTTP_ACCEPT_LANGUAGE="fr")
    text = r.content.decode()
    assert r.status_code == 400
    assert "Cartes comptées restantes" in text
    assert "Comptez les cartes restant dans le sabot" in text
    assert page.status_code in (200, 302)


def test_the_floor_session_page_shows_the_count(client, pitboss, croupier, shoe, turn):
    shoe = deal(shoe, croupier, n=1)
    services.shoe_close(shoe=shoe, user=croupier, cards_left=299)
    client.force_login(pitboss)
    page = client.get(f"/floor/sessions/{shoe.session_id}/").content.decode()
    assert 'id="shoes"' in page
    assert "299" in page and "shoe count differs -4" in page


def test_the_pit_boss_sees_it_in_the_queue_and_decides_it(
    client, pitboss, croupier, shoe, turn
):
    shoe = deal(shoe, croupier, n=1)
    services.shoe_close(shoe=shoe, user=croupier, cards_left=299)
    flag = Flag.objects.get()
    client.force_login(pitboss)
    queue = client.get("/floor/queue/")
    assert queue.status_code == 200
    assert f"/floor/flags/{flag.pk}/" in queue.content.decode()
    page = client.get(f"/floor/flags/{flag.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "shoe_count" in text and "52 × decks" in text  # the rule quoted
    r = client.post(f"/floor/flags/{flag.pk}/confirm/",
                    {"reason": "four cards missing, shoe kept for the police"})
    assert r.status_code in (200, 302)
    flag.refresh_from_db()
    assert flag.status == "confirmed" and flag.decided_by == pitboss
