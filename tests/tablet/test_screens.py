"""Every main screen at both tablet sizes: a screenshot for people to look
at (var/screenshots/), every control named for assistive technology and
the tests, every touch target at least 48 px."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, card, recorded, sign_in_cookie

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

CONTROLS = (
    "button:not([hidden] *), a.btn, input:not([type=hidden]), select, "
    ".seat-choice span"
)
SMALL = """
(selector) => {
  const shown = [...document.querySelectorAll(selector)].filter(
    (el) => el.offsetParent !== null && !el.closest('[hidden], dialog:not([open])'));
  const small = shown
    .map((el) => {
      const r = el.getBoundingClientRect();
      return {what: el.outerHTML.slice(0, 90), w: r.width, h: r.height};
    })
    // a radio is a transparent layer over its 48 px label (checked below)
    .filter((r) => (r.w < 48 || r.h < 48) && !r.what.startsWith('<input type="radio"'));
  return {checked: shown.length, small: small};
}
"""
UNNAMED = re.compile(
    r"^\s*- (button|textbox|spinbutton|combobox|radio|checkbox|link)"
    r"(?: \[[^\]]*\])?:?$",
    re.M,
)


def check(page, name: str, screenshot):
    """Both tablet sizes of the screen as it stands, then back to landscape."""
    page.wait_for_load_state("networkidle")
    for orientation, size in (("portrait", PORTRAIT), ("landscape", LANDSCAPE)):
        page.set_viewport_size(size)
        screenshot(f"tablet-{name}-{orientation}")
        found = page.evaluate(SMALL, CONTROLS)
        assert found["checked"] >= 2, name
        assert not found["small"], (name, orientation, found["small"])
    snapshot = page.locator("body").aria_snapshot()
    assert not UNNAMED.findall(snapshot), (name, snapshot)


def test_main_screens(page, live_server, croupier, table, screenshot):
    from tables import services
    from tables.tablet.models import profile_for

    profile = profile_for(croupier)
    profile.set_pin("2468")
    profile.save()
    page.goto(live_server.url + "/accounts/login/?next=/tablet/")
    check(page, "login", screenshot)
    sign_in_cookie(page, live_server, croupier)
    page.goto(live_server.url + "/tablet/")
    check(page, "tables", screenshot)

    session = services.session_open(table=table, user=croupier)
    page.goto(f"{live_server.url}/tablet/sessions/{session.pk}/")
    expect(page.get_by_role("heading", name="Open a shoe")).to_be_visible()
    check(page, "shoe", screenshot)

    shoe = services.shoe_open(session=session, user=croupier, burned=5)
    turn = services.banker_turn_open(
        session=session, user=croupier, seat=1, bank=Decimal("1000")
    )
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("300"), seat=4)],
    )
    services.banker_turn_pass(turn=turn, user=croupier)
    page.goto(f"{live_server.url}/tablet/sessions/{session.pk}/")
    expect(page.get_by_role("heading", name="Open a bank")).to_be_visible()
    check(page, "bank-passed", screenshot)
    page.get_by_role("button", name="Seat 2 takes the bank of 585.00").click()

    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    page.get_by_role("button", name="Seat 5", exact=True).click()
    page.get_by_role("button", name="Amount 200", exact=True).click()
    page.get_by_role("button", name="Standing player").click()
    page.get_by_role("button", name="Banco avec").click()
    for code in ("4H", "6S", "TD"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    check(page, "coup-entry", screenshot)
    for code in ("2C", "AS"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    check(page, "coup-result", screenshot)

    page.get_by_role("button", name="Lock").click()
    expect(page.get_by_role("heading", name="Tablet locked")).to_be_visible()
    check(page, "locked", screenshot)
    page.get_by_label("Your user name").fill("croupier1")
    page.get_by_label("PIN").fill("2468")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    page.goto(live_server.url + "/tablet/preferences/")
    check(page, "settings", screenshot)
