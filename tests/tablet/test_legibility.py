"""Legible in a dim room.

* Nothing a croupier reads on the tablet is smaller than 18 px: every text
  node shown on the coup screen (stakes in the seat bubbles, guidance, the
  result, recent coups) and on the other tablet screens, and every field's
  text, at both tablet sizes.
* A night theme (dark, high contrast), chosen in Settings, stored per user
  on the server: it changes the tablet and the floor pages, it follows the
  person to another device, and its body text is at least 7:1.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, recorded, sign_in_cookie

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

MIN_PX = 18.0
# Text a croupier does not need to read, allowed below 18 px. Empty: every
# visible text on the tablet is at least 18 px. (A selector here must say why.)
ALLOWED_SMALL: dict[str, str] = {}

SMALL_TEXT = """
([minPx, allowed]) => {
  const small = [];
  let checked = 0;
  const skip = '[hidden], dialog:not([open]), .sr-only, script, style, template, '
    + 'noscript';
  const report = (el, text, px) => {
    if (allowed.some((sel) => el.closest(sel))) return;
    small.push({text: text.slice(0, 40), px: px, in: el.tagName + '.' + el.className});
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    const el = n.parentElement;
    if (!text || !el || el.closest(skip)) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || Number(style.opacity) === 0) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    if (![...range.getClientRects()].some((r) => r.width > 0 && r.height > 0)) continue;
    checked++;
    const px = parseFloat(style.fontSize);
    if (px < minPx) report(el, text, px);
  }
  // What a field shows (its value, its placeholder) is not a text node.
  const fields = 'input:not([type=hidden]):not([type=radio]), select, textarea';
  for (const el of document.querySelectorAll(fields)) {
    if (el.closest(skip) || !el.getClientRects().length) continue;
    checked++;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < minPx) report(el, el.value || el.placeholder || el.name, px);
  }
  return {checked, small};
}
"""


def assert_legible(page, where: str) -> int:
    found = {}
    for orientation, size in (("landscape", LANDSCAPE), ("portrait", PORTRAIT)):
        page.set_viewport_size(size)
        found = page.evaluate(SMALL_TEXT, [MIN_PX, list(ALLOWED_SMALL)])
        assert found["checked"] >= 3, (where, orientation, found)
        assert not found["small"], (where, orientation, found["small"])
    page.set_viewport_size(LANDSCAPE)
    return found["checked"]


def test_the_walk_sees_small_text(page, live_server):
    """The check can fail: a 13 px stake in a seat bubble is caught."""
    page.goto(live_server.url + "/accounts/login/")
    page.evaluate(
        "document.querySelector('h1').insertAdjacentHTML('afterend',"
        " '<span style=\"font-size:13px\">200 · Banco</span>')"
    )
    found = page.evaluate(SMALL_TEXT, [MIN_PX, []])
    assert [s["text"] for s in found["small"]] == ["200 · Banco"]


def test_nothing_a_croupier_reads_is_below_18px(
    page, live_server, croupier, table, signed_in
):
    from tables import services
    from tables.tablet.models import profile_for

    profile = profile_for(croupier)
    profile.set_pin("2468")
    profile.save()
    page.goto(live_server.url + "/accounts/login/?next=/tablet/")
    assert_legible(page, "login")
    signed_in(croupier)
    page.goto(live_server.url + "/tablet/")
    assert_legible(page, "tables")

    session = services.session_open(table=table, user=croupier)
    page.goto(f"{live_server.url}/tablet/sessions/{session.pk}/")
    assert_legible(page, "open a shoe")
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
    assert_legible(page, "open a bank")
    page.get_by_role("button", name="Seat 2 takes the bank of 585.00").click()

    # Mid-coup: stakes in the seat bubbles (one declined in part), a standing
    # player, an announcement, cards, guidance, the coverage line.
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    for seat, amount in ((5, "200"), (7, "500")):
        page.get_by_role("button", name=f"Seat {seat}", exact=True).click()
        page.get_by_role("button", name=f"Amount {amount}", exact=True).click()
    page.get_by_role("button", name="Standing player").click()
    page.get_by_role("button", name="Amount 50", exact=True).click()
    page.get_by_role("button", name="Banco avec").click()
    for code in ("4H", "6S", "TD"):
        page.locator(f'.pad [data-rank="{code[0]}"]').click()
        page.locator(f'.pad [data-suit="{code[1]}"]').click()
    expect(page.locator(".seat-info").filter(has_text="200")).to_be_visible()
    checked = assert_legible(page, "coup entry")
    assert checked >= 40, checked
    for code in ("2C", "AS"):
        page.locator(f'.pad [data-rank="{code[0]}"]').click()
        page.locator(f'.pad [data-suit="{code[1]}"]').click()
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    expect(page.locator(".recent-item").first).to_be_visible()
    assert_legible(page, "coup result")

    page.get_by_role("button", name="Lock").click()
    expect(page.get_by_role("heading", name="Tablet locked")).to_be_visible()
    assert_legible(page, "locked")
    page.get_by_label("Your user name").fill("croupier1")
    page.get_by_label("PIN").fill("2468")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    page.goto(live_server.url + "/tablet/preferences/")
    assert_legible(page, "settings")


# ---- night theme ---------------------------------------------------------------

COLOURS = """
(selector) => {
  const el = document.querySelector(selector);
  const parse = (c) => c.match(/[\\d.]+/g).slice(0, 4).map(Number);
  // The background a text is drawn on: the first opaque one up the tree.
  let bg = null;
  for (let e = el; e; e = e.parentElement) {
    const c = parse(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] === 1) { bg = c.slice(0, 3); break; }
  }
  if (!bg) bg = [255, 255, 255];
  return {fg: parse(getComputedStyle(el).color).slice(0, 3), bg: bg,
          theme: document.documentElement.dataset.theme};
}
"""


def luminance(rgb) -> float:
    def channel(c):
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg, bg) -> float:
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_contrast_is_computed_right():
    assert contrast([0, 0, 0], [255, 255, 255]) == pytest.approx(21)
    assert contrast([119, 119, 119], [255, 255, 255]) == pytest.approx(4.48, abs=0.01)


def colours(page, selector):
    return page.evaluate(COLOURS, selector)


def choose(page, live_server, theme_name):
    page.goto(live_server.url + "/tablet/preferences/")
    page.get_by_role("radio", name=theme_name).check()
    page.get_by_role("button", name="Save the theme").click()
    expect(page.get_by_role("status")).to_have_text(
        "Theme saved: every page you open uses it."
    )
    expect(page.get_by_role("radio", name=theme_name)).to_be_checked()


def assert_night(page, day: dict) -> None:
    for selector, before in day.items():
        night = colours(page, selector)
        assert night["theme"] == "night", selector
        assert night["bg"] != before["bg"] and night["fg"] != before["fg"], selector
        assert luminance(night["bg"]) < luminance(night["fg"]), (selector, night)
        assert contrast(night["fg"], night["bg"]) >= 7, (selector, night)


def test_night_theme_on_the_tablet(browser, live_server, croupier, ready_turn):
    """The croupier picks Night in Settings: the coup screen turns dark, body
    text, guidance and the pad's keys at 7:1 or more."""
    shoe, _ = ready_turn
    ctx = browser.new_context(viewport=LANDSCAPE, has_touch=True)
    page = ctx.new_page()
    try:
        sign_in_cookie(page, live_server, croupier)
        coup_url = f"{live_server.url}/tablet/shoes/{shoe.pk}/"
        page.goto(coup_url)
        expect(page.get_by_role("button", name="Save coup")).to_be_visible()
        selectors = ("body", ".guidance", ".key", ".seat:not(.banker)", ".hand-name")
        day = {s: colours(page, s) for s in selectors}
        assert {c["theme"] for c in day.values()} == {"day"}

        choose(page, live_server, "Night (dark, high contrast)")
        expect(page.locator("html")).to_have_attribute("data-theme", "night")
        assert luminance(colours(page, "body")["bg"]) < 0.05
        page.goto(coup_url)
        expect(page.get_by_role("button", name="Save coup")).to_be_visible()
        assert_night(page, day)
    finally:
        page.goto("about:blank")
        ctx.close()


