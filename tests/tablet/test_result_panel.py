"""The result panel after a coup: where the bank went (covered, garage, bank
carried forward) and the result in the one wording of tables.wording, the
same sentence the recent coups and the floor pages write."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation
from playwright.sync_api import expect

from tables.wording import result_text

from .conftest import TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]


@pytest.fixture
def bank_of_2000(table, croupier):
    from tables.services import banker_turn_open, session_open, shoe_open

    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("2000"))
    return shoe


def deal(page, *codes):
    for code in codes:
        rank, suit = card(page, code)
        rank.click()
        suit.click()


def test_the_garage_is_shown_after_a_banker_win(
    page, live_server, signed_in, bank_of_2000, croupier, screenshot
):
    """Bank 2,000, one stake of 500: the banker wins 500 less 25 commission;
    975 carried forward is not a loss, 1,500 went to the garage."""
    shoe = bank_of_2000
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    page.get_by_role("button", name="Seat 3", exact=True).click()
    page.get_by_role("button", name="Amount 500", exact=True).click()
    deal(page, "2H", "7S", "KD", "QC", "4C")  # punter 2 draws a 4: 6; banker 7
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    result = page.get_by_label("Last coup")

    def check():
        expect(result).to_contain_text("Coup 1 · Banker wins 7 to 6")
        expect(result).to_contain_text("Bank2,000")
        expect(result).to_contain_text("Covered (at risk)500")
        expect(result).to_contain_text("Garage (withdrawn by the banker)1,500")
        expect(result).to_contain_text("Commission25")
        expect(result).to_contain_text("Bank carried forward975")
        expect(result).to_contain_text(
            "The banker wins: 975 carried forward, plus his garage of 1,500: "
            "2,475 in all."
        )

    check()
    screenshot("tablet-result-garage-landscape")
    expect(page.locator("#recent")).to_contain_text("Banker wins 7 to 6")
    # after a reload the panel is built from the state's last coup: the same
    page.reload()
    check()


def test_a_lost_bank_keeps_its_garage_and_a_tie_leaves_the_stakes(
    page, live_server, signed_in, bank_of_2000, croupier
):
    shoe = bank_of_2000
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    result = page.get_by_label("Last coup")
    page.get_by_role("button", name="Seat 3", exact=True).click()
    page.get_by_role("button", name="Amount 500", exact=True).click()
    deal(page, "3H", "2S", "4D", "5C")  # 7 against 7: a tie, both stand
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    expect(result).to_contain_text("Coup 1 · Tie at 7")
    expect(result).to_contain_text("The stakes stay on the table for the next coup.")
    expect(result).to_contain_text(
        "The garage of 1,500 goes back to the banker: the bank stands at 500."
    )
    # the stake stayed: the punter wins the next one with a natural
    deal(page, "9H", "2S", "KD", "5C")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    expect(result).to_contain_text("Coup 2 · Punter wins 9 to 7")
    expect(result).to_contain_text("Garage (withdrawn by the banker)0")


JS_RESULTS = """
() => {
  const out = {};
  for (const o of ["banker", "punter", "tie"])
    for (let p = 0; p <= 9; p++)
      for (let b = 0; b <= 9; b++)
        out[o + p + b] = window.ChemmyTablet.resultText(o, p, b);
  return out;
}
"""


def python_results(lang: str) -> dict:
    with translation.override(lang):
        return {
            f"{o}{p}{b}": result_text(o, p, b)
            for o in ("banker", "punter", "tie")
            for p in range(10)
            for b in range(10)
        }


def test_the_script_words_results_as_the_server_does(
    page, live_server, signed_in, ready_turn, croupier
):
    from tables.tablet.models import profile_for

    shoe, _ = ready_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    page.wait_for_function("() => window.ChemmyTablet !== undefined", polling=100)
    assert page.evaluate(JS_RESULTS) == python_results("en")
    profile = profile_for(croupier)
    profile.language = "fr"
    profile.save()
    signed_in(croupier)  # the language goes into the session at sign-in
    page.reload()
    page.wait_for_function("() => window.ChemmyTablet !== undefined", polling=100)
    french = page.evaluate(JS_RESULTS)
    assert french == python_results("fr")
    assert french["banker78"] == "Le banquier gagne 8 à 7"
