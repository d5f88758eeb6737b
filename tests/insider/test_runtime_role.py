"""The credentials the app runs with, turned against the records (issue 11,
finding 1): connected as the runtime role, every attack is refused.

Each attack runs on its own connection, logged in as the role that web and
workers use (`db_roles`, tests/conftest.py), against the test database."""

from __future__ import annotations

import io
from contextlib import contextmanager

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from casino.dbroles import UPDATE_TABLES, append_only_tables, missing_guards
from tests.conftest import APP_ROLE, _missing

pytestmark = pytest.mark.postgres


def _connect(user: str = APP_ROLE) -> psycopg.Connection:
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, dbname=db["NAME"],
        user=user, password=db.get("PASSWORD") or None, autocommit=True,
    )


ATTACKS = [
    ("TRUNCATE casino_changelog", "permission denied"),
    ("TRUNCATE tables_stake, tables_finding CASCADE", "permission denied"),
    ("TRUNCATE tables_coup CASCADE", "permission denied"),
    ("ALTER TABLE tables_coup DISABLE TRIGGER USER", "must be owner"),
    ("ALTER TABLE tables_coup DISABLE TRIGGER tables_coup_append_only",
     "must be owner"),
    ("ALTER TABLE casino_changelog DISABLE TRIGGER casino_changelog_no_truncate",
     "must be owner"),
    ("CREATE OR REPLACE FUNCTION casino_refuse_change() RETURNS trigger AS "
     "$$ BEGIN RETURN NEW; END; $$ LANGUAGE plpgsql", "must be owner|permission"),
    ("DROP TRIGGER tables_coup_append_only ON tables_coup", "must be owner"),
    ("DROP TABLE casino_changelog CASCADE", "must be owner"),
    ("UPDATE tables_coup SET commission = 50", "permission denied"),
    ("UPDATE tables_stake SET amount = amount * 10", "permission denied"),
    ("DELETE FROM casino_changelog", "permission denied"),
    ("DELETE FROM tables_coup", "permission denied"),
    ("DELETE FROM tables_shoe", "permission denied"),
    ("UPDATE casino_changelog SET hash = ''", "permission denied"),
    ("CREATE TABLE casino_shadow (id int)", "permission denied"),
    ("SET session_replication_role = replica", "permission denied"),
    # {role}: the runtime role's name (the worker's own in a parallel run)
    ("ALTER ROLE {role} SUPERUSER", "permission denied|must be superuser"),
]


@pytest.mark.parametrize("sql,refusal", ATTACKS, ids=[a[0][:48] for a in ATTACKS])
def test_the_runtime_role_cannot(sql, refusal, shoe, turn, croupier):
    from decimal import Decimal

    sql = sql.replace("{role}", APP_ROLE)

    from tables import services

    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("100"), seat=2)],
    )
    # Another session, as the runtime role: the privilege checks come before
    # any lock, so the test's open transaction does not hold it up.
    with _connect() as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == APP_ROLE
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(sql)
    import re

    assert re.search(refusal, str(refused.value)), str(refused.value)
    from casino.trail import trail_verify

    assert trail_verify().ok  # nothing moved


def test_the_role_owns_nothing_and_is_not_privileged(db):
    with _connect() as conn:
        owned = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
            "WHERE r.rolname = current_user").fetchone()[0]
        attrs = conn.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, "
            "rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
        truncate = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' "
            "AND (has_table_privilege(current_user, c.oid, 'TRUNCATE') "
            "OR has_table_privilege(current_user, c.oid, 'TRIGGER') "
            "OR has_table_privilege(current_user, c.oid, 'REFERENCES'))").fetchall()
        writable = conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%s) AND "
            "(has_table_privilege(current_user, c.oid, 'UPDATE') OR "
            "has_table_privilege(current_user, c.oid, 'DELETE'))",
            [append_only_tables()]).fetchall()
        deletable = conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relname = ANY(%s) AND "
            "has_table_privilege(current_user, c.oid, 'DELETE')",
            [list(UPDATE_TABLES)]).fetchall()
        create = conn.execute(
            "SELECT has_schema_privilege(current_user, 'public', 'CREATE')"
        ).fetchone()[0]
    assert owned == 0
    assert attrs == (False, False, False, False, False)
    assert truncate == [] and writable == [] and deletable == [] and not create


