"""Upgrading a database whose trail was a plain SHA-256 chain with no ledger
binding (migration casino 0006): the old chain is checked, then signed with
the key, and the ledger rows that exist are sealed into the trail."""

from __future__ import annotations

import importlib
import json

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from casino.models import ChangeLog
from casino.trail import GENESIS, iter_rows, trail_verify
from tests.insider.test_tampering import superuser

seal_migration = importlib.import_module(
    "casino.migrations.0006_keyed_chain_and_ledger")
continuity_migration = importlib.import_module("casino.migrations.0010_continuity")
link_migration = importlib.import_module("casino.migrations.0011_changelog_link")

# These tests edit the records behind the app's back on purpose.
pytestmark = pytest.mark.tampers


def _apps(migration="0006_keyed_chain_and_ledger"):
    """The models as the migration sees them (historical: no append-only
    guard in Python; the database trigger is what it switches off)."""
    state = MigrationLoader(connection).project_state(("casino", migration))
    return state.apps


class _Editor:
    """What the migration uses of a schema editor, on the test's connection
    (as the owner on PostgreSQL, the migrating user)."""

    def __init__(self, cursor):
        self.connection, self.cursor = connection, cursor

    def execute(self, sql, params=None):
        self.cursor.execute(sql, params)


def _make_legacy(cursor, break_at=None):
    """Rewrite the trail as the previous release wrote it."""
    prev = GENESIS
    for r in iter_rows(ChangeLog.objects.all()):
        row = ChangeLog(**{k: r[k] for k in ("id", "at", "user_id", "device",
                                            "action", "object_type", "object_id",
                                            "reason", "old", "new")})
        digest = seal_migration._legacy_digest(row, prev)
        new = r["new"]
        if r["id"] == break_at:
            new = {"tampered": True}
        cursor.execute(
            "UPDATE casino_changelog SET prev_hash = %s, hash = %s, key_id = '', "
            "ledger = NULL, new = %s WHERE id = %s",
            [prev, digest, json.dumps(new), r["id"]])
        prev = digest


def test_a_legacy_trail_is_checked_signed_and_the_ledger_sealed(played):
    with superuser() as c:
        _make_legacy(c)
    assert not trail_verify().ok  # unkeyed rows do not pass as keyed ones
    rows_before = ChangeLog.objects.count()
    last_before = ChangeLog.objects.order_by("-id").first().pk
    with superuser() as c:
        if connection.vendor == "postgresql":
            c.execute("SET session_replication_role = origin")  # as migrate runs
        seal_migration.seal(_apps(), _Editor(c))
        # then, as the upgrade goes on, the release that binds the rest and
        # indexes the seals (casino 0010)
        continuity_migration.seal(_apps("0010_continuity"), _Editor(c))
        # and the public link (casino 0011)
        link_migration.fill_links(_apps("0011_changelog_link"), _Editor(c))
    check = trail_verify()
    assert check.ok, check.problem
    # one row each: 0006 seals the ledger, 0010 the rows it binds
    sealed = ChangeLog.objects.filter(action="casino.trail.ledger_sealed",
                                      id__gt=last_before)
    assert [r.reason.split()[0] for r in sealed] == ["ledger", "rows"]
    assert ChangeLog.objects.count() == rows_before + 2
    assert check.ledger_rows >= 4
    assert sum(r.new["rows"] for r in sealed) == check.ledger_rows


def test_a_broken_legacy_trail_stops_the_upgrade(played):
    target = ChangeLog.objects.filter(action="tables.coup.recorded").first()
    with superuser() as c:
        _make_legacy(c, break_at=target.pk)
        if connection.vendor == "postgresql":
            c.execute("SET session_replication_role = origin")
        with pytest.raises(RuntimeError, match=f"row {target.pk} does not verify"):
            seal_migration.seal(_apps(), _Editor(c))
