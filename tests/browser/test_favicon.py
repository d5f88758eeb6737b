"""Issue 35: `/favicon.ico` was a 404 on every first load, the only console
error on normal pages. It is the house's icon now, for anyone."""

import pytest

from tests.tablet.conftest import sign_in_cookie


def test_the_icon_is_served_to_anyone(client, db):
    r = client.get("/favicon.ico")
    assert r.status_code == 200 and r["Content-Type"] == "image/png"
    assert r.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert "max-age" in r["Cache-Control"]
    assert client.post("/favicon.ico").status_code == 405


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_no_console_error_on_a_first_load(page, live_server, pitboss, table):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    failed = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(live_server.url + "/accounts/login/")
    sign_in_cookie(page, live_server, pitboss)
    page.goto(live_server.url + "/floor/")
    icon = page.request.get(live_server.url + "/favicon.ico")
    assert icon.status == 200 and icon.headers["content-type"] == "image/png"
    page.wait_for_timeout(300)
    assert not errors and not failed, (errors, failed)
