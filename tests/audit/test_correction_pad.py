"""The correction page at a pit boss's 1280 x 800 screen (issue "a real
shift", item 12): no column of its tables is clipped (the stakes' Payout
column was), and the cards are entered by taps on the tablet's own card pad
(templates/tablet/_pad.html, static/tablet/pad.js), not typed as codes."""

from __future__ import annotations

import pytest
from django.test import Client

from tables.models import Coup
from tests.tablet.conftest import card

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLIPPED = """
() => {
  const out = [];
  const form = document.querySelector("form[data-correction]");
  const boxes = [form, ...form.querySelectorAll("table")].map(
    (t) => t === form ? form : t.parentElement);
  for (const box of boxes) {
    if (box.scrollWidth > box.clientWidth) {
      out.push({box: box.tagName + "." + box.className,
                scroll: box.scrollWidth, client: box.clientWidth});
    }
  }
  for (const th of form.querySelectorAll("th")) {
    const box = th.closest("table").parentElement.getBoundingClientRect();
    const r = th.getBoundingClientRect();
    if (r.right > box.right + 0.5 || r.right > window.innerWidth) {
      out.push({column: th.textContent.trim(), right: r.right, box: box.right});
    }
  }
  return out;
}
"""


def sign_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


def test_a_correction_by_taps_on_the_pad_with_no_column_clipped(
        page, live_server, played, pitboss, screenshot):
    false_draw = played[1]  # banker 5 stood where the tableau says draw
    sign_in(page, live_server, pitboss)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/floor/coups/{false_draw.pk}/correct/")
    assert page.get_by_role("columnheader", name="Payout").is_visible()
    assert page.evaluate(CLIPPED) == []

    # the banker's third card, by taps: its place, then rank and suit
    third = page.get_by_label("Banker 3")
    assert third.input_value() == ""
    third.click()
    rank, suit = card(page, "4H")
    rank.click()
    assert rank.get_attribute("aria-pressed") == "true"
    suit.click()
    assert third.input_value() == "4H"
    # a mis-tap: another place, retyped by taps, then put back
    first = page.get_by_label("Punter 1")
    first.click()
    for key in card(page, "KS"):
        key.click()
    assert first.input_value() == "KS"
    first.click()
    for key in card(page, "2H"):
        key.click()
    assert first.input_value() == "2H"
    screenshot("correction-pad")

    page.get_by_role("button", name="Preview the money difference").click()
    page.wait_for_load_state()
    assert page.get_by_role("region", name="Money difference").is_visible()
    assert page.evaluate(CLIPPED) == []
    screenshot("correction-pad-preview")
    page.get_by_label("Reason (required)").fill("third card missed on the tablet")
    page.get_by_role("button", name="Confirm the correction").click()
    page.wait_for_load_state()
    latest = Coup.objects.filter(shoe=false_draw.shoe, seq=false_draw.seq).order_by(
        "-revision").first()
    assert latest.revision == 2
    assert (latest.punter_cards, latest.banker_cards) == (
        ["2H", "2D", "6C"], ["3S", "2C", "4H"])
    assert latest.corrected_by == pitboss


def test_without_the_pad_script_the_fields_still_take_codes(page, live_server,
                                                            played, pitboss):
    """The pad helps; the form stays a form (no JavaScript: typed codes)."""
    page.route("**/pad.js", lambda route: route.abort())
    sign_in(page, live_server, pitboss)
    page.goto(f"{live_server.url}/floor/coups/{played[1].pk}/correct/")
    page.get_by_label("Banker 3").fill("4H")
    page.get_by_role("button", name="Preview the money difference").click()
    page.wait_for_load_state()
    assert page.get_by_role("region", name="Money difference").is_visible()