def test_every_append_only_table_is_guarded_even_against_its_owner(shoe, turn):
    from django.db import DatabaseError, transaction

    from tests.pgroles import as_owner

    assert missing_guards() == []
    assert "reports_reauditfinding" in append_only_tables()
    # the anchors kept in the database and their trusted timestamps (issue 25)
    assert {"casino_anchorrecord", "casino_timestamptoken"} <= set(
        append_only_tables())
    with as_owner() as cursor:  # the migrating user, on the test's connection
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE's condition
        for table in append_only_tables():
            with pytest.raises(DatabaseError, match="append-only"):
                with transaction.atomic():
                    cursor.execute(f"TRUNCATE {table} CASCADE")


def test_db_roles_is_idempotent_and_refuses_an_owner(db):
    from tests.pgroles import as_owner

    out = io.StringIO()
    # The runtime role cannot grant itself anything: it is refused up front.
    with pytest.raises(CommandError, match="owner's DATABASE_URL"):
        call_command("db_roles", app_role=APP_ROLE, stdout=out)
    with as_owner() as owner:  # everything rolled back with the test
        call_command("db_roles", app_role=APP_ROLE, stdout=out)
        call_command("db_roles", app_role=APP_ROLE, stdout=out)
        assert "casino_changelog: SELECT, INSERT\n" in out.getvalue()
        assert "tables_bankerturn: SELECT, INSERT, UPDATE\n" in out.getvalue()
        owner.execute(f"CREATE ROLE {APP_ROLE}_owner")
        owner.execute("CREATE TABLE owned_by_role (id int)")
        owner.execute(f"ALTER TABLE owned_by_role OWNER TO {APP_ROLE}_owner")
        with pytest.raises(CommandError, match="owns owned_by_role"):
            call_command("db_roles", app_role=f"{APP_ROLE}_owner", stdout=out)


def test_the_app_itself_runs_as_the_runtime_role(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] == APP_ROLE


@pytest.mark.parametrize("op", ["UPDATE {t} SET id = id", "DELETE FROM {t}",
                                "TRUNCATE {t} CASCADE",
                                "ALTER TABLE {t} DISABLE TRIGGER USER"])
def test_the_runtime_role_against_every_append_only_table(db, op):
    assert "casino_timestamptoken" in append_only_tables()
    with _connect() as conn:
        for table in append_only_tables():
            with pytest.raises(psycopg.Error, match="permission denied|must be owner"):
                conn.execute(op.format(t=table))


# -- the runtime role cannot stall or loosen the app (issue 23, item 4) --------

def test_the_runtime_role_cannot_lift_the_apps_timeouts(db, settings):
    """The app sends its limits at connect (casino/dbsession.py): the role's
    own settings, which the runtime role may change on itself, lose to them."""
    statement, lock = settings.DB_LIMITS["web"]
    with _connect() as conn:  # the runtime role, on itself
        conn.execute(f"ALTER ROLE {APP_ROLE} SET statement_timeout = 0")
        conn.execute(f"ALTER ROLE {APP_ROLE} SET lock_timeout = 0")
    try:
        with _connect() as bare:  # a login without the app's options: lifted
            assert bare.execute("SHOW statement_timeout").fetchone() == ("0",)
            assert bare.execute("SHOW lock_timeout").fetchone() == ("0",)
        # a new connection of the app's, logged in as the runtime role
        params = {**connection.get_connection_params(), "user": APP_ROLE}
        with psycopg.connect(**params, autocommit=True) as app:
            assert app.execute("SELECT current_user").fetchone() == (APP_ROLE,)
            assert app.execute(
                "SELECT current_setting('statement_timeout'), "
                "current_setting('lock_timeout')").fetchone() == (
                f"{statement:g}s", f"{lock:g}s")
    finally:
        with _connect() as conn:
            conn.execute(f"ALTER ROLE {APP_ROLE} RESET ALL")
    from casino.dbsession import session_limits

    assert session_limits(connection) == (f"{statement:g}s", f"{lock:g}s")


@contextmanager
def _chain_taken():
    """The runtime role's credentials in a session of their own, holding the
    change log's chain lock (migration casino 0009) and never letting go."""
    from casino import dbsession
    from casino.trail import ADVISORY_LOCK_KEY

    holder = _connect()
    holder.execute("SET application_name = 'chain-squatter'")
    holder.execute("SET lock_timeout = '10s'")  # a test's own hold: fail, not hang
    holder.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
    dbsession._alerts.update(last=None, since=0)
    try:
        yield holder
    finally:
        holder.close()
        dbsession._alerts.update(last=None, since=0)


