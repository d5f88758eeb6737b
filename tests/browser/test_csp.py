"""The Content-Security-Policy in a real browser: HTML that reaches a page
from outside (a forged floor copy, a name that slipped past the escaping)
runs nothing, and Chromium says so on its console, which is what every
browser test watches for (tests/conftest.py)."""

import pytest
from playwright.sync_api import Error

from tests.tablet.conftest import sign_in_cookie

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_script_that_reaches_the_floor_does_not_run(
        page, live_server, pitboss, table, request):
    sign_in_cookie(page, live_server, pitboss)
    page.goto(live_server.url + "/floor/")
    assert page.get_by_text("Table 1").first.is_visible()
    try:
        page.add_script_tag(content="window.ranInline = true")
    except Error:
        pass  # Chromium refused it
    page.evaluate("""() => {
        const d = document.createElement("div");
        d.innerHTML = '<img src="/static/none.png" onerror="window.ranHandler = true">';
        document.body.append(d);
    }""")
    page.wait_for_timeout(500)
    assert page.evaluate("[window.ranInline, window.ranHandler]") == [None, None]
    blocked = request.node.csp_blocked
    assert any("inline script" in m for m in blocked), blocked
    assert any("event handler" in m for m in blocked), blocked
    blocked.clear()  # blocked on purpose: the watch must not fail this test
