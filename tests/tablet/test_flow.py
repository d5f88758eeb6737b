"""The croupier's night in a real browser: sign in, open the session, the
shoe and the bank, a banker win and a punter win, then the next bank."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import PORTRAIT, TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]


def deal(page, *codes):
    for code in codes:
        rank, suit = card(page, code)
        rank.click()
        suit.click()




def stake(page, seat: int, amount: str):
    page.get_by_role("button", name=f"Seat {seat}", exact=True).click()
    page.get_by_role("button", name=f"Amount {amount}", exact=True).click()


def test_sign_in_open_everything_and_record_two_coups(
    page, live_server, table, croupier, screenshot
):
    from tables.models import BankerTurn, Coup

    page.goto(live_server.url + "/")
    page.get_by_role("link", name="Croupier tablet: coup entry").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    screenshot("tablet-login-landscape")
    page.get_by_label("Username").fill("croupier1")
    page.get_by_label("Password").fill("pw-croupier1")
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("heading", name="Pick your table")).to_be_visible()
    screenshot("tablet-tables-landscape")
    page.get_by_role("button", name="Open a session at Table 1").click()

    expect(page.get_by_role("heading", name="Open a shoe")).to_be_visible()
    expect(page.get_by_label("Decks in the shoe")).to_have_value("6")
    page.get_by_label("Burned cards").fill("5")
    screenshot("tablet-shoe-landscape")
    page.get_by_role("button", name="Open the shoe").click()

    expect(page.get_by_role("heading", name="Open a bank")).to_be_visible()
    page.get_by_role("radio", name="Seat 1", exact=True).check()
    page.get_by_label("Bank", exact=True).fill("50")
    page.get_by_role("button", name="Open the bank").click()
    expect(page.get_by_role("alert")).to_contain_text("minimum banco")
    page.get_by_label("Bank", exact=True).fill("1000")
    screenshot("tablet-bank-landscape")
    page.get_by_role("button", name="Open the bank").click()

    # Coup entry. Seat 3 stakes 200, seat 5 stakes 500: covered 700, garage 300.
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    stake(page, 3, "200")
    stake(page, 5, "500")
    expect(page.locator("#coverage")).to_have_text(
        "Bank 1,000 · covered 700 · garage 300"
    )
    # Punter 2+3 = 5 stands (after "next card to banker"), banker 8+K = 8? No:
    # banker 4+3 = 7, stands; banker wins 7 to 5.
    deal(page, "2H", "4S", "3D", "3C")
    guidance = page.get_by_role("status", name="Guidance")
    expect(guidance).to_contain_text("Punter may choose")
    page.get_by_role("button", name="Next card to banker").click()
    expect(guidance).to_contain_text("Banker must stand")
    screenshot("tablet-coup-entry-landscape")
    page.get_by_role("button", name="Save coup").click()

    result = page.get_by_label("Last coup")
    recorded(page, 1)
    expect(result).to_contain_text("Coup 1 · Banker wins 7 to 5")
    # commission 5 % of 700 = 35; carried forward 700 + 700 - 35 = 1,365
    expect(result).to_contain_text("Commission35")
    expect(result).to_contain_text("Bank carried forward1,365")
    expect(result.get_by_role("list", name="Payouts")).to_contain_text("Seat 5−500")
    expect(result).to_contain_text("Cards left in the shoe303")
    screenshot("tablet-coup-result-landscape")

    coup = Coup.objects.get(seq=1)
    assert coup.outcome == "banker"
    assert coup.commission == Decimal("35.00")
    assert coup.bank_after == Decimal("1365.00")
    assert coup.idempotency_key and coup.entered_by == croupier
    assert list(coup.stakes.values_list("seat", "covered")) == [
        (3, Decimal("200.00")),
        (5, Decimal("500.00")),
    ]

    # Punter win: seat 4 banco solo on the 1,365 bank; punter 9 natural.
    expect(page.locator("#coverage")).to_contain_text("Bank 1,365")
    page.get_by_role("button", name="Seat 4", exact=True).click()
    page.get_by_role("button", name="Banco solo").click()
    deal(page, "9H", "2C", "KS", "5D")
    expect(guidance).to_contain_text("Natural 9 for the punter")
    page.keyboard.press("Enter")
    recorded(page, 2)
    expect(result).to_contain_text("Coup 2 · Punter wins 9 to 7")
    expect(result).to_contain_text("The bank is lost: the shoe passes to seat 2.")
    expect(result).to_contain_text("Bank carried forward0")
    coup2 = Coup.objects.get(seq=2)
    assert (coup2.outcome, coup2.bank_after, coup2.next_banker_seat) == (
        "punter",
        Decimal("0.00"),
        2,
    )
    assert BankerTurn.objects.get(number=1).end == "lost"
    expect(page.locator("#recent")).to_contain_text("9♥ K♠ · 2♣ 5♦")

    page.get_by_role("link", name="Open the next bank").click()
    lost = page.get_by_text("Seat 1 lost the bank: the shoe passes to seat 2.")
    expect(lost).to_be_visible()
    expect(page.get_by_role("radio", name="Seat 2", exact=True)).to_be_checked()


def test_coup_screen_fits_portrait(page, live_server, ready_turn, croupier, screenshot,
                                   signed_in):
    shoe, _turn = ready_turn
    signed_in(croupier)
    page.set_viewport_size(PORTRAIT)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 3, "200")
    deal(page, "2H", "4S", "3D")
    screenshot("tablet-coup-entry-portrait")
    save = page.get_by_role("button", name="Save coup")
    box = save.bounding_box()
    assert box["y"] + box["height"] <= PORTRAIT["height"], "Save is below the fold"
    for name in ["Ace", "10", "King", "Spades", "Clubs", "Undo"]:
        b = page.get_by_role("button", name=name, exact=True).bounding_box()
        assert b["width"] >= 48 and b["height"] >= 48, name
    assert re.search("Coup 1", page.locator("#bar-seq").inner_text())
