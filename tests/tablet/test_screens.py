"""Every main screen at both tablet sizes: a screenshot for people to look
at (var/screenshots/), every control named for assistive technology and
the tests, every touch target at least 48 px."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from playwright.sync_api import expect

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, recorded, sign_in_cookie

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

CONTROLS = (
    "button:not([hidden] *), a.btn, input:not([type=hidden]), select, "
    ".seat-choice span"
)
SMALL = """
(selector) => {
  const shown = [...document.querySelectorAll(selector)].filter(
    (el) => el.offsetParent !== null && !el.closest('[hidden], dialog:not([open])'));
  const small = shown
    .map((el) => {
      const r = el.getBoundingClientRect();
      return {what: el.outerHTML.slice(0, 90), w: r.width, h: r.height};
    })
    // a radio is a transparent layer over its 48 px label (checked below)
    .filter((r) => (r.w < 48 || r.h < 48) && !r.what.startsWith('<input type="radio"'));
  return {checked: shown.length, small: small};
}
"""
UNNAMED = re.compile(
    r"^\s*- (button|textbox|spinbutton|combobox|radio|checkbox|link)"
    r"(?: \[[^\]]*\])?:?$",
    re.M,
)


COMBOS = [("en", "day"), ("en", "night"), ("fr", "day"), ("fr", "night")]


def check(page, name: str, screenshot, suffix: str):
    """Both tablet sizes of the screen as it stands, then back to landscape."""
    page.wait_for_load_state("networkidle")
    for orientation, size in (("portrait", PORTRAIT), ("landscape", LANDSCAPE)):
        page.set_viewport_size(size)
        screenshot(f"tablet-{name}-{orientation}-{suffix}")
        found = page.evaluate(SMALL, CONTROLS)
        assert found["checked"] >= 2, name
        assert not found["small"], (name, orientation, found["small"])
    snapshot = page.locator("body").aria_snapshot()
    assert not UNNAMED.findall(snapshot), (name, snapshot)


def prefer(user, lang: str, theme: str):
    from tables.tablet.models import profile_for

    profile = profile_for(user)
    profile.language = lang
    profile.theme = theme
    profile.save()
    return profile


def tap_card(page, code: str):
    """A card by the pad's data attributes (the same in both languages)."""
    page.locator(f'.pad [data-rank="{code[0]}"]').click()
    page.locator(f'.pad [data-suit="{code[1]}"]').click()


