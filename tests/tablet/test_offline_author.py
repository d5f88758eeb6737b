"""Coups queued offline keep the croupier who entered them (issue 11, 12).

Croupier 1 enters two coups with the Wi-Fi down and is relieved: Lock,
croupier 2 unlocks with his PIN. His tablet does not send croupier 1's coups
(it says they wait for croupier 1), and his own coup queues behind them, in
dealing order. Croupier 1 unlocks again: his coups are stored as his, and now
croupier 2's waits for him; a pit boss accepts it on his behalf, with a
reason, at the same tablet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from .conftest import LANDSCAPE, TRANSACTIONAL, sign_in_cookie
from .test_offline import enter

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
COUPS_API = "**/api/v1/shoes/*/coups/"
REASON = "croupier2 went on break before the Wi-Fi came back"


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def set_pin(user, pin):
    from tables.tablet.models import profile_for

    profile = profile_for(user)
    profile.set_pin(pin)
    profile.save()


def unlock(page, username, pin, signed_in):
    expect(page.get_by_role("heading", name="Tablet locked")).to_be_visible()
    page.get_by_label("Your user name").fill(username)
    page.get_by_label("PIN").fill(pin)
    signed_in["now"] = username
    page.get_by_role("button", name="Unlock").click()
    expect(page.locator(".bar .who")).to_have_text(username)


def lock_with_coups_waiting(page, n):
    """The first tap says the croupier's coups stay on the tablet under his
    name; the second locks."""
    page.get_by_role("button", name="Lock").click()
    waiting = "1 of your coups is" if n == 1 else f"{n} of your coups are"
    expect(page.locator("#alert")).to_contain_text(waiting + " not sent yet")
    page.get_by_role("button", name="Lock").click()


def test_queued_coups_wait_for_the_croupier_who_entered_them(
    browser, live_server, ready_turn, croupier, croupier2, pitboss
):
    from casino.models import ChangeLog
    from tables.models import Coup

    shoe, _ = ready_turn
    set_pin(croupier, "1357")
    set_pin(croupier2, "2468")
    # Routing sees only what no service worker answers: keep it out here.
    ctx = browser.new_context(viewport=LANDSCAPE, service_workers="block")
    page = ctx.new_page()
    signed_in = {"now": "croupier1"}
    posts = []  # every coup the page sent (or tried to), under whom

    def on_request(req):
        if req.method == "POST" and "/coups/" in req.url:
            posts.append(signed_in["now"])

    page.on("request", on_request)
    sign_in_cookie(page, live_server, croupier)
    url = f"{live_server.url}/tablet/shoes/{shoe.pk}/"
    page.goto(url)
    net = page.locator("#net")

    # Croupier 1, the Wi-Fi down: two coups on the tablet.
    ctx.set_offline(True)
    expect(net).to_contain_text("Offline")
    enter(page, 3, "200", ("7H", "9S", "KD", "QC"))
    enter(page, 5, "100", ("2H", "3S", "3D", "4C", "AH"))
    expect(net).to_contain_text("2 coups waiting")
    queue = page.evaluate("window.ChemmyTablet.queue()")
    assert [e["body"]["entered_by"] for e in queue] == [croupier.pk] * 2
    assert all(e["body"]["entered_at"] for e in queue)

    # He is relieved while the coups cannot reach the server (the Wi-Fi is
    # back for the lock, the coup endpoint is still cut).
    ctx.route(COUPS_API, lambda route: route.abort("internetdisconnected"))
    ctx.set_offline(False)
    lock_with_coups_waiting(page, 2)
    unlock(page, "croupier2", "2468", signed_in)

    # Croupier 2's tablet keeps them for croupier 1, and sends nothing.
    held = page.locator("#held")
    expect(held).to_contain_text(
        "Waiting for croupier1: 2 coups entered by croupier1 are kept on this "
        "tablet. They are sent when croupier1 unlocks it again, or a pit boss "
        "accepts them for croupier1."
    )
    ctx.unroute(COUPS_API)
    page.evaluate("window.ChemmyTablet.flush()")  # the network is back
    assert Coup.objects.count() == 0
    assert "croupier2" not in posts
    # The game goes on: his own coup queues behind them, in dealing order.
    expect(page.locator("#bar-seq")).to_have_text("Coup 3")
    enter(page, 6, "500", ("KS", "JH", "7C", "8D"))
    expect(net).to_contain_text("3 coups waiting")
    page.evaluate("window.ChemmyTablet.flush()")
    assert Coup.objects.count() == 0
    assert page.evaluate("window.ChemmyTablet.queue()")[2]["user"] == "croupier2"
    shot(page, "tablet-coups-held-for-their-croupier-landscape")

    # Croupier 1 unlocks again: his two coups are stored, as his.
    lock_with_coups_waiting(page, 1)
    unlock(page, "croupier1", "1357", signed_in)
    expect(net).to_contain_text("1 coup waiting")
    coups = list(Coup.objects.order_by("seq"))
    assert [(c.seq, c.entered_by.username) for c in coups] == [
        (1, "croupier1"),
        (2, "croupier1"),
    ]
    assert all(c.accepted_by is None for c in coups)
    assert "croupier2" not in posts

    # Now croupier 2's coup waits for him; the pit boss accepts it for him.
    expect(held).to_contain_text("Waiting for croupier2: 1 coup entered by croupier2")
    held.get_by_role("button", name="Pit boss: accept for croupier2").click()
    dialog = page.get_by_role("dialog", name="Accept on the croupier's behalf")
    expect(dialog).to_contain_text("1 coup entered by croupier2 at")
    dialog.get_by_label("Pit boss's user name").fill("pitboss1")
    dialog.get_by_label("Pit boss's password").fill("wrong")
    dialog.get_by_label("Reason").fill(REASON)
    shot(page, "tablet-pit-boss-accepts-for-a-croupier-landscape")
    dialog.get_by_role("button", name="Accept the coups").click()
    # the refusal in the croupier's words (static/tablet/refusals.js)
    expect(dialog.get_by_role("alert")).to_have_text(
        "Not accepted: Unknown user name or wrong password."
    )
    assert Coup.objects.count() == 2
    dialog.get_by_label("Pit boss's password").fill("pw-pitboss1")
    dialog.get_by_role("button", name="Accept the coups").click()
    expect(page.locator("#alert")).to_have_text(
        "1 coup of croupier2 accepted by pitboss1."
    )
    expect(net).to_have_text("Online")
    expect(held).to_be_hidden()
    third = Coup.objects.get(seq=3)
    assert third.entered_by == croupier2
    assert third.accepted_by == pitboss and third.accepted_reason == REASON
    assert third.punter_cards + third.banker_cards == ["KS", "7C", "JH", "8D"]
    row = ChangeLog.objects.get(action="tables.coup.recorded", object_id=third.pk)
    assert row.user == pitboss and row.reason == REASON
    assert page.evaluate("window.ChemmyTablet.queue().length") == 0
    page.goto("about:blank")
    ctx.close()
