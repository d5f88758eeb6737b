"""Reading the database gives no one's sign-in (issue 33, item 7; attack 10).

The insider holds the runtime role's credentials (on PostgreSQL the app's
connection in these tests is that role, tests/conftest.py): he reads
`django_session`, copies a manager's row under a key of his choosing with an
expiry in 2099, edits a row's data, and keeps a copy past the manager's
sign-out. None of it signs anybody in (casino/sessions.py): the stored key
is a digest of the cookie, the data is signed for that digest and carries
the session's creation time."""

from __future__ import annotations

import hashlib
import importlib
import time as real_time
from types import SimpleNamespace

from django.apps import apps
from django.conf import settings
from django.db import connection
from django.test import Client

from casino import sessions

FOREVER = "2099-12-31 00:00:00+00"
CHOSEN = "attackerchosenkey0123456789abcde"  # 32 characters, as Django's


def sign_in(user) -> Client:
    browser = Client()
    r = browser.post("/accounts/login/", {"username": user.username,
                                          "password": f"pw-{user.username}"})
    assert r.status_code == 302, r.content
    assert signed_in(browser)
    return browser


def cookie(browser: Client) -> str:
    return browser.cookies[settings.SESSION_COOKIE_NAME].value


def with_cookie(key: str) -> Client:
    browser = Client()
    browser.cookies[settings.SESSION_COOKIE_NAME] = key
    return browser


def signed_in(browser: Client) -> bool:
    """A page for anyone signed in and the API (session auth): both 200, or
    neither."""
    page = browser.get("/accounts/password_change/").status_code
    api = browser.get("/api/v1/tables/").status_code
    assert page in (200, 302) and api in (200, 401, 403), (page, api)
    assert (page == 200) == (api == 200), (page, api)
    return page == 200


def rows() -> list[tuple[str, str]]:
    """django_session as the runtime role reads it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT session_key, session_data FROM django_session")
        return list(cursor.fetchall())


def row_of(key: str) -> tuple[str, str]:
    [row] = [r for r in rows() if r[0] == sessions.stored_key(key)]
    return row


def insert(key: str, data: str, expire: str = FOREVER) -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO django_session (session_key, session_data, "
                       "expire_date) VALUES (%s, %s, %s)", [key, data, expire])


def sql(statement: str, params=()) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def test_the_stored_key_is_not_the_cookie(manager):
    key = cookie(sign_in(manager))
    stored = [k for k, _ in rows()]
    assert key not in stored
    assert not any(key in data for _, data in rows())
    assert stored == [hashlib.sha256(key.encode()).hexdigest()[:40]]
    # the digest sent back as a cookie is no session either
    assert not signed_in(with_cookie(stored[0]))


def test_a_row_copied_under_a_chosen_key_signs_nobody_in(manager):
    """Attack 10: the manager's data under a key the insider knows, as
    Django would store it (the key itself) and as this store would (its
    digest), expiring in 2099."""
    browser = sign_in(manager)
    _, data = row_of(cookie(browser))
    insert(CHOSEN, data)
    insert(sessions.stored_key(CHOSEN), data)
    thief = with_cookie(CHOSEN)
    assert not signed_in(thief)
    assert signed_in(browser)  # the manager himself is not disturbed


def test_data_changed_by_hand_is_refused(croupier, manager):
    """The croupier's row given the manager's data (signed, but for another
    key), or its own data with one character changed: signed out."""
    boss, mine = sign_in(manager), sign_in(croupier)
    _, boss_data = row_of(cookie(boss))
    sql("UPDATE django_session SET session_data = %s WHERE session_key = %s",
        [boss_data, sessions.stored_key(cookie(mine))])
    assert not signed_in(mine)
    again = sign_in(croupier)
    stored, data = row_of(cookie(again))
    flipped = data[:10] + ("A" if data[10] != "A" else "B") + data[11:]
    sql("UPDATE django_session SET session_data = %s WHERE session_key = %s",
        [flipped, stored])
    assert not signed_in(again)


def test_after_sign_out_no_copy_works(manager):
    """The row is deleted at sign-out; a copy made before under a chosen key,
    and the old cookie, both find nobody."""
    browser = sign_in(manager)
    key = cookie(browser)
    _, data = row_of(key)
    insert(sessions.stored_key(CHOSEN), data)
    assert browser.post("/accounts/logout/").status_code == 200
    assert sessions.stored_key(key) not in [k for k, _ in rows()]
    assert not signed_in(with_cookie(key))
    assert not signed_in(with_cookie(CHOSEN))


def test_an_expiry_in_2099_does_not_outlive_the_session_age(manager, monkeypatch):
    """The row's expiry set to 2099 by hand: the session still ends
    SESSION_COOKIE_AGE after the sign-in (its creation time is signed)."""
    browser = sign_in(manager)
    sql("UPDATE django_session SET expire_date = %s", [FOREVER])
    age = settings.SESSION_COOKIE_AGE

    def clock(offset: int):
        monkeypatch.setattr(sessions, "time",
                            SimpleNamespace(time=lambda: real_time.time() + offset))

    clock(age - 60)
    assert signed_in(browser)  # a minute before its end: still on
    clock(age + 1)
    assert not signed_in(browser)


def test_a_sign_in_starts_a_new_session_with_its_own_age(manager):
    """The session's creation is the sign-in's (Django cycles the key):
    the data carries it, and the row expires by then at the latest."""
    before = int(real_time.time())
    browser = sign_in(manager)
    stored, _ = row_of(cookie(browser))
    row = apps.get_model("sessions", "Session").objects.get(session_key=stored)
    store = sessions.SessionStore(cookie(browser))
    assert store.load()
    assert before <= store._born <= real_time.time()
    assert row.expire_date.timestamp() <= store._born + settings.SESSION_COOKIE_AGE


def test_the_upgrade_forgets_the_plain_sessions(manager):
    """Rows of Django's own store (the cookie as the key) are deleted by the
    migration: everyone signs in again once."""
    insert(CHOSEN, "anything", expire="2099-01-01 00:00:00+00")
    sign_in(manager)
    migration = importlib.import_module("casino.migrations.0014_sessions_hashed")
    migration.forget_plain_sessions(apps, None)
    assert rows() == []
