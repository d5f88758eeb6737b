"""Coup entry by touch and by keypad: the tap budget, the pre-save warning
for a coup the tableau disagrees with, and a USB keypad."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]


def open_screen(page, live_server, signed_in, user, shoe):
    signed_in(user)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()




def test_a_normal_coup_takes_at_most_14_taps(
    page, live_server, signed_in, ready_turn, croupier, taps, screenshot
):
    """Two stakes, five cards, saved: every tap is a real touch, counted."""
    from tables.models import Coup

    shoe, _ = ready_turn
    open_screen(page, live_server, signed_in, croupier, shoe)
    seat = lambda n: page.get_by_role("button", name=f"Seat {n}", exact=True)  # noqa: E731
    page.get_by_role("button", name="Save coup").focus()  # not a tap

    def tap(locator):
        taps.count += 1
        locator.tap()

    tap(seat(3))
    tap(page.get_by_role("button", name="Amount 200", exact=True))
    tap(seat(6))
    # punter 2 (must draw) draws a 4 -> 6; banker 7 stands: banker wins 7-6
    for code in ("2H", "7S", "KD", "QC", "4C"):
        rank, suit = card(page, code)
        tap(rank)
        tap(suit)
    tap(page.get_by_role("button", name="Save coup"))
    recorded(page, 1)
    screenshot("tablet-after-14-taps-landscape")

    assert taps.count <= 14, taps.count
    assert taps.on_page() == taps.count  # nothing clicked behind our back
    coup = Coup.objects.get()
    assert coup.punter_cards == ["2H", "KD", "4C"]
    assert coup.banker_cards == ["7S", "QC"]
    assert [(s.seat, s.amount) for s in coup.stakes.all()] == [
        (3, Decimal("200.00")),
        (6, Decimal("200.00")),
    ]
    assert coup.outcome == "banker" and coup.finding_count == 0


def test_false_draw_is_warned_then_recorded_as_it_happened(
    page, live_server, signed_in, ready_turn, croupier, screenshot
):
    from tables.models import Coup, Finding

    shoe, _ = ready_turn
    open_screen(page, live_server, signed_in, croupier, shoe)
    page.get_by_role("button", name="Seat 4", exact=True).click()
    page.get_by_role("button", name="Amount 100", exact=True).click()
    # punter 2 draws a 6; banker 5 stands: the tableau says draw
    for code in ("2H", "5S", "KD", "QC", "6C"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    page.get_by_role("button", name="Save coup").click()
    dialog = page.get_by_role("dialog", name="The tableau disagrees")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(
        "Banker stood on 5 against a 6: the tableau requires a draw. "
        "Record it as it happened?"
    )
    screenshot("tablet-false-draw-warning-landscape")

    # First the croupier looks again: nothing is written.
    dialog.get_by_role("button", name="Correct the cards").click()
    expect(dialog).to_be_hidden()
    assert not Coup.objects.exists()
    # It really happened that way: record it.
    page.get_by_role("button", name="Save coup").click()
    dialog.get_by_role("button", name="Record as it happened").click()
    recorded(page, 1)
    findings = page.get_by_role("list", name="Flagged for the pit boss")
    expect(findings).to_contain_text(
        "Banker stood on 5 against a 6: the tableau requires a draw."
    )
    screenshot("tablet-false-draw-recorded-landscape")
    f = Finding.objects.get()
    assert (f.code, f.side, f.coup.seq) == ("false_draw", "banker", 1)
    assert f.detail["required"] == "draw" and f.detail["punter_third"] == 6


def test_keypad_entry(page, live_server, signed_in, ready_turn, croupier):
    """9h, kd, 10s... and Enter, on the same screen; Backspace undoes."""
    from tables.models import Coup

    shoe, _ = ready_turn
    open_screen(page, live_server, signed_in, croupier, shoe)
    page.get_by_role("button", name="Seat 2", exact=True).click()
    page.get_by_role("button", name="Amount 500", exact=True).click()
    page.locator("body").click(position={"x": 5, "y": 790})  # focus off inputs
    page.keyboard.type("9h")
    page.keyboard.type("kd")
    page.keyboard.type("5c")  # a mistake...
    page.keyboard.press("Backspace")  # ...undone
    second = page.locator("#slot-p2")
    # A card is named in words for a screen reader, never by its code.
    expect(page.locator("#slot-b1")).to_have_attribute(
        "aria-label", "banker's first card: king of diamonds"
    )
    expect(second).not_to_have_attribute(
        "aria-label", "punter's second card: 5 of clubs"
    )
    page.keyboard.type("10s")
    expect(second).to_have_attribute(
        "aria-label", "punter's second card: 10 of spades"
    )
    page.keyboard.type("3c")
    expect(page.get_by_role("status", name="Guidance")).to_contain_text(
        "Natural 9 for the punter"
    )
    page.keyboard.press("Enter")
    recorded(page, 1)
    coup = Coup.objects.get()
    assert coup.punter_cards == ["9H", "TS"] and coup.banker_cards == ["KD", "3C"]
    assert coup.outcome == "punter" and coup.natural == "punter"
