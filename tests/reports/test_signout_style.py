"""The reports pages' "Sign out" looks like the floor's (issue "a real
shift", item 16): one style for the header's button, on every page."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PROPS = ("background-color", "color", "border-radius", "padding-top",
         "padding-left", "font-weight", "font-size", "border-top-style")


def look(page, url: str) -> dict:
    page.goto(url)
    button = page.locator("header form.signout button")
    assert button.is_visible()
    return button.evaluate(
        "(el, props) => Object.fromEntries(props.map("
        "p => [p, getComputedStyle(el).getPropertyValue(p)]))", list(PROPS))


def test_sign_out_is_styled_alike_on_reports_and_floor(page, live_server):
    manager = make_user("manager-look", "manager")
    client = Client()
    client.force_login(manager)
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    reports = look(page, live_server.url + "/reports/")
    floor = look(page, live_server.url + "/floor/")
    assert reports == floor
    # not the browser's grey default button
    assert reports["background-color"] not in ("rgb(239, 239, 239)",
                                                "rgb(240, 240, 240)")
    assert reports["border-radius"] != "0px"
