"""Issue 35: a table with a maximum bank, and a refusal that shows the truth.

A bank of 2,110.50 at a table whose house maximum is 2,000 (docs/rules.md,
"Stakes and announcements": an announcement is worth the bank in play).
Banco solo, suivi, banco avec and banco deux are tapped on the tablet, filled
with the capped amount, and stored by the server with their announcement.

Then a coup the server refuses: one keyed before this change (a banco solo of
the whole 2,110.50, a punter win that loses the bank) waits in the tablet's
queue. After the refusal the screen is the server's table (bank, banker, no
provisional result), says what to do, takes no input, and the croupier
follows its advice to record the coup as the house rules have it; in French
the refusal names no code.

SHOTS_DIR=var/shots keeps the screenshots (both languages, both
orientations) for a person to look at.
"""

from __future__ import annotations

import os
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

BANKER_NATURAL = ("3H", "9S", "3D", "KC")  # punter 6, banker 9: nobody draws


def deal(page, *codes):
    for code in codes:
        rank, suit = card(page, code)
        rank.click()
        suit.click()


def seat(page, n):
    return page.get_by_role("button", name=f"Seat {n}", exact=True)


def set_amount(page, amount):
    page.get_by_label("Other amount").fill(amount)
    page.get_by_role("button", name="Set amount").click()


def shot(page, name):
    where = os.environ.get("SHOTS_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"))


@pytest.fixture
def capped_turn(manager, croupier):
    """Maximum bank 2,000; a bank of 2,110.50 opened at seat 4."""
    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    table = table_create(user=manager, name="Capped", seats=9,
                         minimum_banco=Decimal("100.00"))
    house_rules_change(table=table, user=manager, reason="a house maximum",
                       maximum_bank=Decimal("2000.00"))
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    banker_turn_open(session=session, user=croupier, seat=4, bank=Decimal("2110.50"))
    return shoe


def stored(seq):
    from tables.models import Coup

    coup = Coup.objects.get(seq=seq)
    stakes = [(s.seat, s.announcement, s.amount) for s in coup.stakes.order_by("pk")]
    return coup, stakes


def test_every_announcement_at_a_bank_above_the_maximum(
    page, live_server, signed_in, capped_turn, croupier
):
    shoe = capped_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    coverage = page.locator("#coverage")
    expect(coverage).to_have_text(
        "Bank 2,110.50 · in play 2,000 (the house maximum) · covered 0 · "
        "garage 2,110.50")

    # banco solo: the maximum, not the whole 2,110.50
    seat(page, 5).click()
    page.get_by_role("button", name="Banco solo").click()
    assert page.locator("#seat-5-info").text_content() == "2,000\nbanco solo"
    expect(coverage).to_have_text(
        "Bank 2,110.50 · in play 2,000 (the house maximum) · covered 2,000 · "
        "garage 110.50")
    deal(page, *BANKER_NATURAL)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    shot(page, "capped-en-landscape")
    coup, stakes = stored(1)
    assert stakes == [(5, "banco_solo", Decimal("2000.00"))]
    assert (coup.covered, coup.garage, coup.bank_after) == (
        Decimal("2000.00"), Decimal("110.50"), Decimal("3900.00"))

    # suivi: seat 5 went banco and lost; the bank (3,900) is capped again
    seat(page, 5).click()
    page.get_by_role("button", name="Suivi").click()
    assert page.locator("#seat-5-info").text_content() == "2,000\nsuivi"
    deal(page, *BANKER_NATURAL)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    assert stored(2)[1] == [(5, "suivi", Decimal("2000.00"))]

    # banco avec: half of the maximum; the table shares the other half
    seat(page, 6).click()
    page.get_by_role("button", name="Banco avec").click()
    seat(page, 7).click()
    set_amount(page, "1000")
    assert page.locator("#seat-6-info").text_content() == "1,000\nbanco avec"
    deal(page, *BANKER_NATURAL)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 3)
    assert stored(3)[1] == [(6, "banco_avec", Decimal("1000.00")),
                            (7, "none", Decimal("1000.00"))]

    # banco deux: seat 5 sets his share (the announcement stays), seat 8
    # takes the rest of the maximum
    seat(page, 5).click()
    page.get_by_role("button", name="Banco deux").click()
    set_amount(page, "1200")
    assert page.locator("#seat-5-info").text_content() == "1,200\nbanco deux"
    seat(page, 8).click()
    page.get_by_role("button", name="Banco deux").click()
    assert page.locator("#seat-8-info").text_content() == "800\nbanco deux"
    expect(coverage).to_have_text(
        "Bank 3,900 · in play 2,000 (the house maximum) · covered 2,000 · "
        "garage 1,900")
    deal(page, *BANKER_NATURAL)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 4)
    assert stored(4)[1] == [(5, "banco_deux", Decimal("1200.00")),
                            (8, "banco_deux", Decimal("800.00"))]


