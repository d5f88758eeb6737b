"""A role or database setting changes nothing the app relies on, and
/health/details/ names it (issue 33 item 6).

The runtime role may set its own defaults (`ALTER ROLE casino_app SET
default_transaction_read_only = on`): every write of every new connection
then failed with "read-only transaction", and nothing named the cause. The
app now sends at connect every setting it relies on (casino/dbsession.py
SESSION), and the health check names any setting pg_db_role_setting holds
for the runtime role and its database."""

from __future__ import annotations

from contextlib import contextmanager
from decimal import Decimal

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import RequestFactory

from casino.dbsession import (
    SESSION,
    role_settings_problems,
    sent_at_connect,
    with_limits,
)
from casino.health import health_details, health_run
from tests.conftest import APP_ROLE

postgres = pytest.mark.postgres


def _connect(user: str = APP_ROLE, **params) -> psycopg.Connection:
    """A session of its own: the runtime role's credentials, or the owner's."""
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, dbname=db["NAME"],
        user=user, password=db.get("PASSWORD") or None, autocommit=True, **params)


@contextmanager
def role_set(name: str, value: str, *, by: str = APP_ROLE):
    """A default set on the runtime role (by itself, as it may; or by the
    owner, a superuser here), taken back after."""
    with _connect(by) as conn:
        conn.execute(f"ALTER ROLE {APP_ROLE} SET {name} = {value}")
    try:
        yield
    finally:
        # (a read-only default applies to the session that would reset it)
        with _connect(by, options="-c default_transaction_read_only=off") as conn:
            conn.execute(f"ALTER ROLE {APP_ROLE} RESET {name}")


@contextmanager
def logged_in_as_runtime_role():
    """The app's own connection, opened anew as the runtime role logs in (so
    the role's settings apply, as in production: the suite's connection logs
    in as the owner and SETs ROLE, which applies none)."""
    connection.close()
    saved = connection.settings_dict["USER"]
    connection.settings_dict["USER"] = APP_ROLE
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["USER"] = saved


def _record(shoe, croupier):
    from tables import services
    from tables.models import Coup

    before = Coup.objects.count()
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("100"), seat=2)],
        device="role-settings")
    return Coup.objects.count() - before


def _named(name: str) -> str:
    """The role_settings check's message, through the staff's view too."""
    result = {r.name: r for r in health_run()}["role_settings"]
    assert result.ok is False, result.message
    request = RequestFactory().get("/health/details/")
    request.user = User(username="ops", is_staff=True, is_active=True)
    import json

    body = json.loads(health_details(request).content)
    assert body["checks"]["role_settings"]["ok"] is False
    assert name in body["checks"]["role_settings"]["message"]
    return result.message


@postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("name", "value", "bare_error"), [
    ("default_transaction_read_only", "on", "read-only transaction"),
    ("search_path", "nowhere", "does not exist"),
    ("default_transaction_isolation", "'serializable'", None),
])
def test_a_role_setting_changes_nothing_and_is_named(
    shoe, turn, croupier, name, value, bare_error
):
    with role_set(name, value):
        if bare_error:  # a login without the app's settings: broken
            with _connect() as bare, pytest.raises(psycopg.Error, match=bare_error):
                bare.execute("INSERT INTO casino_seal (label, key, log_id) "
                             "SELECT 'x', 'y', 0 WHERE false")
        with logged_in_as_runtime_role():
            with connection.cursor() as cursor:
                cursor.execute("SELECT session_user, current_setting(%s)", [name])
                who, now = cursor.fetchone()
            assert who == APP_ROLE
            assert now.replace(" ", "").lower() == SESSION[name].replace(" ", "")
            assert _record(shoe, croupier) == 1  # the app still writes
            message = _named(name)
    assert f"{name} = {value.strip(chr(39))}" in message
    assert "overridden at connect" in message
    assert not role_settings_problems(connection)  # reset: nothing to name


@postgres
@pytest.mark.django_db
def test_a_setting_the_app_does_not_send_is_named_as_in_effect():
    with role_set("work_mem", "'64kB'"):
        message = _named("work_mem")
    assert "work_mem = 64kB" in message and "in effect" in message


@postgres
@pytest.mark.django_db
def test_what_a_superuser_alone_can_set_is_named():
    """session_replication_role = replica switches every trigger off; only a
    superuser sets it, on the role as on a session, and a role that is not
    one cannot send it at connect: it is named."""
    owner = connection.settings_dict["USER"]  # a superuser here
    with role_set("session_replication_role", "replica", by=owner):
        with _connect() as app:  # it applies at the runtime role's login
            assert app.execute("SHOW session_replication_role").fetchone() == (
                "replica",)
        assert "session_replication_role = replica" in _named(
            "session_replication_role")


@postgres
@pytest.mark.django_db
def test_a_clean_role_passes():
    result = {r.name: r for r in health_run()}["role_settings"]
    assert result.ok, result.message


@pytest.mark.django_db
def test_sqlite_has_no_role_settings(settings):
    if connection.vendor == "postgresql":
        pytest.skip("SQLite's case (the newcomer's path)")
    result = {r.name: r for r in health_run()}["role_settings"]
    assert result.ok and "not used" in result.message


def test_the_settings_are_sent_at_connect_and_read_back():
    options = with_limits("-c search_path=casino", statement=30, lock=5)
    assert options.startswith("-c default_transaction_read_only=off ")
    assert "-c default_transaction_isolation=read\\ committed " in options

    class Conn:
        settings_dict = {"OPTIONS": {"options": options}}

    sent = sent_at_connect(Conn())
    # the URL's own option wins over ours; the limits come last
    assert sent["search_path"] == "casino"
    assert sent["default_transaction_isolation"] == "read committed"
    assert sent["datestyle"] == "ISO, MDY"
    assert (sent["statement_timeout"], sent["lock_timeout"]) == ("30000", "5000")
    # applied twice (a worker switching its limits), nothing doubles
    again = with_limits(options, statement=3600, lock=60)
    assert again.count("default_transaction_read_only") == 1
    assert again.endswith("-c statement_timeout=3600000 -c lock_timeout=60000")
