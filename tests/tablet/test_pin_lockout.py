"""The PIN lockout, one request at a time: per user name and device (client
address) as the sign-in lockout, a cool-off, reset by a right PIN, a password
sign-in or an administrator, and written to the trail. Under parallel
requests: test_pin_concurrency.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from .test_lock import set_pin

TABLET_A = {"REMOTE_ADDR": "10.0.0.1"}
TABLET_B = {"REMOTE_ADDR": "10.0.0.2"}


def unlock(client, pin, username="croupier2", **where):
    return client.post(
        "/tablet/unlock/", {"username": username, "pin": pin}, **(where or TABLET_A)
    )


def lock_out(client, username="croupier2", **where):
    for _ in range(5):
        assert unlock(client, "0000", username, **where).status_code == 400
    assert unlock(client, "2468", username, **where).status_code == 429


@pytest.fixture
def pin(croupier2):
    set_pin(croupier2, "2468")


def test_locked_on_one_device_only(client, pin):
    lock_out(client)
    r = unlock(client, "2468", **TABLET_B)
    assert r.status_code == 302  # the croupier unlocks another tablet


def test_a_forged_forwarded_for_is_the_same_device(client, pin):
    lock_out(client)
    r = client.post(
        "/tablet/unlock/",
        {"username": "croupier2", "pin": "2468"},
        HTTP_X_FORWARDED_FOR="10.9.9.9",
        **TABLET_A,
    )
    assert r.status_code == 429


def test_unknown_names_are_counted_too(client, pin):
    for _ in range(5):
        assert unlock(client, "1234", "nobody").status_code == 400
    assert unlock(client, "1234", "nobody").status_code == 429
    assert unlock(client, "2468").status_code == 302  # another name: untouched


def test_the_cool_off_ends_the_lockout(client, pin, settings):
    from tables.tablet.models import PinAttempts

    lock_out(client)
    PinAttempts.objects.update(
        last_at=PinAttempts.objects.get().last_at
        - settings.AXES_COOLOFF_TIME
        - timedelta(seconds=1)
    )
    assert unlock(client, "2468").status_code == 302


def test_without_a_cool_off_it_waits_for_a_reset(client, pin, settings):
    settings.AXES_COOLOFF_TIME = None
    lock_out(client)
    page = unlock(client, "2468")
    assert b"sign in with your password" in page.content


def test_a_right_pin_gives_the_attempts_back(client, pin):
    for _ in range(4):
        assert unlock(client, "0000").status_code == 400
    assert unlock(client, "2468").status_code == 302
    client.logout()
    for _ in range(4):  # four more wrong ones are allowed again
        assert unlock(client, "0000").status_code == 400
    assert unlock(client, "2468").status_code == 302


def test_a_password_sign_in_on_that_device_resets_it(client, pin, croupier2):
    lock_out(client)
    r = client.post(
        "/accounts/login/",
        {"username": "croupier2", "password": "pw-croupier2"},
        **TABLET_A,
    )
    assert r.status_code == 302
    client.logout()
    assert unlock(client, "2468").status_code == 302


def test_the_lockout_is_in_the_trail_once(client, pin, croupier2):
    from casino.models import ChangeLog

    lock_out(client)
    unlock(client, "0000")  # refused while locked: not logged again
    rows = ChangeLog.objects.filter(action="tablet.pin.locked_out")
    assert rows.count() == 1
    row = rows.get()
    assert row.user is None and row.object_id == str(croupier2.pk)
    assert row.new["username"] == "croupier2" and row.new["address"] == "10.0.0.1"
    assert row.new["attempts"] == 5


def test_an_administrator_unlocks_in_the_admin(client, pin, admin_client):
    from casino.models import ChangeLog
    from tables.tablet.models import PinAttempts

    lock_out(client)
    row = PinAttempts.objects.get()
    r = admin_client.post(
        f"/admin/tablet/pinattempts/{row.pk}/delete/", {"post": "yes"}
    )
    assert r.status_code == 302
    assert not PinAttempts.objects.exists()
    reset = ChangeLog.objects.get(action="tablet.pin.reset")
    assert reset.old["username"] == "croupier2"
    assert unlock(client, "2468").status_code == 302