def _written() -> tuple:
    from casino.models import ChangeLog
    from tables.models import Coup, HouseRules

    return (ChangeLog.objects.count(), Coup.objects.count(),
            HouseRules.objects.count())


# Committed writes: a test's own transaction would keep the chain lock it took
# (an xact lock lasts to the top transaction's end) and the squatter wait on it.
@pytest.mark.django_db(transaction=True)
def test_a_held_chain_answers_503_saying_so_within_seconds_and_alerts(
    as_user, croupier, manager, table, shoe, turn, settings, caplog,
):
    with _chain_taken() as holder:
        _refused_while_held(holder, as_user, croupier, manager, table, shoe,
                            settings, caplog)
    # released: the same coup goes through
    r = as_user(croupier).post(
        f"/api/v1/shoes/{shoe.pk}/coups/",
        {"punter": ["2H", "3D"], "banker": ["8C", "TS"],
         "stakes": [{"seat": 2, "amount": "300.00"}]},
        format="json", headers={"Idempotency-Key": "held-1"})
    assert r.status_code == 201, r.content


def _refused_while_held(holder, as_user, croupier, manager, table, shoe, settings,
                        caplog):
    import time

    lock = settings.DB_LIMITS["web"][1]
    before = _written()
    caplog.set_level("ERROR", logger="casino.chain")
    asked = [
        (croupier, f"/api/v1/shoes/{shoe.pk}/coups/",
         {"punter": ["2H", "3D"], "banker": ["8C", "TS"],
          "stakes": [{"seat": 2, "amount": "300.00"}]}),
        (manager, f"/api/v1/tables/{table.pk}/rules/",
         {"reason": "licence of 2027", "decks": 8}),
    ]
    for user, url, body in asked:
        start = time.monotonic()
        r = as_user(user).post(url, body, format="json",
                               headers={"Idempotency-Key": "held-1"})
        took = time.monotonic() - start
        assert r.status_code == 503, r.content
        assert r.json()["code"] == "chain_held"
        assert r.json()["detail"].startswith("the change log is held")
        assert "unavailable" not in r.json()["detail"]
        assert r["Retry-After"]
        assert lock - 0.5 < took < lock + 3, took  # waited lock_timeout, no more
    assert _written() == before  # nothing written
    [alert] = [r for r in caplog.records if r.name == "casino.chain"]
    assert alert.levelname == "ERROR"
    message = alert.getMessage()
    assert f"pid {holder.info.backend_pid}" in message
    assert f"role {APP_ROLE}" in message and "'chain-squatter'" in message
    assert "pg_terminate_backend" in message


@pytest.mark.django_db(transaction=True)
def test_a_held_chain_on_a_page_is_a_503_page_not_a_500(
    browser_as, manager, table, settings,
):
    from tables.models import HouseRules

    before = HouseRules.objects.filter(table=table).count()
    page = browser_as(manager)
    with _chain_taken():
        r = page.post(f"/floor/tables/{table.pk}/rules/",
                      {"reason": "licence of 2027", "decks": "8"})
    assert r.status_code == 503
    assert "The change log is held" in r.content.decode()
    assert HouseRules.objects.filter(table=table).count() == before


# -- db_roles run by an owner who is not a superuser --------------------------