@pytest.mark.parametrize("lang,theme", COMBOS)
def test_main_screens(page, live_server, croupier, table, screenshot, lang, theme):
    """Every tablet screen, both sizes, in each language and theme:
    tablet-<screen>-<orientation>-<lang>-<theme>.png. The sign-in page knows
    nobody yet (the browser's language, the day theme); the lock screen keeps
    the theme of the croupier who locked it."""
    from tables import services

    suffix = f"{lang}-{theme}"
    profile = prefer(croupier, lang, theme)
    profile.set_pin("2468")
    profile.save()
    page.set_extra_http_headers({"Accept-Language": lang})
    page.goto(live_server.url + "/accounts/login/?next=/tablet/")
    expect(page.locator("html")).to_have_attribute("lang", lang)
    if theme == "day":
        check(page, "login", screenshot, suffix)
    sign_in_cookie(page, live_server, croupier)
    page.goto(live_server.url + "/tablet/")
    expect(page.locator("html")).to_have_attribute("data-theme", theme)
    check(page, "tables", screenshot, suffix)

    session = services.session_open(table=table, user=croupier)
    page.goto(f"{live_server.url}/tablet/sessions/{session.pk}/")
    expect(page.locator("#shoe-h")).to_be_visible()
    check(page, "shoe", screenshot, suffix)

    shoe = services.shoe_open(session=session, user=croupier, burned=5)
    turn = services.banker_turn_open(
        session=session, user=croupier, seat=1, bank=Decimal("1000")
    )
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("300"), seat=4)],
    )
    services.banker_turn_pass(turn=turn, user=croupier)
    page.goto(f"{live_server.url}/tablet/sessions/{session.pk}/")
    expect(page.locator("#bank-h")).to_be_visible()
    check(page, "bank-passed", screenshot, suffix)
    page.locator('button.btn-seat[value="2"]').click()

    save = page.locator("#save")
    expect(save).to_be_visible()
    page.locator('.seat[data-seat="5"]').click()
    page.locator('.chip[data-amount="200.00"]').click()
    page.locator("#add-standing").click()
    page.locator('[data-announce="banco_avec"]').click()
    for code in ("4H", "6S", "TD"):
        tap_card(page, code)
    check(page, "coup-entry", screenshot, suffix)
    for code in ("2C", "AS"):
        tap_card(page, code)
    save.click()
    recorded(page, 2)
    check(page, "coup-result", screenshot, suffix)

    # Offline: the status label grows, nothing else moves (test_layout.py).
    page.context.set_offline(True)
    expect(page.locator("#net")).to_have_class("net net-off")
    check(page, "offline", screenshot, suffix)
    page.context.set_offline(False)
    expect(page.locator("#net")).to_have_class("net")

    # The bank lost: the result says who takes it, "Open the next bank" shows.
    page.locator('.seat[data-seat="3"]').click()
    page.locator('.chip[data-amount="500.00"]').click()
    for code in ("4H", "2C", "5S", "3D"):
        tap_card(page, code)
    save.click()
    recorded(page, 3)
    expect(page.locator('#result a.btn[href*="/sessions/"]')).to_be_visible()
    check(page, "bank-lost", screenshot, suffix)

    page.locator(".bar [data-lock-form] button").click()
    page.wait_for_url("**/unlock/")
    expect(page.locator("html")).to_have_attribute("data-theme", theme)
    check(page, "locked", screenshot, suffix)
    page.locator('input[name="username"]').fill("croupier1")
    page.locator('input[name="pin"]').fill("2468")
    page.locator("form.form-grid button[type=submit]").click()
    page.wait_for_url(lambda url: "/unlock/" not in url)
    page.goto(live_server.url + "/tablet/preferences/")
    check(page, "settings", screenshot, suffix)


FLOOR = LANDSCAPE


def test_floor_and_reports_pages(
    page, live_server, croupier, pitboss, manager, screenshot
):
    """The pit boss's and the manager's pages at 1280x800 (the floor in
    portrait too), in each language and theme: floor-*, queue-*, flag-*,
    coup-*, correction-*, session-*, stats-*, reports-*.png. One data set,
    one page per role, the preference changed between rounds."""
    from audit.models import Flag
    from audit.services import flags_sync
    from tables.models import TableSession
    from tables.simulation import simulate

    simulate(user=croupier, tables=1, shoes=1, seed=5, false_draw_rate=0.08,
             table_prefix="Salon Rouge")
    flags_sync()
    flag = Flag.objects.filter(code="false_draw").order_by("pk").first()
    assert flag is not None
    coup = flag.coup
    session = TableSession.objects.get()

    page.set_viewport_size(FLOOR)
    for lang, theme in COMBOS:
        suffix = f"{lang}-{theme}"
        prefer(pitboss, lang, theme)
        page.context.clear_cookies()
        sign_in_cookie(page, live_server, pitboss)
        shots = [
            ("floor", "/floor/"),
            ("queue", "/floor/queue/"),
            ("flag", f"/floor/flags/{flag.pk}/"),
            ("coup", f"/floor/coups/{coup.pk}/"),
            ("correction", f"/floor/coups/{coup.pk}/correct/"),
            ("session", f"/floor/sessions/{session.pk}/"),
            ("stats", "/floor/stats/"),
        ]
        for name, url in shots:
            response = page.goto(live_server.url + url)
            assert response.status == 200, (name, response.status)
            expect(page.locator("html")).to_have_attribute("data-theme", theme)
            expect(page.locator("html")).to_have_attribute("lang", lang)
            page.wait_for_load_state("networkidle")
            screenshot(f"{name}-landscape-{suffix}")
            if name == "floor":
                page.set_viewport_size(PORTRAIT)
                screenshot(f"{name}-portrait-{suffix}")
                page.set_viewport_size(FLOOR)

        prefer(manager, lang, theme)
        page.context.clear_cookies()
        sign_in_cookie(page, live_server, manager)
        response = page.goto(live_server.url + "/reports/")
        assert response.status == 200
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        page.wait_for_load_state("networkidle")
        screenshot(f"reports-landscape-{suffix}")
