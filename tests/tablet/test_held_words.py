"""House rule hold on error: when a coup is refused because play is stopped
at the shoe, the tablet names what stopped it ("A false draw stops play at
this table (house rule).") rather than "a serious finding", in English and
in French: said by the page itself for a shoe it knows is held, and from
the server's refusal for one it learns is held only when it sends a coup."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tables.models import Coup

from .conftest import TRANSACTIONAL
from .test_house_variants import deal, open_house, stake

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

# punter 3+3 = 6 stands, banker 7+K = 7 must stand, but draws an ace
FALSE_DRAW = {"punter": ["3S", "3H"], "banker": ["7C", "KD", "AD"],
              "stakes": [{"seat": 3, "amount": "100.00"}]}
HELD = {
    "en": "A false draw stops play at this table (house rule). Play is stopped "
          "at this shoe since coup 1: call the pit boss, he releases the shoe "
          "before the next coup.",
    "fr": "Un faux tirage arrête le jeu à cette table (règle de la maison). Le "
          "jeu est arrêté à ce sabot depuis le coup 1 : appelez le chef de "
          "partie, il libère le sabot avant le coup suivant.",
}


def held_on_a_false_draw(manager, croupier, as_user):
    shoe = open_house(manager, croupier, hold_on_error=True,
                      hold_warnings=["false_draw"])
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", FALSE_DRAW,
                               format="json")
    assert r.status_code == 201, r.json()
    return shoe


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_a_held_shoe_s_refusal_names_the_finding(
    page, live_server, signed_in, manager, croupier, as_user, lang
):
    from tables.tablet.models import profile_for

    profile = profile_for(croupier)
    profile.language = lang
    profile.save()
    shoe = held_on_a_false_draw(manager, croupier, as_user)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.locator("#stopped")).to_be_visible()
    page.keyboard.press("Enter")  # Save is locked; the keypad's Enter asks
    expect(page.locator("#alert")).to_have_text(HELD[lang])
    assert Coup.objects.filter(shoe=shoe).count() == 1


def test_a_refusal_from_the_server_names_the_finding(
    page, live_server, signed_in, manager, croupier, as_user
):
    """The tablet still shows the shoe as it was when another tablet's false
    draw held it: its coup is refused by the server, which names the
    finding, and the tablet says it in words."""
    shoe = open_house(manager, croupier, hold_on_error=True,
                      hold_warnings=["false_draw"])
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.locator("#stopped")).to_be_hidden()
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", FALSE_DRAW,
                               format="json")
    assert r.status_code == 201, r.json()
    stake(page, 4, 100)
    deal(page, "7H", "9S", "KD", "QC")
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#conflict-text")).to_contain_text("The shoe moved on")
    page.get_by_role("button", name="Record mine after it").click()
    expect(page.locator("#conflict-text")).to_have_text(HELD["en"])
    expect(page.locator("#conflict-text")).to_have_attribute(
        "data-refusal", "refused_shoe_held")
    assert Coup.objects.filter(shoe=shoe).count() == 1
