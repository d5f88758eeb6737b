"""Tablet API tokens, tried as an insider would (issue 11, findings 7 and 8).

Whoever reads the database must not find a token he can send back; a token
dies at the end of its shift, at a password change by any path and at a
deactivation; each device has its own; and only the user himself or a
higher role (croupier < pit boss < manager < admin) revokes one.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from casino.models import ChangeLog
from tests.conftest import make_user

NEW_PASSWORD = "Quatre-Vingt-Neuf-89"


def sign_in(user, device: str = "tablet-1", password: str | None = None) -> dict:
    r = APIClient().post(
        "/api/v1/auth/token/",
        {"username": user.username, "password": password or f"pw-{user.username}"},
        format="json",
        HTTP_X_DEVICE=device,
    )
    assert r.status_code == 200, r.content
    return r.json()


def tablet(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def works(token: str) -> bool:
    """200: the token signs its user in; 401: refused; 409: refused because
    its user's row (or the token's) was changed outside the application
    (casino/continuity.py trusted: the alarm is raised)."""
    status = tablet(token).get("/api/v1/tables/").status_code
    assert status in (200, 401, 409), status
    return status == 200


def revoke(client, user, reason="tablet stolen", **extra):
    return client.post(
        f"/api/v1/users/{user.pk}/token/revoke/",
        {"reason": reason, **extra},
        format="json",
    )


def tokens_of(user=None):
    """The stored tokens (imported here: the suite must load, and each test
    fail on its own assertion, on a code base without this model)."""
    from casino.models import ApiToken

    rows = ApiToken.objects.all()
    return rows if user is None else rows.filter(user=user)


def token_rows() -> int:
    """Rows of every token table of the database, whatever its model."""
    total = 0
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            if "token" in table:
                cursor.execute(
                    f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}"
                )
                total += cursor.fetchone()[0]
    return total


def revocations() -> list[ChangeLog]:
    return list(ChangeLog.objects.filter(action="auth.token.revoked").order_by("id"))


@pytest.fixture
def clock(monkeypatch):
    """Moves Django's clock (timezone.now) forward, no sleeping."""

    class Clock:
        offset = timedelta(0)

        def advance(self, delta: timedelta) -> None:
            self.offset += delta

    clock = Clock()
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + clock.offset)
    return clock


@pytest.fixture
def admin(db):
    return User.objects.create_superuser("boss", password="pw-boss")


# -- what the database holds --------------------------------------------------


def every_text_cell() -> list[tuple[str, str]]:
    """(table, value) for every text value of every table of the database."""
    cells = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                cells += [(table, v) for v in row if isinstance(v, str) and v]
    return cells


def test_the_database_holds_no_usable_token(croupier, table):
    token = sign_in(croupier)["token"]
    assert works(token)
    cells = every_text_cell()
    assert not [t for t, v in cells if token in v], "the token is stored in clear"
    stored = {v for t, v in cells if "token" in t}
    assert stored, "no token table found"
    for value in stored:  # digest, lookup key, device, mark: none is a token
        r = tablet(value).get("/api/v1/tables/")
        assert r.status_code == 401, (value, r.status_code)


# -- expiry ------------------------------------------------------------------


def test_a_token_past_its_ttl_is_refused(croupier, table, clock, settings):
    body = sign_in(croupier)
    issued = timezone.now()
    clock.advance(timedelta(hours=12) - timedelta(minutes=2))
    assert works(body["token"])
    clock.advance(timedelta(minutes=3))
    assert not works(body["token"])
    assert not tokens_of(croupier).exists()  # purged
    # One shift by default, and the tablet is told when.
    assert settings.API_TOKEN_TTL == timedelta(hours=12)
    expiry = datetime.fromisoformat(body["expiry"])
    assert abs(expiry - (issued + timedelta(hours=12))) < timedelta(minutes=1)
    # A new sign-in starts a new shift.
    assert works(sign_in(croupier)["token"])


def test_the_ttl_comes_from_the_setting(croupier, table, clock, settings):
    settings.API_TOKEN_TTL = timedelta(hours=1)
    token = sign_in(croupier)["token"]
    clock.advance(timedelta(minutes=59))
    assert works(token)
    clock.advance(timedelta(minutes=2))
    assert not works(token)


