"""House rule tie_rule "stay" (docs/rules.md, "Settlement"): after a tie the
stakes stay on the table for the next coup. The coup screen pre-fills them,
and they survive what a shift does to the screen: a reload, and an offline
spell in which the page comes back from the service worker's kept copy
(issue 24, item 7). The next coup is then saved with them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from tables.models import Coup

from .conftest import TRANSACTIONAL, recorded
from .test_house_variants import deal, open_house, stake
from .test_offline import wait_controlled

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

TIE = ("8H", "8S", "KD", "QC")  # 8 against 8: a tie of naturals
BANKER_WINS = ("7H", "9S", "KD", "QC")  # banker 9 against 7
API = "**/api/v1/shoes/*/coups/"


def seat(page, n):
    return page.get_by_role("button", name=f"Seat {n}", exact=True)


def stakes_on_table(page, *amounts):
    """The seats' stakes as the screen shows them, and what they cover."""
    for n, amount in amounts:
        expect(seat(page, n)).to_contain_text(amount)
    total = sum(int(a) for _, a in amounts)
    expect(page.locator("#coverage")).to_contain_text(f"covered {total}")


def test_a_tie_s_stakes_survive_a_reload(
    page, live_server, signed_in, manager, croupier
):
    shoe = open_house(manager, croupier, tie_rule="stay")
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 3, 200)
    deal(page, *TIE)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    stakes_on_table(page, (3, "200"))

    page.reload()
    expect(page.locator("#bar-seq")).to_have_text("Coup 2")
    stakes_on_table(page, (3, "200"))
    deal(page, *BANKER_WINS)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)
    coup = Coup.objects.get(shoe=shoe, seq=2)
    assert [(s.seat, s.amount) for s in coup.stakes.order_by("position")] == [
        (3, Decimal("200.00"))]


def test_a_tie_s_stakes_survive_an_offline_spell_and_are_played(
    page, live_server, signed_in, manager, croupier
):
    """The page the service worker keeps is the one loaded before the first
    tie: offline, a reload gets that older copy, and the state the page last
    heard from the server puts the stakes back. A tie entered offline keeps
    its stakes through a reload too, and the coup after it is saved with
    them once the Wi-Fi is back."""
    shoe = open_house(manager, croupier, tie_rule="stay")
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    wait_controlled(page)
    page.reload()  # the worker keeps this copy: no tie yet
    stake(page, 3, 100)
    stake(page, 5, 50)
    deal(page, *TIE)
    # the tie, recorded online; then the page asks for the shoe's state
    with page.expect_response("**/state/"):
        page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)

    page.context.set_offline(True)
    page.context.route(API, lambda route: route.abort("internetdisconnected"))
    page.reload()  # the kept copy, from before the tie
    expect(page.locator("#net")).to_contain_text("Offline")
    expect(page.locator("#bar-seq")).to_have_text("Coup 2")
    stakes_on_table(page, (3, "100"), (5, "50"))

    deal(page, *TIE)  # a second tie, offline: it waits on the tablet
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#net")).to_contain_text("1 coup waiting")
    stakes_on_table(page, (3, "100"), (5, "50"))
    page.reload()
    expect(page.locator("#net")).to_contain_text("1 coup waiting")
    expect(page.locator("#bar-seq")).to_have_text("Coup 3")
    stakes_on_table(page, (3, "100"), (5, "50"))

    deal(page, *BANKER_WINS)  # played with the tied stakes
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#net")).to_contain_text("2 coups waiting")
    assert Coup.objects.filter(shoe=shoe).count() <= 2  # see test_offline.py

    page.context.unroute(API)
    page.context.set_offline(False)
    expect(page.locator("#net")).to_have_text("Online", timeout=15000)
    coups = list(Coup.objects.filter(shoe=shoe).order_by("seq"))
    assert [c.outcome for c in coups] == ["tie", "tie", "banker"]
    for c in coups:
        assert [(s.seat, s.amount) for s in c.stakes.order_by("position")] == [
            (3, Decimal("100.00")), (5, Decimal("50.00"))], c.seq
    assert coups[2].bank_before == Decimal("150.00")
