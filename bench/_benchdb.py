"""Shared set-up for the PostgreSQL benchmarks: a fresh database, migrated,
and users with a role. Imported by bench_http.py, bench_simulate.py and
profile_coup.py; not a benchmark itself.

The database is dropped and re-created on every run, so its name must say
"bench": a DATABASE_URL that points at another database (the test suite's,
say) is not dropped; its server is used with the name ``<name>_bench``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/bench_casino"
OUT_DIR = ROOT / "var" / "bench"


def bench_url() -> str:
    url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    url = url or DEFAULT_URL
    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        sys.exit(f"bench: needs PostgreSQL, got {parts.scheme}:// in DATABASE_URL")
    name = parts.path.lstrip("/")
    if "bench" not in name:
        parts = parts._replace(path=f"/{name}_bench")
    return urlunsplit(parts)


def configure(*, debug: bool = False) -> str:
    """Environment for Django (this process and any child): call before
    django.setup(). Returns the database URL."""
    url = bench_url()
    os.environ.update(
        DJANGO_SETTINGS_MODULE="casino.settings",
        DATABASE_URL=url,
        DEBUG="1" if debug else "0",
        SECRET_KEY=os.environ.get("SECRET_KEY") or "bench-only-" + "x" * 40,
        ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        SECURE_SSL_REDIRECT="0",  # plain HTTP on loopback
        CONN_MAX_AGE="600",
        BENCH_BARE_ENDPOINT="1",
        LOG_LEVEL="WARNING",
    )
    os.environ.pop("REDIS_URL", None)  # Celery eager, nothing queued
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return url


def recreate_database(url: str) -> None:
    """DROP and CREATE the bench database, then migrate it (quietly)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    import django
    from django.core.management import call_command

    django.setup()
    try:
        call_command("migrate", verbosity=0, interactive=False)
    except psycopg.ProgrammingError as exc:  # raised unwrapped by mogrify
        if "placeholders" not in str(exc):
            raise
        # casino/migrations/0002 runs raw SQL holding a literal '%' through
        # schema_editor.execute(sql) with params=(), which makes Django's
        # PostgreSQL backend format it. Until the migration passes
        # params=None, migrate with () read as "no parameters".
        print("bench: WARNING: migrate failed on PostgreSQL "
              f"({exc}); retrying with the params=None shim")
        _migrate_with_shim(call_command)


def _migrate_with_shim(call_command) -> None:
    from django.db.backends.postgresql.schema import DatabaseSchemaEditor

    original = DatabaseSchemaEditor.execute

    def execute(self, sql, params=()):
        return original(self, sql, None if params == () else params)

    DatabaseSchemaEditor.execute = execute
    try:
        call_command("migrate", verbosity=0, interactive=False)
    finally:
        DatabaseSchemaEditor.execute = original


def make_user(username: str, role: str):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username, password=username * 2)
    user.groups.add(Group.objects.get(name=role))
    return user


def pg_settings() -> dict:
    """A few server settings worth printing next to the figures."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('synchronous_commit', 'fsync', 'shared_buffers', 'max_connections')"
        )
        return dict(cur.fetchall())


SFU_SHIM_ENV = "BENCH_SFU_SHIM"


def install_sfu_shim() -> None:
    """Work around services that lock a row with select_for_update() while
    select_related() follows a nullable foreign key (session_open, shoe_open,
    banker_turn_open): PostgreSQL refuses FOR UPDATE on the nullable side of
    an outer join. The app's fix is select_for_update(of=("self",)); this
    fills that in only where a caller gave no ``of`` and joins other tables,
    so it changes nothing once the services are fixed."""
    from django.db.models.sql.compiler import SQLCompiler

    if getattr(SQLCompiler.as_sql, "_bench_shim", False):
        return
    original = SQLCompiler.as_sql

    def as_sql(self, *args, **kwargs):
        q = self.query
        if q.select_for_update and not q.select_for_update_of and q.select_related:
            q.select_for_update_of = ("self",)
        return original(self, *args, **kwargs)

    as_sql._bench_shim = True
    SQLCompiler.as_sql = as_sql
    os.environ[SFU_SHIM_ENV] = "1"  # the server processes install it too


def with_sfu_shim(fn, **kwargs):
    """Call a service; if it fails on PostgreSQL's FOR UPDATE refusal, say
    so loudly, install the shim and call it again."""
    from django.db import NotSupportedError

    try:
        return fn(**kwargs)
    except NotSupportedError as exc:
        if "FOR UPDATE" not in str(exc):
            raise
        print(f"bench: WARNING: {fn.__name__} fails on PostgreSQL ({exc}); "
              "measuring with select_for_update(of=('self',)) filled in")
        install_sfu_shim()
        return fn(**kwargs)


def open_table(user, name: str, *, burned: int = 0):
    """A table with an open session, shoe (6 decks) and banker turn (seat 1,
    bank 100), through the services. Returns (table, session, shoe, turn)."""
    from decimal import Decimal

    from tables import services

    table = services.table_create(user=user, name=name, device="bench")
    session = with_sfu_shim(services.session_open, table=table, user=user,
                            device="bench")
    shoe = with_sfu_shim(services.shoe_open, session=session, user=user,
                         burned=burned, device="bench")
    turn = with_sfu_shim(services.banker_turn_open, session=session, user=user,
                         seat=1, bank=Decimal("100.00"), device="bench")
    return table, session, shoe, turn