def queue_old_banco_solo(page, live_server, shoe, croupier):
    """The coup a tablet without the cap queued: a banco solo of the whole
    2,110.50, punter 9 against 7, its provisional result a lost bank."""
    entry = {
        "key": str(uuid.uuid4()),
        "shoe": shoe.pk,
        "url": reverse("api-coup-record", args=[shoe.pk]),
        "body": {
            "punter": ["4H", "5D"],
            "banker": ["7S", "KC"],
            "stakes": [{"amount": "2110.50", "announcement": "banco_solo", "seat": 5}],
            "expected_seq": 1,
            "entered_by": croupier.pk,
            "entered_at": "2026-01-01T20:00:00Z",
        },
        "at": "2026-01-01T20:00:00Z",
        "user": croupier.get_username(),
        "user_id": croupier.pk,
        "name": croupier.get_username(),
        "provisional": {
            "outcome": "punter", "punter_total": 9, "banker_total": 7,
            "bank_before": 211050, "covered": 211050, "garage": 0,
            "commission": 0, "bank_after": 0, "turn_ends": True, "suivi": None,
            "tied": None, "next_banker_seat": 5, "cards_left": 303,
            "stakes": [{"label": "Seat 5", "payout": 211050}], "findings": [],
            "holds": None, "hold_codes": None,
        },
    }
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    page.evaluate(
        "(e) => localStorage.setItem('chemmy.tablet.queue', JSON.stringify([e]))",
        entry)
    page.reload()


def screen_is_the_servers(page):
    """The bank, the banker and the shoe as the server holds them: no
    provisional result, no lost bank, no "No bank open"."""
    expect(page.locator("#result [data-state]")).to_have_count(0)
    expect(page.locator("#result")).not_to_contain_text("9")
    expect(page.locator("#result .lost")).to_have_count(0)
    expect(page.locator("#felt-bank")).to_have_text("")
    expect(page.locator(".seat[data-seat='4']")).to_have_class("seat banker")


