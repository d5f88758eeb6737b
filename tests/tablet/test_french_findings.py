"""A French croupier reads every finding in French (issue 24, item 8): the
result after a flagged coup, and a bank mismatch that stops play (its stop
box, as the server words it), with no finding
code, English severity or English sentence on the screen.
Screenshot: var/screenshots/tablet-bank-mismatch-fr.png."""

from __future__ import annotations

import re
from decimal import Decimal

from playwright.sync_api import expect

from .conftest import TRANSACTIONAL, recorded
from .test_house_variants import open_house

pytestmark = TRANSACTIONAL

CODES = re.compile(r"\b(false_draw|house_choice|bank_mismatch|draw_after_natural|"
                   r"deal_below_seven|card_count_exceeded|shoe_count)\b")
ENGLISH = ("warning", "critical", "The croupier declared", "the tableau requires",
           "this house prescribes", "Banker stood", "Punter drew", "carried forward")


def english_left(text: str) -> list[str]:
    return CODES.findall(text) + [w for w in ENGLISH if w in text]


def test_a_french_croupier_reads_findings_and_a_bank_mismatch_in_french(
    page, live_server, signed_in, manager, croupier, as_user, screenshot
):
    from tables.models import Shoe
    from tables.services import banker_turn_open

    from .test_i18n import set_language

    set_language(croupier, "fr")
    shoe = open_house(manager, croupier, hold_on_error=True)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    # a flagged coup: the banker stands on 5 against a 6
    page.get_by_role("button", name="Place 3", exact=True).click()
    page.get_by_role("button", name="Montant 200", exact=True).click()
    pad = page.get_by_role("group", name="Clavier des cartes")
    for rank, suit in [("2", "Cœur"), ("5", "Pique"), ("Roi", "Carreau"),
                       ("Dame", "Trèfle"), ("6", "Trèfle")]:
        pad.get_by_role("button", name=rank, exact=True).click()
        pad.get_by_role("button", name=suit, exact=True).click()
    page.locator("#save").click()
    page.locator("#confirm-record").click()
    recorded(page, 1)
    result = page.locator("#result")
    expect(result).to_contain_text(
        "Le banquier est resté à 5 contre un 6 : le tableau impose de tirer.")
    assert not english_left(result.inner_text()), english_left(result.inner_text())

    # the punter won the bank; the next banker's coup, sent through the API
    # (the pit boss's accept path), declares a bank that is not the one
    # carried forward: critical, and play stops (hold on error)
    banker_turn_open(session=shoe.session, user=croupier, seat=4,
                     bank=Decimal("1000"))
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", {
        "punter": ["2S", "3H"], "banker": ["9C", "KD"], "declared_bank": "900.00",
        "stakes": [{"seat": 2, "amount": "100.00"}]}, format="json")
    assert r.status_code == 201, r.json()
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq == 2
    page.reload()
    stop = page.locator("#stopped")
    # amounts as the tablet writes them: "1 000", not "1000.00"
    expect(stop).to_contain_text(re.compile(
        r"Le croupier a annoncé une banque de 900 ; la banque reportée est de "
        r"1\s000\."))
    screenshot("tablet-bank-mismatch-fr")
    body = page.locator("body").inner_text()
    assert not english_left(body), english_left(body)
