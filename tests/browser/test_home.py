"""The smallest real-browser check: the front door renders in Chromium."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_home_page_lists_tables(page, live_server, table, screenshot):
    page.goto(live_server.url + "/")
    assert page.get_by_role("heading", name="Tables").is_visible()
    assert page.get_by_role("cell", name="Table 1").is_visible()
    screenshot("home")
