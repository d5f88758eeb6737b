"""Issue 35, items 6 and 7: the recent coups keep room to be read, in both
orientations, and a stopped shoe's banner leaves "Next card" and Save on the
screen in landscape."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from playwright.sync_api import expect

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, sign_in_cookie
from .test_layout import in_viewport, no_scrolling

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

SIZES = [("landscape", LANDSCAPE), ("portrait", PORTRAIT)]
BANKER_NATURAL = {"punter": ["7H", "KD"], "banker": ["9S", "QC"]}


def shot(page, name):
    where = os.environ.get("SHOTS_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(where) / f"{name}.png"))


def post(croupier, shoe, body):
    c = Client()
    c.force_login(croupier)
    r = c.post(reverse("api-coup-record", args=[shoe.pk]), data=json.dumps(body),
               content_type="application/json")
    assert r.status_code == 201, r.content


@pytest.mark.parametrize("orientation,size", SIZES)
def test_the_recent_coups_have_room(
    browser, live_server, ready_turn, croupier, orientation, size
):
    shoe, _ = ready_turn
    for _ in range(4):
        post(croupier, shoe, {**BANKER_NATURAL,
                              "stakes": [{"seat": 3, "amount": "200.00"}]})
    ctx = browser.new_context(viewport=size, has_touch=True)
    page = ctx.new_page()
    try:
        sign_in_cookie(page, live_server, croupier)
        page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
        items = page.locator("#recent .recent-item")
        expect(items.first).to_be_visible()
        shot(page, f"recent-{orientation}")
        recent = page.locator("#recent").bounding_box()
        first = items.first.bounding_box()
        # two coups at least can be read without scrolling
        assert recent["height"] >= 2 * first["height"], (recent, first)
        in_viewport(page, page.locator("#recent"), size, "recent coups")
        in_viewport(page, page.get_by_role("button", name="Save coup"), size, "save")
        no_scrolling(page)
    finally:
        page.goto("about:blank")
        ctx.close()


@pytest.mark.parametrize("orientation,size", SIZES)
def test_a_stopped_shoe_leaves_the_actions_on_the_screen(
    browser, live_server, manager, croupier, orientation, size
):
    from decimal import Decimal

    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    table = table_create(user=manager, name="Held", seats=9,
                         minimum_banco=Decimal("100.00"))
    house_rules_change(table=table, user=manager, reason="stop at the mistake",
                       hold_on_error=True, hold_warnings=["false_draw"])
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("1000"))
    # the banker drew on 7: a false draw, which stops play at this table
    post(croupier, shoe, {"punter": ["3S", "3H"], "banker": ["7C", "KD", "AD"],
                          "stakes": [{"seat": 3, "amount": "200.00"}]})
    ctx = browser.new_context(viewport=size, has_touch=True)
    page = ctx.new_page()
    try:
        sign_in_cookie(page, live_server, croupier)
        page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
        expect(page.locator("#stopped")).to_be_visible()
        shot(page, f"stopped-{orientation}")
        for name in ("Next card to punter", "Next card to banker", "Save coup"):
            in_viewport(page, page.get_by_role("button", name=name), size, name)
        in_viewport(page, page.locator("#stopped"), size, "the stop")
        no_scrolling(page)
    finally:
        page.goto("about:blank")
        ctx.close()
