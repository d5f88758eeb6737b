"""Sign-in and sign-out under a held chain (issue 33, item 5; attack 8).

Someone holding the runtime role's credentials takes the change log's chain
lock in a session of his own and keeps it. An API sign-in must then answer
503 "nothing was written" and mean it: no token row, no trail row, and
`verify_trail` still passes (a token row written without its trail row would
be a false "inserted behind the application's back"). A page sign-in needs no
trail row at all: it signs in, and the trail still verifies. A token that
expired, refused under the held chain, is not deleted behind the trail's back
either."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client
from rest_framework.test import APIClient

from casino.models import ApiToken, ChangeLog
from casino.trail import trail_verify
from tests.insider.test_runtime_role import _chain_taken

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def api_sign_in(user):
    return APIClient().post(
        "/api/v1/auth/token/",
        {"username": user.username, "password": f"pw-{user.username}"},
        format="json", HTTP_X_DEVICE="tablet-1",
    )


def trail_holds() -> None:
    check = trail_verify(anchors=False)
    assert check.ok, check.problem


def test_an_api_sign_in_under_a_held_chain_writes_nothing(croupier):
    logged = ChangeLog.objects.count()
    with _chain_taken():
        r = api_sign_in(croupier)
        assert r.status_code == 503, r.content
        assert r.json()["code"] == "chain_held"
        assert "nothing was written" in r.json()["detail"]
        assert not ApiToken.objects.filter(user=croupier).exists()
        assert ChangeLog.objects.count() == logged
    trail_holds()  # no token "inserted behind the application's back"
    r = api_sign_in(croupier)  # released: the same sign-in goes through
    assert r.status_code == 200, r.content
    assert ApiToken.objects.filter(user=croupier).count() == 1
    assert ChangeLog.objects.filter(action="casino.apitoken.created").count() == 1
    trail_holds()


def test_an_expired_token_under_a_held_chain_is_refused_not_half_deleted(
    croupier, settings
):
    """Its deletion and its trail row go together: under the held chain the
    request is a 503 and the row stays (deleted at the next request)."""
    settings.API_TOKEN_TTL = timedelta(seconds=1)
    token = api_sign_in(croupier).json()["token"]
    time.sleep(1.2)
    tablet = APIClient()
    tablet.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    logged = ChangeLog.objects.count()
    with _chain_taken():
        r = tablet.get("/api/v1/tables/")
        assert r.status_code == 503, r.content
        assert ApiToken.objects.filter(user=croupier).count() == 1
        assert ChangeLog.objects.count() == logged
    trail_holds()
    assert tablet.get("/api/v1/tables/").status_code == 401
    assert not ApiToken.objects.filter(user=croupier).exists()
    assert ChangeLog.objects.filter(action="casino.apitoken.deleted").count() == 1
    trail_holds()


def test_a_page_sign_in_and_out_under_a_held_chain_need_no_trail_row(manager):
    """The browser's session is not in the trail: signing in and out works
    while the chain is held, and leaves the trail as it was."""
    logged = ChangeLog.objects.count()
    browser = Client()
    with _chain_taken():
        r = browser.post("/accounts/login/", {"username": manager.username,
                                              "password": f"pw-{manager.username}"})
        assert r.status_code == 302, r.content
        assert browser.get("/floor/").status_code == 200
        assert browser.post("/accounts/logout/").status_code == 200
        assert browser.get("/floor/").status_code == 302  # to the sign-in page
        assert ChangeLog.objects.count() == logged
    trail_holds()


def test_revoking_tokens_under_a_held_chain_deletes_none(croupier):
    token = api_sign_in(croupier).json()["token"]
    tablet = APIClient()
    tablet.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    with _chain_taken():
        r = tablet.post(f"/api/v1/users/{croupier.pk}/token/revoke/",
                        {"reason": "end of shift"}, format="json")
        assert r.status_code == 503, r.content
        assert ApiToken.objects.filter(user=croupier).count() == 1
    trail_holds()
    r = tablet.post(f"/api/v1/users/{croupier.pk}/token/revoke/",
                    {"reason": "end of shift"}, format="json")
    assert r.status_code == 200, r.content
    assert not ApiToken.objects.filter(user=croupier).exists()
    trail_holds()


# -- a bound row saved outside a transaction (casino/accounts.py _chain_first) --

NEW_PASSWORD = "Quatre-Vingt-Neuf-89"


def page_sign_in(user) -> Client:
    browser = Client()
    r = browser.post("/accounts/login/", {"username": user.username,
                                          "password": f"pw-{user.username}"})
    assert r.status_code == 302, r.content
    return browser


def test_a_password_change_under_a_held_chain_changes_nothing(croupier):
    """Django's password-change page saves the user outside a transaction:
    under a held chain it is refused before the row is written (503, the
    old password still works, the tablet's token stays, no false alarm)."""
    api_sign_in(croupier)
    browser = page_sign_in(croupier)
    body = {"old_password": f"pw-{croupier.username}",
            "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    logged = ChangeLog.objects.count()
    with _chain_taken():
        r = browser.post("/accounts/password_change/", body)
        assert r.status_code == 503, r.content
        assert "nothing was written" in r.content.decode()
        croupier.refresh_from_db()
        assert croupier.check_password(f"pw-{croupier.username}")
        assert ApiToken.objects.filter(user=croupier).count() == 1
        assert ChangeLog.objects.count() == logged
    trail_holds()
    r = browser.post("/accounts/password_change/", body)  # released: it goes
    assert r.status_code == 302, r.content
    croupier.refresh_from_db()
    assert croupier.check_password(NEW_PASSWORD)
    assert not ApiToken.objects.filter(user=croupier).exists()  # revoked
    trail_holds()


def test_a_pin_set_under_a_held_chain_changes_nothing(croupier):
    from tables.tablet.models import TabletProfile

    browser = page_sign_in(croupier)
    body = {"form": "pin", "password": f"pw-{croupier.username}",
            "pin": "48213957", "pin_again": "48213957"}
    with _chain_taken():
        r = browser.post("/tablet/preferences/", body)
        assert r.status_code == 503, r.content
        assert not TabletProfile.objects.filter(user=croupier).exists()
    trail_holds()
    assert browser.post("/tablet/preferences/", body).status_code == 200
    assert TabletProfile.objects.get(user=croupier).check_pin("48213957")
    trail_holds()
