"""The tablet's "Recent coups" after a pit boss's correction: the coup once,
at its latest revision, marked as corrected; cards written with the pad's
own labels (R, D, V in French) and named in words in the tooltip."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]


def deal_and_correct(shoe, croupier, pitboss):
    """Coup 1 entered at the table (banker's 8 keyed as a 9), then corrected
    by the pit boss: revision 2; revision 1 stays stored."""
    from tables import services
    from tables.models import Coup

    stakes = [services.StakeInput(amount=Decimal("100"), seat=3)]
    coup = services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["KS", "QH"], banker=["JD", "9C"],
        stakes=stakes, device="tablet-1",
    ).coup
    services.coup_correct(
        coup=coup, user=pitboss, reason="banker's second card mis-keyed",
        punter=["KS", "QH"], banker=["JD", "8C"], stakes=stakes,
    )
    assert Coup.objects.filter(shoe=shoe, seq=1).count() == 2


def set_language(user, language):
    from tables.tablet.models import profile_for

    profile = profile_for(user)
    profile.language = language
    profile.save()


def recent_items(page):
    strip = page.locator("#recent")
    expect(strip.locator(".recent-item").first).to_be_visible()
    return strip.locator(".recent-item")


def test_a_corrected_coup_shows_once_marked_corrected(
    page, live_server, signed_in, ready_turn, croupier, pitboss
):
    shoe, _ = ready_turn
    deal_and_correct(shoe, croupier, pitboss)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    items = recent_items(page)
    expect(items).to_have_count(1)
    item = items.first
    expect(item.locator(".r-seq")).to_have_text("1")
    # the latest revision: the banker's 8, not the 9 first keyed
    expect(item.locator(".r-cards")).to_have_text("K♠ Q♥ · J♦ 8♣")
    badge = item.locator(".r-corrected")
    expect(badge).to_have_text("corrected")
    expect(badge).to_have_attribute("title", "Revision 2: corrected by pitboss1")
    expect(item.locator(".r-cards")).to_have_attribute(
        "title",
        "Punter: king of spades, queen of hearts · "
        "Banker: jack of diamonds, 8 of clubs",
    )
    # The result panel shows the last coup as it stands, and says why.
    last = page.get_by_label("Last coup")
    expect(last.locator(".corrected")).to_have_text(
        "Revision 2: corrected by pitboss1"
    )

    # A coup entered after it: listed once too, and not marked.
    page.get_by_role("button", name="Seat 3", exact=True).click()
    page.get_by_role("button", name="Amount 200", exact=True).click()
    for code in ["TH", "2S", "6D", "5C"]:  # 6 and 7: both stand
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    expect(items).to_have_count(2)
    newest = items.first
    expect(newest.locator(".r-seq")).to_have_text("2")
    expect(newest.locator(".r-corrected")).to_have_count(0)
    expect(last.locator(".corrected")).to_have_count(0)  # coup 2 as recorded
    expect(newest.locator(".r-cards")).to_have_attribute(
        "title",
        "Punter: 10 of hearts, 6 of diamonds · Banker: 2 of spades, 5 of clubs",
    )
    expect(items.nth(1).locator(".r-corrected")).to_have_count(1)


def test_in_french_the_cards_read_as_on_the_pad(
    page, live_server, signed_in, ready_turn, croupier, pitboss
):
    shoe, _ = ready_turn
    deal_and_correct(shoe, croupier, pitboss)
    set_language(croupier, "fr")
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    items = recent_items(page)
    expect(items).to_have_count(1)
    item = items.first
    # R, D, V as on the pad's keys, never K, Q, J
    expect(item.locator(".r-cards")).to_have_text("R♠ D♥ · V♦ 8♣")
    pad = page.get_by_role("group", name="Clavier des cartes")
    for code, label in [("K", "R"), ("Q", "D"), ("J", "V")]:
        expect(pad.locator(f'[data-rank="{code}"]')).to_have_text(label)
    expect(item.locator(".r-corrected")).to_have_text("corrigé")
    expect(item.locator(".r-corrected")).to_have_attribute(
        "title", "Révision 2 : corrigé par pitboss1"
    )
    expect(item.locator(".r-cards")).to_have_attribute(
        "title",
        "Ponte : roi de pique, dame de cœur · Banquier : valet de carreau, 8 de trèfle",
    )
    expect(page.get_by_label("Dernier coup").locator(".corrected")).to_have_text(
        "Révision 2 : corrigé par pitboss1"
    )

    # A coup entered on the pad: the slots name the cards in words, the
    # strip writes them as the pad does.
    page.get_by_role("button", name="Place 3", exact=True).click()
    page.get_by_role("button", name="Montant 200", exact=True).click()
    # 7 against 7: both stand
    for rank, suit in [("Roi", "Cœur"), ("Valet", "Trèfle"), ("7", "Carreau"),
                       ("7", "Pique")]:
        pad.get_by_role("button", name=rank, exact=True).click()
        pad.get_by_role("button", name=suit, exact=True).click()
    expect(page.locator("#slot-p1")).to_have_attribute(
        "aria-label", re.compile(r": roi de cœur$")
    )
    expect(page.locator("#slot-b1")).to_have_attribute(
        "aria-label", re.compile(r": valet de trèfle$")
    )
    expect(page.locator("#slot-p1")).to_have_text("R♥")
    page.get_by_role("button", name="Enregistrer le coup").click()
    recorded(page, 2)
    expect(items).to_have_count(2)
    expect(items.first.locator(".r-cards")).to_have_text("R♥ 7♦ · V♣ 7♠")
    expect(items.first.locator(".r-corrected")).to_have_count(0)