def test_night_theme_follows_the_pit_boss_to_the_floor(
    browser, live_server, pitboss, table
):
    """A pit boss picks Night in the tablet's Settings: the floor pages turn
    dark (7:1 or more); a new sign-in on another device finds it again (kept
    on the server, per user); Day brings the light back."""
    ctx = browser.new_context(viewport=LANDSCAPE)
    page = ctx.new_page()
    try:
        sign_in_cookie(page, live_server, pitboss)
        page.goto(live_server.url + "/floor/")
        selectors = ("body", "h1", "table.grid td")
        day = {s: colours(page, s) for s in selectors}
        assert {c["theme"] for c in day.values()} == {"day"}
        choose(page, live_server, "Night (dark, high contrast)")
        page.goto(live_server.url + "/floor/")
        assert_night(page, day)
        c = colours(page, "nav.subnav a:not(.on)")
        assert contrast(c["fg"], c["bg"]) >= 7, c
    finally:
        page.goto("about:blank")
        ctx.close()

    ctx = browser.new_context(viewport=PORTRAIT)
    page = ctx.new_page()
    try:
        page.goto(live_server.url + "/accounts/login/?next=/floor/")
        expect(page.locator("html")).to_have_attribute("data-theme", "day")
        page.get_by_label("Username").fill(pitboss.username)
        page.get_by_label("Password").fill(f"pw-{pitboss.username}")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/floor/")
        expect(page.locator("html")).to_have_attribute("data-theme", "night")
        assert_night(page, day)
        choose(page, live_server, "Day (light)")
        expect(page.locator("html")).to_have_attribute("data-theme", "day")
        page.goto(live_server.url + "/floor/")
        assert colours(page, "body") == day["body"]
    finally:
        page.goto("about:blank")
        ctx.close()
