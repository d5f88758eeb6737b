"""The lock screen: a relief croupier unlocks under his own name and the
coups that follow are his; wrong PINs are refused and limited."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import TRANSACTIONAL, card, recorded


def set_pin(user, pin):
    from tables.tablet.models import profile_for

    profile = profile_for(user)
    profile.set_pin(pin)
    profile.save()


def enter(page, seat, amount, codes):
    page.get_by_role("button", name=f"Seat {seat}", exact=True).click()
    page.get_by_role("button", name=f"Amount {amount}", exact=True).click()
    for code in codes:
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    page.get_by_role("button", name="Save coup").click()


@pytest.mark.browser
@TRANSACTIONAL
def test_relief_croupier_takes_over_with_his_pin(
    page, live_server, signed_in, ready_turn, croupier, croupier2, screenshot
):
    from casino.models import ChangeLog
    from tables.models import Coup, TableSession

    shoe, _ = ready_turn
    set_pin(croupier2, "2468")
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    enter(page, 3, "100", ("7H", "9S", "KD", "QC"))
    recorded(page, 1)

    page.get_by_role("button", name="Lock").click()
    expect(page.get_by_role("heading", name="Tablet locked")).to_be_visible()
    expect(page.get_by_text("Table: Table 1")).to_be_visible()
    screenshot("tablet-locked-landscape")
    # Nothing can be done from a locked tablet, whatever the page says.
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.get_by_role("heading", name="Tablet locked")).to_be_visible()

    page.get_by_label("Your user name").fill("croupier2")
    page.get_by_label("PIN").fill("1111")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("alert")).to_have_text("Unknown user name or wrong PIN.")
    page.get_by_label("Your user name").fill("croupier2")
    page.get_by_label("PIN").fill("2468")
    page.get_by_role("button", name="Unlock").click()

    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    expect(page.locator(".bar .who")).to_have_text("croupier2")
    enter(page, 5, "200", ("2H", "3S", "3D", "4C", "AH"))
    recorded(page, 2)
    by = dict(Coup.objects.values_list("seq", "entered_by__username"))
    assert by == {1: "croupier1", 2: "croupier2"}
    session = TableSession.objects.get()
    assert session.croupier == croupier2
    assert ChangeLog.objects.filter(
        action="tables.session.croupier_changed", user=croupier2
    ).exists()


@pytest.fixture
def client_at_lock(client, croupier, ready_turn):
    shoe, _ = ready_turn
    client.force_login(croupier)
    r = client.post(
        "/tablet/lock/",
        {"next": f"/tablet/shoes/{shoe.pk}/", "table": "Table 1",
         "session": str(shoe.session_id)},
    )
    assert r.status_code == 302 and r["Location"] == "/tablet/unlock/"
    return client, shoe


def test_locked_tablet_has_no_user_and_refuses_the_api(client_at_lock):
    client, shoe = client_at_lock
    r = client.post(
        f"/api/v1/shoes/{shoe.pk}/coups/",
        {"punter": ["2H", "3D"], "banker": ["8C", "TS"],
         "stakes": [{"seat": 2, "amount": "100"}]},
        content_type="application/json",
    )
    assert r.status_code in (401, 403)
    assert client.get("/tablet/").status_code == 302


def test_pin_attempts_are_limited(client_at_lock, croupier2):
    client, shoe = client_at_lock
    set_pin(croupier2, "2468")
    for _ in range(5):
        r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "0000"})
        assert r.status_code == 400
    r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "2468"})
    assert r.status_code == 429  # even the right PIN waits now
    assert b"Too many wrong PINs" in r.content


def test_unlock_needs_a_pin_and_a_coup_role(client_at_lock, pitboss, croupier2):
    client, shoe = client_at_lock
    r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "2468"})
    assert r.status_code == 400  # no PIN set yet
    set_pin(pitboss, "1357")
    r = client.post("/tablet/unlock/", {"username": "pitboss1", "pin": "1357"})
    assert r.status_code == 403
    set_pin(croupier2, "2468")
    r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "2468"})
    assert r.status_code == 302 and r["Location"] == f"/tablet/shoes/{shoe.pk}/"


def test_preferences_set_the_pin_with_the_password(client, croupier):
    from tables.tablet.models import TabletProfile

    client.force_login(croupier)
    r = client.post(
        "/tablet/preferences/",
        {"form": "pin", "password": "wrong", "pin": "1234", "pin_again": "1234"},
    )
    assert r.status_code == 400 and b"This is not your password." in r.content
    r = client.post(
        "/tablet/preferences/",
        {"form": "pin", "password": "pw-croupier1", "pin": "12a4",
         "pin_again": "12a4"},
    )
    assert r.status_code == 400 and b"A PIN is 4 to 8 digits." in r.content
    r = client.post(
        "/tablet/preferences/",
        {"form": "pin", "password": "pw-croupier1", "pin": "1234",
         "pin_again": "1234"},
    )
    assert r.status_code == 200
    profile = TabletProfile.objects.get(user=croupier)
    assert profile.check_pin("1234") and "1234" not in profile.pin_hash


def test_unlock_rejects_an_outside_next(client, croupier, croupier2):
    set_pin(croupier2, "2468")
    client.force_login(croupier)
    client.post("/tablet/lock/", {"next": "https://evil.example/x"})
    r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "2468"})
    assert r.status_code == 302 and r["Location"] == "/tablet/"


@pytest.mark.parametrize("bad", ["99999999999999999999999", "²", "x"])
def test_lock_with_a_broken_session_id_still_locks(client, croupier, bad):
    client.force_login(croupier)
    r = client.post("/tablet/lock/", {"next": "/tablet/", "session": bad})
    assert r.status_code == 302 and r["Location"] == "/tablet/unlock/"
    assert client.get("/tablet/unlock/").status_code == 200