# -- password change, by every path -----------------------------------------


def by_page(user, monkeypatch):
    client = Client()
    client.force_login(user)
    r = client.post(
        "/accounts/password_change/",
        {
            "old_password": f"pw-{user.username}",
            "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD,
        },
    )
    assert r.status_code == 302, r.content[:500]


def by_command(user, monkeypatch):
    import getpass

    monkeypatch.setattr(getpass, "getpass", lambda prompt="": NEW_PASSWORD)
    call_command("changepassword", user.username, stdout=None)


def by_admin(user, monkeypatch):
    admin = User.objects.create_superuser("boss", password="pw-boss")
    client = Client()
    client.force_login(admin)
    r = client.post(
        f"/admin/auth/user/{user.pk}/password/",
        {
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "usable_password": "true",
        },
    )
    assert r.status_code == 302, r.content[:500]


def by_set_password(user, monkeypatch):
    fresh = User.objects.get(pk=user.pk)
    fresh.set_password(NEW_PASSWORD)
    fresh.save()


def by_update(user, monkeypatch):
    """No model save, no signal: the token's password mark still catches it."""
    from django.contrib.auth.hashers import make_password

    User.objects.filter(pk=user.pk).update(password=make_password(NEW_PASSWORD))


PATHS = {
    "page": by_page,
    "command": by_command,
    "admin": by_admin,
    "set_password": by_set_password,
}


@pytest.mark.parametrize("path", PATHS)
def test_a_password_change_revokes_the_tokens(path, croupier, table, monkeypatch):
    tokens = [sign_in(croupier, device)["token"] for device in ("t-1", "t-2")]
    assert all(works(t) for t in tokens)
    PATHS[path](croupier, monkeypatch)
    croupier.refresh_from_db()
    assert croupier.check_password(NEW_PASSWORD)
    assert not any(works(t) for t in tokens)
    assert not tokens_of(croupier).exists()
    row = revocations()[-1]  # the signal's revocation is in the trail
    assert (row.object_id, row.reason) == (str(croupier.pk), "password changed")
    assert row.new["devices"] == ["t-1", "t-2"]
    # The new password signs in, and its token works.
    assert works(sign_in(croupier, password=NEW_PASSWORD)["token"])


# -- deactivation -------------------------------------------------------------


def test_a_deactivated_user_is_refused_at_once_and_stays_revoked(croupier, table):
    token = sign_in(croupier)["token"]
    assert works(token)
    croupier.is_active = False
    croupier.save()
    assert not works(token)
    row = revocations()[-1]
    assert (row.object_id, row.reason) == (str(croupier.pk), "user deactivated")
    # Reactivated, he signs in again: the old token does not come back.
    croupier.is_active = True
    croupier.save()
    assert not works(token)
    token = sign_in(croupier)["token"]
    assert works(token)


@pytest.mark.tampers
@pytest.mark.parametrize("change", ["password", "is_active"])
def test_a_change_that_bypasses_the_app_signs_nobody_in(change, croupier, table,
                                                       monkeypatch):
    """An UPDATE with the database's credentials (no model save, no signal):
    the user's row no longer matches its sealed state, so his tokens are
    refused at once and the new password signs nobody in
    (casino/continuity.py)."""
    token = sign_in(croupier)["token"]
    assert works(token)
    if change == "password":
        by_update(croupier, monkeypatch)
    else:
        User.objects.filter(pk=croupier.pk).update(is_active=False)
    assert not works(token)
    if change == "password":
        assert tablet(token).get("/api/v1/tables/").json()["code"] == "record_changed"
        r = APIClient().post("/api/v1/auth/token/",
                             {"username": croupier.username,
                              "password": NEW_PASSWORD}, format="json")
        assert r.status_code in (400, 401, 403), r.content


# -- one token per device ---------------------------------------------------


