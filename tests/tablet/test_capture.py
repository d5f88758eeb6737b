"""Data capture on the tablet, in Chromium: a player's card number on the
selected stake and on the bank forms (optional: a coup without them keeps
its taps), and the cards counted left when the shoe closes (required)."""

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


def test_a_stakes_card_number_travels_with_the_coup(
    page, live_server, signed_in, ready_turn, croupier, screenshot
):
    from tables.models import Coup

    shoe, _ = ready_turn
    open_screen(page, live_server, signed_in, croupier, shoe)
    seat = lambda n: page.get_by_role("button", name=f"Seat {n}", exact=True)  # noqa: E731
    number = page.get_by_label("Player's card number (optional)")
    expect(number).to_be_disabled()  # no stake selected yet
    seat(3).click()
    page.get_by_role("button", name="Amount 200", exact=True).click()
    expect(number).to_be_enabled()
    number.fill("ab-12")
    number.blur()
    expect(number).to_have_value("AB12")  # letters and digits, upper case
    seat(6).click()
    expect(number).to_have_value("")  # seat 6 has none
    seat(3).click()
    expect(number).to_have_value("AB12")
    seat(6).click()
    for code in ("2H", "7S", "KD", "QC", "4C"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    screenshot("tablet-stake-card-number")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    coup = Coup.objects.get()
    assert [(s.seat, s.player_card) for s in coup.stakes.all()] == [
        (3, "AB12"), (6, "")]


def test_closing_the_shoe_asks_for_the_cards_left(
    page, live_server, signed_in, ready_turn, croupier, screenshot
):
    from audit.models import Flag
    from tables.models import Shoe, ShoeFinding

    shoe, _ = ready_turn
    open_screen(page, live_server, signed_in, croupier, shoe)
    close = page.get_by_role("button", name="Close the shoe")
    close.click()  # no count: the browser keeps the form
    count = page.get_by_label("Cards counted left")
    expect(count).to_be_focused()
    assert Shoe.objects.get().is_open
    count.fill("300")
    close.click()  # arms the confirmation
    page.get_by_role("button", name="Close this shoe?").click()
    expect(page.get_by_role("heading", name="Open a shoe")).to_be_visible()
    screenshot("tablet-shoe-closed-with-count")
    shoe = Shoe.objects.get()
    assert not shoe.is_open and shoe.left_counted == 300
    # 312 - 5 burned - 0 dealt = 307 expected: seven short, for the pit boss
    assert ShoeFinding.objects.get().detail["difference"] == -7
    assert Flag.objects.get().code == "shoe_count"


def test_the_bank_form_takes_the_bankers_card(
    page, live_server, signed_in, table, croupier
):
    from tables.models import BankerTurn
    from tables.services import session_open, shoe_open

    session = session_open(table=table, user=croupier)
    shoe_open(session=session, user=croupier, burned=5)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/sessions/{session.pk}/")
    expect(page.get_by_role("heading", name="Open a bank")).to_be_visible()
    page.get_by_role("radio", name="Seat 4", exact=True).check()
    page.get_by_label("Bank", exact=True).fill("1000")
    page.get_by_label("Player's card number (optional)").fill("vip 7")
    page.get_by_role("button", name="Open the bank").click()
    expect(page.get_by_role("alert").first).to_contain_text("letters and digits")
    page.get_by_label("Player's card number (optional)").fill("vip7")
    page.get_by_role("button", name="Open the bank").click()
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    turn = BankerTurn.objects.get()
    assert (turn.seat, turn.bank, turn.player_card) == (4, Decimal("1000.00"), "VIP7")
