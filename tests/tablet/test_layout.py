"""What trips a croupier on a real shift: the layout.

* After a save, the result (commission, bank carried forward, next banker)
  and the way on ("Open the next bank" when the bank is lost) are on the
  screen without scrolling, in both orientations.
* The network dropping mid-coup moves nothing: the status label grows
  ("offline", coups waiting), the card pad stays exactly where the croupier's
  hand is, in both orientations, in English and in French (longer words).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, recorded, sign_in_cookie

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

SIZES = [("landscape", LANDSCAPE), ("portrait", PORTRAIT)]
# Punter 4+5 = natural 9 against the banker's 2+3: the bank is lost.
PUNTER_NATURAL = ("4H", "2C", "5S", "3D")
# Banker 9 natural against the punter's 7: the bank is carried forward.
BANKER_NATURAL = ("7H", "9S", "KD", "QC")

NO_SCROLL = """() => {
  const d = document.scrollingElement;
  return {sh: d.scrollHeight, ch: d.clientHeight, sw: d.scrollWidth, cw: d.clientWidth,
          y: window.scrollY};
}"""


def enter(page, seat, amount, codes, *, seat_word="Seat", amount_word="Amount"):
    page.get_by_role("button", name=f"{seat_word} {seat}", exact=True).click()
    page.get_by_role("button", name=f"{amount_word} {amount}", exact=True).click()
    deal(page, codes)


def deal(page, codes):
    """Cards by the pad's data attributes (the same in every language)."""
    for code in codes:
        page.locator(f'.pad [data-rank="{code[0]}"]').click()
        page.locator(f'.pad [data-suit="{code[1]}"]').click()


def in_viewport(page, locator, size, what):
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None, what
    assert box["x"] >= 0 and box["y"] >= 0, (what, box)
    assert box["x"] + box["width"] <= size["width"] + 0.5, (what, box, size)
    assert box["y"] + box["height"] <= size["height"] + 0.5, (what, box, size)


def no_scrolling(page):
    m = page.evaluate(NO_SCROLL)
    assert m["sh"] <= m["ch"] and m["sw"] <= m["cw"] and m["y"] == 0, m


@pytest.mark.parametrize("orientation,size", SIZES)
def test_result_and_the_way_on_need_no_scrolling(
    browser, live_server, ready_turn, croupier, orientation, size
):
    shoe, _ = ready_turn
    ctx = browser.new_context(viewport=size, has_touch=True)
    page = ctx.new_page()
    try:
        sign_in_cookie(page, live_server, croupier)
        page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
        expect(page.get_by_role("button", name="Save coup")).to_be_visible()
        no_scrolling(page)

        # The bank is carried forward: the result and the pad for the next coup.
        enter(page, 3, "200", BANKER_NATURAL)
        page.get_by_role("button", name="Save coup").click()
        recorded(page, 1)
        result = page.locator('#result [data-seq="1"]')
        in_viewport(page, result, size, "result")
        for line in ("Commission", "Bank carried forward"):
            in_viewport(page, result.get_by_text(line, exact=True), size, line)
        in_viewport(page, page.get_by_role("group", name="Card pad"), size, "pad")
        in_viewport(page, page.get_by_role("button", name="Save coup"), size, "save")
        no_scrolling(page)

        # The bank is lost: the only way on is "Open the next bank".
        enter(page, 3, "200", PUNTER_NATURAL)
        page.get_by_role("button", name="Save coup").click()
        recorded(page, 2)
        result = page.locator('#result [data-seq="2"]')
        in_viewport(page, result, size, "result")
        in_viewport(page, result.locator(".lost"), size, "who takes the bank next")
        way_on = page.get_by_role("link", name="Open the next bank")
        in_viewport(page, way_on, size, "Open the next bank")
        no_scrolling(page)
        # Nothing covers it: a tap there lands on it.
        box = way_on.bounding_box()
        hit = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).closest('a')?.textContent",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert hit == "Open the next bank"
    finally:
        page.goto("about:blank")
        ctx.close()


def box_of(page, selector):
    return page.locator(selector).bounding_box()


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("orientation,size", SIZES)
def test_the_pad_does_not_move_when_the_network_drops(
    browser, live_server, ready_turn, croupier, orientation, size, lang
):
    from tables.tablet.models import profile_for

    profile = profile_for(croupier)
    profile.language = lang
    profile.save()
    shoe, _ = ready_turn
    ctx = browser.new_context(viewport=size, has_touch=True, service_workers="block")
    page = ctx.new_page()
    words = {"en": ("Seat", "Amount"), "fr": ("Place", "Montant")}[lang]
    try:
        sign_in_cookie(page, live_server, croupier)
        page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
        expect(page.locator("html")).to_have_attribute("lang", lang)
        net = page.locator("#net")
        expect(net).not_to_have_class("net net-off")
        lock = page.locator(".bar [data-lock-form] button")
        # Mid-coup: a stake placed, two cards dealt.
        enter(page, 3, "200", BANKER_NATURAL[:2], seat_word=words[0],
              amount_word=words[1])
        pad, bar = box_of(page, ".pad"), box_of(page, ".bar")
        lock_box = lock.bounding_box()
        bar_bottom = bar["y"] + bar["height"]
        assert lock_box["y"] + lock_box["height"] <= bar_bottom, "Lock wraps"
        online_text = net.inner_text()

        ctx.set_offline(True)
        expect(net).to_have_class("net net-off")
        assert net.inner_text() != online_text
        assert box_of(page, ".pad") == pad
        assert box_of(page, ".bar") == bar
        assert lock.bounding_box() == lock_box

        # The coup saved offline: the label grows again (coups waiting, offline).
        deal(page, BANKER_NATURAL[2:])
        page.locator("#save").click()
        expect(net).to_have_class("net net-waiting net-off")
        assert box_of(page, ".pad") == pad
        assert box_of(page, ".bar") == bar
        assert lock.bounding_box() == lock_box
        # Still one row of controls in the bar (nothing pushed out of it).
        for el in page.locator(".bar > *:visible").all():
            b = el.bounding_box()
            assert b["y"] >= bar["y"]
            assert b["y"] + b["height"] <= bar["y"] + bar["height"] + 0.5

        ctx.set_offline(False)
        expect(net).to_have_class("net")
        assert box_of(page, ".pad") == pad
    finally:
        page.goto("about:blank")
        ctx.close()