def test_a_refused_coup_puts_the_screen_back_on_the_server(
    page, live_server, signed_in, capped_turn, croupier
):
    from tables.models import Coup

    shoe = capped_turn
    signed_in(croupier)
    queue_old_banco_solo(page, live_server, shoe, croupier)

    conflict = page.locator("#conflict")
    expect(conflict).to_be_visible()
    expect(page.locator("#conflict-text")).to_have_text(
        "Seat 5: banco solo takes the whole bank in play, 2,000 (the house "
        "maximum). Set the stake to 2,000 or cancel the announcement.")
    expect(page.locator("#conflict-coup")).to_have_text(
        "This coup was not recorded: the screen shows the table as the server "
        "holds it. Back to the pad to correct it, or discard it.")
    # no empty button in the box: the hidden "resend" takes no room
    expect(page.locator("#conflict-resend")).to_be_hidden()
    assert page.locator("#conflict-resend").bounding_box() is None
    screen_is_the_servers(page)
    expect(page.locator("#seat-4-info")).to_have_text("Banker · 2,110.50")
    expect(page.locator("#coverage")).to_have_text(
        "Bank 2,110.50 · in play 2,000 (the house maximum) · covered 0 · "
        "garage 2,110.50")
    expect(page.locator("#bar-seq")).to_have_text("Coup 1")
    shot(page, "refused-en-landscape")
    page.set_viewport_size(PORTRAIT)
    expect(page.locator("#conflict-text")).to_be_visible()
    shot(page, "refused-en-portrait")
    page.set_viewport_size(LANDSCAPE)

    # Input that would go nowhere is refused, and says why.
    rank, _suit = card(page, "9H")
    expect(rank).to_be_disabled()
    expect(page.get_by_role("button", name="Save coup")).to_be_disabled()
    expect(seat(page, 6)).to_be_disabled()
    page.keyboard.press("9")
    page.keyboard.press("Enter")
    expect(page.locator("#alert")).to_have_text(
        "The last coup was not recorded: answer the message first (back to the "
        "pad, or discard).")
    expect(page.locator("#slot-p1")).to_have_text("")
    assert not Coup.objects.exists()

    # Back to the pad: the coup as keyed, to be corrected, nothing provisional.
    page.get_by_role("button", name="Back to the pad").click()
    expect(conflict).to_be_hidden()
    screen_is_the_servers(page)
    assert page.locator("#seat-5-info").text_content() == (
        "2,110.50\nbanco solo\ndeclined 110.50")
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#alert")).to_have_text(
        "Seat 5: banco solo takes the whole bank in play, 2,000 (the house "
        "maximum). Set the stake to 2,000 or cancel the announcement.")
    # The advice can be followed: Set 2,000 keeps the announcement.
    set_amount(page, "2000")
    assert page.locator("#seat-5-info").text_content() == "2,000\nbanco solo"
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    coup, stakes = stored(1)
    assert stakes == [(5, "banco_solo", Decimal("2000.00"))]
    assert (coup.outcome, coup.garage) == ("punter", Decimal("110.50"))
    # now the bank is lost, and the screen says so
    expect(page.locator("#result .lost")).to_have_text(
        "The bank is lost: the shoe passes to seat 5.")
    assert page.evaluate("window.ChemmyTablet.queue().length") == 0


@pytest.mark.parametrize("size", ["landscape", "portrait"])
def test_a_refusal_in_french_names_no_code_and_discard_clears_it(
    page, live_server, signed_in, capped_turn, croupier, size
):
    from tables.tablet.models import profile_for

    profile = profile_for(croupier)
    profile.language = "fr"
    profile.save()
    page.set_viewport_size(LANDSCAPE if size == "landscape" else PORTRAIT)
    shoe = capped_turn
    signed_in(croupier)
    queue_old_banco_solo(page, live_server, shoe, croupier)
    text = page.locator("#conflict-text")
    expect(text).to_be_visible()
    said = text.text_content() + page.locator("#conflict").text_content()
    for code in ("banco_solo", "stakes[", "Serveur", "Server", "2110.50"):
        assert code not in said
    assert "(le maximum de la maison)" in said
    screen_is_the_servers(page)
    shot(page, f"refused-fr-{size}")

    page.get_by_role("button", name="Abandonner le mien").click()
    expect(page.locator("#conflict")).to_be_hidden()
    screen_is_the_servers(page)
    expect(page.locator("#result")).to_be_empty()
    assert page.evaluate("window.ChemmyTablet.queue().length") == 0
    # the pad takes cards again
    expect(page.locator(".pad [data-rank='9']")).to_be_enabled()
    page.locator(".seat[data-seat='5']").click()
    page.get_by_role("button", name="Banco solo").click()
    shot(page, f"capped-fr-{size}")
    # the coverage line's last line is in sight, not scrolled inside the
    # stakes column (French, both orientations)
    fits = page.evaluate("""() => {
      const col = document.querySelector('.col-stakes').getBoundingClientRect();
      const cov = document.getElementById('coverage').getBoundingClientRect();
      return [cov.bottom, col.bottom];
    }""")
    assert fits[0] <= fits[1] + 0.5, fits
    info = page.locator("#seat-5-info").text_content()
    assert info.replace("\u202f", " ").replace("\xa0", " ") == "2 000\nbanco solo"