@pytest.fixture(scope="module")
def plain_owner():
    """A throwaway database owned by a throwaway role that is not a superuser
    (CREATEROLE, as a managed PostgreSQL's admin user is), migrated by that
    role: the owner of production. Roles are the cluster's, so named after
    the test database; everything dropped afterwards."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    if connection.vendor != "postgresql":  # before the marker's own check
        _missing("PostgreSQL", "set DATABASE_URL=postgres://... to run this test")
    db = connection.settings_dict
    base = db["NAME"][:40]  # the test database's name, here
    owner, name = f"{base}_plain_owner", f"{base}_plain"
    server = {"host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432,
              "password": db.get("PASSWORD") or None}
    su = psycopg.connect(**server, dbname="postgres", user=db["USER"],
                         autocommit=True)

    def drop():
        su.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for role in su.execute("SELECT rolname FROM pg_roles WHERE "
                               "starts_with(rolname, %s)", [f"{base}_plain_"]):
            su.execute(f'DROP ROLE "{role[0]}"')

    drop()
    su.execute(f'CREATE ROLE "{owner}" LOGIN CREATEROLE')
    su.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
    url = f"postgres://{owner}@{server['host']}:{server['port']}/{name}"
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "REDIS_URL", "REPORTS_DATABASE_URL",
                        "MIGRATE_DATABASE_URL", "APP_DB_PASSWORD"}}
    env.update(DATABASE_URL=url, MIGRATE_DATABASE_URL=url)
    root = Path(__file__).resolve().parents[2]

    def manage(*args, **extra):
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=root, env={**env, **extra},
            capture_output=True, text=True, timeout=600)

    migrated = manage("migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stderr
    try:
        yield {"su": su, "owner": owner, "db": name, "server": server,
               "manage": manage, "app": f"{base}_plain_app"}
    finally:
        drop()
        su.close()


def test_db_roles_works_for_an_owner_who_is_not_a_superuser(plain_owner):
    p = plain_owner
    assert p["su"].execute("SELECT rolsuper, rolcreaterole FROM pg_roles WHERE "
                           "rolname = %s", [p["owner"]]).fetchone() == (False, True)
    done = p["manage"]("db_roles", "--app-role", p["app"], APP_DB_PASSWORD="pw-1")
    assert done.returncode == 0, done.stderr
    assert f"Role {p['app']} created" in done.stdout
    assert "casino_changelog: SELECT, INSERT\n" in done.stdout
    again = p["manage"]("db_roles", "--app-role", p["app"])  # idempotent
    assert again.returncode == 0, again.stderr
    assert f"Role {p['app']} updated" in again.stdout
    with psycopg.connect(**p["server"], dbname=p["db"], user=p["app"],
                         autocommit=True) as app:
        rights = app.execute(
            "SELECT has_table_privilege('casino_changelog', 'INSERT'), "
            "has_table_privilege('casino_changelog', 'UPDATE'), "
            "has_table_privilege('casino_changelog', 'TRUNCATE'), "
            "has_schema_privilege('public', 'CREATE'), "
            "has_database_privilege(current_database(), 'CREATE')").fetchone()
        assert rights == (True, False, False, False, False)
        with pytest.raises(psycopg.Error, match="permission denied"):
            app.execute("TRUNCATE casino_changelog")


def test_db_roles_refuses_an_owner_lacking_createrole_saying_so(plain_owner):
    p = plain_owner
    new = f"{p['app']}_2"
    p["su"].execute(f'ALTER ROLE "{p["owner"]}" NOCREATEROLE')
    try:
        refused = p["manage"]("db_roles", "--app-role", new)
        assert refused.returncode != 0
        assert (f"db_roles runs as {p['owner']}, which is not a superuser and "
                f"lacks CREATEROLE, needed to create the runtime role {new}: as a "
                f"superuser, ALTER ROLE {p['owner']} CREATEROLE") in refused.stderr
        assert "Traceback" not in refused.stderr
        assert p["su"].execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                               [new]).fetchone() == (0,)
        # a role the DBA made as it should be needs no CREATEROLE, unless a
        # password is to be set
        p["su"].execute(f'CREATE ROLE "{new}" LOGIN')
        assert p["manage"]("db_roles", "--app-role", new).returncode == 0
        refused = p["manage"]("db_roles", "--app-role", new, APP_DB_PASSWORD="pw")
        assert refused.returncode != 0
        assert "lacks CREATEROLE, needed to set the password of" in refused.stderr
        # a runtime role with SUPERUSER: only a superuser takes it away
        p["su"].execute(f'ALTER ROLE "{new}" SUPERUSER')
        refused = p["manage"]("db_roles", "--app-role", new)
        assert refused.returncode != 0
        assert (f"{new} has SUPERUSER, which only a superuser takes away"
                in refused.stderr)
    finally:
        p["su"].execute(f'ALTER ROLE "{p["owner"]}" CREATEROLE')


def test_db_roles_refuses_an_owner_who_does_not_own_every_table(plain_owner):
    p = plain_owner
    with psycopg.connect(**p["server"], dbname=p["db"], user=p["su"].info.user,
                         autocommit=True) as su:
        su.execute("CREATE TABLE stray_by_superuser (id int)")
        try:
            refused = p["manage"]("db_roles", "--app-role", p["app"])
        finally:
            su.execute("DROP TABLE stray_by_superuser")
    assert refused.returncode != 0
    assert "does not own stray_by_superuser" in refused.stderr
    assert f"run migrate as {p['owner']}" in refused.stderr
