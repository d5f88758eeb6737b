"""Browser fixtures for the tablet: signed-in pages at tablet sizes, a table
ready for coups, and a tap counter that counts real clicks."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from django.conf import settings

# Browser tests are transactional (the live server is another thread). Naming
# every app as available lets Django truncate with CASCADE and skip the
# post_migrate signal after each test: about a second and a half per test.
TRANSACTIONAL = pytest.mark.django_db(
    transaction=True, available_apps=list(settings.INSTALLED_APPS)
)
LANDSCAPE = {"width": 1280, "height": 800}
PORTRAIT = {"width": 800, "height": 1280}


@pytest.fixture(autouse=True)
def _quiet_page_before_flush(request):
    """A page left running keeps asking the server (state refresh, htmx
    strip, queue retries); a request still being answered while the test
    database is flushed can deadlock with the TRUNCATE. Stop the page first
    and give the live server a moment to finish."""
    wanted = "page" in request.fixturenames
    page = request.getfixturevalue("page") if wanted else None
    yield
    if page is not None and not page.is_closed():
        try:
            page.goto("about:blank")
        except Exception:  # noqa: BLE001 - best effort at teardown
            pass
        time.sleep(0.1)


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": LANDSCAPE, "has_touch": True}


def sign_in_cookie(page, live_server, user):
    """Sign in without the form (the flow test uses the real form)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"]
    page.context.add_cookies(
        [{"name": "sessionid", "value": cookie.value, "url": live_server.url}]
    )


@pytest.fixture
def signed_in(page, live_server):
    def _sign_in(user):
        sign_in_cookie(page, live_server, user)
        return page

    return _sign_in


@pytest.fixture
def ready_turn(table, croupier):
    """Session, shoe (5 burned) and a bank of 1,000 at seat 1."""
    from tables.services import banker_turn_open, session_open, shoe_open

    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    turn = banker_turn_open(
        session=session, user=croupier, seat=1, bank=Decimal("1000.00")
    )
    return shoe, turn


class Taps:
    """Counts clicks made through it; the page counts trusted pointer events
    too, so nothing can be clicked behind the test's back."""

    def __init__(self, page):
        self.page = page
        self.count = 0

    def __call__(self, locator):
        self.count += 1
        locator.click()

    def on_page(self) -> int:
        return self.page.evaluate("window.__taps || 0")


TAP_COUNTER = """
window.__taps = 0;
document.addEventListener('pointerdown', (e) => {
  if (e.isTrusted) window.__taps++;
}, true);
"""


@pytest.fixture
def taps(page):
    page.add_init_script(TAP_COUNTER)
    return Taps(page)


def recorded(page, seq: int) -> None:
    """Wait for the server's answer for coup ``seq`` in the result panel."""
    from playwright.sync_api import expect

    panel = page.locator(f'#result [data-state="recorded"][data-seq="{seq}"]')
    expect(panel).to_be_visible()


def card(page, code: str):
    """Click a card on the pad by accessible names: rank then suit."""
    from django.utils import translation

    from tables.tablet.coup import card_keys

    # The English names, whatever an earlier test left active in this thread
    # (a test client's French request does: the pad then reads "Cœur").
    with translation.override("en"):
        ranks, suits = card_keys()
    rank = next(r["name"] for r in ranks if r["code"] == code[0])
    suit = next(s["name"] for s in suits if s["code"] == code[1])
    pad = page.get_by_role("group", name="Card pad")
    return (
        pad.get_by_role("button", name=rank, exact=True),
        pad.get_by_role("button", name=suit, exact=True),
    )
