"""Announcements on the table map, coverage shown live, suivi after a lost
banco, and the shoe running low."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]


def deal(page, *codes):
    for code in codes:
        rank, suit = card(page, code)
        rank.click()
        suit.click()


def seat(page, n):
    return page.get_by_role("button", name=f"Seat {n}", exact=True)


def only_seat_5_may_call_suivi(page):
    """Seat 5 went banco and lost: seat 6 is refused suivi, seat 5 takes the
    whole bank (1,000 doubled, less the 5 % levy)."""
    seat(page, 6).click()
    page.get_by_role("button", name="Suivi").click()
    expect(page.locator("#alert")).to_have_text("Only seat 5 may call suivi.")
    page.get_by_role("button", name="Remove stake").click()
    seat(page, 5).click()
    page.get_by_role("button", name="Suivi").click()
    expect(page.locator("#coverage")).to_have_text(
        "Bank 1,950 · covered 1,950 · garage 0")


def suivi_recorded_as_coup_2(page):
    from tables.models import Coup

    deal(page, "9H", "2S", "KD", "3C")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    stake = Coup.objects.get(seq=2).stakes.get()
    assert (stake.seat, stake.announcement, stake.amount) == (
        5, "suivi", Decimal("1950.00"))


def test_banco_solo_then_suivi(page, live_server, signed_in, ready_turn, croupier):

    shoe, _ = ready_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    coverage = page.locator("#coverage")
    seat(page, 3).click()
    page.get_by_role("button", name="Amount 200", exact=True).click()
    expect(coverage).to_have_text("Bank 1,000 · covered 200 · garage 800")
    seat(page, 5).click()
    page.get_by_role("button", name="Banco solo").click()
    # banco solo takes the whole bank first: seat 3 is declined
    expect(coverage).to_have_text("Bank 1,000 · covered 1,000 · garage 0")
    # a seat's bubble: one fact a line, a stake declined whole said once
    expect(page.locator("#seat-3-info")).to_have_text("declined 200")
    expect(page.locator(".seat[data-seat='3']")).to_have_class("seat staked declined")
    assert page.locator("#seat-5-info").text_content() == "1,000\nbanco solo"
    expect(page.locator("#selected-line")).to_contain_text("holds the punter hand")
    deal(page, "2H", "7S", "KD", "QC", "4C")  # banker 7 beats punter 6
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)

    # Seat 5 went banco and lost: only he may call suivi, for the whole bank.
    only_seat_5_may_call_suivi(page)
    suivi_recorded_as_coup_2(page)


def test_the_table_after_a_coup_holds_while_the_state_is_on_its_way(
    browser, live_server, ready_turn, croupier
):
    """The coup is recorded but the server's new state has not come back
    yet (a slow network): a croupier who taps at once acts on the table as
    that coup left it (suivi for seat 5, the bank doubled less the levy),
    not as it stood before (CI once caught "Nobody may call suivi now")."""

    from .conftest import LANDSCAPE, sign_in_cookie

    shoe, _ = ready_turn
    # Routing sees only what no service worker answers: keep it out here.
    ctx = browser.new_context(viewport=LANDSCAPE, service_workers="block")
    page = ctx.new_page()
    sign_in_cookie(page, live_server, croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    coverage = page.locator("#coverage")
    held = []
    page.route(f"**/tablet/shoes/{shoe.pk}/state/", lambda route: held.append(route))

    seat(page, 5).click()
    page.get_by_role("button", name="Banco solo").click()
    deal(page, "2H", "7S", "KD", "QC", "4C")  # banker 7 beats punter 6
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    page.wait_for_timeout(100)
    assert held, "the tablet asks the server's state after a coup"
    expect(coverage).to_have_text("Bank 1,950 · covered 0 · garage 1,950")
    only_seat_5_may_call_suivi(page)

    # the state arrives: the same table, now from the server
    with page.expect_response(f"**/tablet/shoes/{shoe.pk}/state/"):
        held.pop(0).continue_()
    page.unroute(f"**/tablet/shoes/{shoe.pk}/state/")  # and lets the rest go
    expect(coverage).to_have_text("Bank 1,950 · covered 1,950 · garage 0")
    suivi_recorded_as_coup_2(page)
    page.goto("about:blank")
    ctx.close()


def test_warning_when_the_shoe_runs_low(page, live_server, signed_in, table, croupier):
    from tables.services import banker_turn_open, session_open, shoe_open

    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, decks=1, burned=41)  # 11 left
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("500"))
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    seat(page, 2).click()
    deal(page, "2H", "7S", "KD", "QC", "4C")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    result = page.get_by_label("Last coup")
    expect(result).to_contain_text(
        "Only 6 cards left: no coup may begin with fewer than 7. Close the shoe."
    )
    expect(page.locator("#bar-left")).to_have_class("bar-item warn")