def test_two_devices_get_two_tokens_and_revoking_is_logged(
    croupier, pitboss, as_user, table
):
    a = sign_in(croupier, "tablet-A")["token"]
    b = sign_in(croupier, "tablet-B")["token"]
    assert a != b and works(a) and works(b)
    assert sorted(tokens_of(croupier).values_list("device", flat=True)) == [
        "tablet-A",
        "tablet-B",
    ]
    client = as_user(pitboss)
    r = revoke(client, croupier, reason="tablet A lost", device="tablet-A")
    assert r.status_code == 200 and r.json() == {"revoked": True, "tokens": 1}
    assert not works(a) and works(b)
    r = revoke(client, croupier, reason="end of shift")
    assert r.json() == {"revoked": True, "tokens": 1}
    assert not works(b)
    first, second = revocations()
    assert (first.user, first.reason, first.object_id) == (
        pitboss,
        "tablet A lost",
        str(croupier.pk),
    )
    assert first.new["devices"] == ["tablet-A"]
    assert first.new["only_device"] == "tablet-A"
    assert (second.reason, second.new["devices"]) == ("end of shift", ["tablet-B"])


# -- who revokes whose --------------------------------------------------------


@pytest.fixture
def people(croupier, croupier2, pitboss, manager, auditor, outsider, admin):
    return {
        "croupier": croupier,
        "croupier2": croupier2,
        "pitboss": pitboss,
        "pitboss2": make_user("pitboss2", "pitboss"),
        "manager": manager,
        "auditor": auditor,
        "outsider": outsider,
        "admin": admin,
    }


REFUSED = [
    ("pitboss", "manager"),  # finding 8
    ("pitboss", "admin"),  # finding 8
    ("pitboss", "pitboss2"),  # a peer
    ("pitboss", "auditor"),  # the auditor ranks with the manager
    ("manager", "admin"),
    ("croupier", "croupier2"),
    ("auditor", "croupier"),  # reads everything, revokes nobody else's
    ("outsider", "croupier"),
]
ALLOWED = [
    ("manager", "pitboss"),
    ("manager", "croupier"),
    ("pitboss", "croupier"),
    ("pitboss", "outsider"),
    ("admin", "manager"),
    ("admin", "auditor"),
    ("croupier", "croupier"),  # his own
    ("auditor", "auditor"),
    ("pitboss", "pitboss"),
]


@pytest.mark.parametrize("actor, target", REFUSED)
def test_a_lower_or_equal_role_cannot_revoke(actor, target, people, as_user, table):
    token = sign_in(people[target])["token"]
    rows, logs = token_rows(), ChangeLog.objects.count()
    r = revoke(as_user(people[actor]), people[target])
    assert r.status_code == 403, r.content
    assert r.json()["code"] == "forbidden" and "user" in r.json()
    assert (token_rows(), ChangeLog.objects.count()) == (rows, logs)
    assert works(token)


@pytest.mark.parametrize("actor, target", ALLOWED)
def test_the_user_or_a_higher_role_revokes(actor, target, people, as_user, table):
    token = sign_in(people[target])["token"]
    r = revoke(as_user(people[actor]), people[target])
    assert r.status_code == 200 and r.json() == {"revoked": True, "tokens": 1}
    assert not works(token)
    row = revocations()[-1]
    assert (row.user, row.object_id) == (people[actor], str(people[target].pk))


def test_a_user_revokes_his_own_token_with_it(croupier, table):
    """A tablet signs itself out: its own token, no other role needed."""
    token = sign_in(croupier, "tablet-A")["token"]
    other = sign_in(croupier, "tablet-B")["token"]
    r = revoke(tablet(token), croupier, reason="signing out", device="tablet-A")
    assert r.status_code == 200 and r.json() == {"revoked": True, "tokens": 1}
    assert not works(token) and works(other)


def test_an_upgrade_forgets_the_tokens_drf_kept_in_clear(db):
    """A database upgraded from DRF's authtoken keeps its table (Django leaves
    it), but not the tokens in it."""
    import importlib
    from types import SimpleNamespace

    migration = importlib.import_module("casino.migrations.0008_forget_clear_tokens")
    # TEMP on PostgreSQL: the tests run as the runtime role, which may not
    # create tables (SQLite's introspection does not list temporary ones).
    temp = "TEMP " if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE {temp}TABLE authtoken_token (key varchar(40))")
        cursor.execute("INSERT INTO authtoken_token VALUES ('f00d' || 'cafe')")
    migration.forget_clear_tokens(None, SimpleNamespace(connection=connection))
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0
