"""Playing the other people who can reach the database, from a test.

The app's connection runs as the runtime role (tests/conftest.py); these
switch the same connection (and so the same transaction, seeing the test's
rows) to the owner or to a superuser for one block, then back."""

from __future__ import annotations

from contextlib import contextmanager

from django.db import connection

from tests.conftest import APP_ROLE


@contextmanager
def as_owner():
    """The tables' owner (the migrating user): triggers still fire."""
    with connection.cursor() as cursor:
        cursor.execute("RESET ROLE")
        try:
            yield cursor
        finally:
            cursor.execute(f"SET ROLE {APP_ROLE}")


@contextmanager
def as_superuser():
    """A database superuser editing rows behind the application's back:
    `session_replication_role = replica` skips every trigger (RECIPES.md)."""
    with connection.cursor() as cursor:
        cursor.execute("RESET ROLE")
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET session_replication_role = replica")
        try:
            yield cursor
        finally:
            cursor.execute("SET session_replication_role = origin")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
            cursor.execute(f"SET ROLE {APP_ROLE}")


@contextmanager
def as_app_role():
    """The runtime role, explicitly (a no-op on the app's own connection)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET ROLE {APP_ROLE}")
        yield cursor
