"""The public link (issue 25 item 3): a plain SHA-256 chain over each log
row's content and the previous link, beside the keyed HMAC. Anyone can walk
it without a secret; every writer (the ORM path, the PostgreSQL coup path)
writes it; verify_trail checks it and names the row; the migration that adds
it verifies the chain first and stops, naming the row, if it is broken."""

from __future__ import annotations

import hashlib
import importlib
import json

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from casino.models import ChangeLog
from casino.trail import GENESIS, _when, iter_rows, trail_verify
from tests.audit.conftest import BANKER_WINS, stake
from tests.insider.test_tampering import superuser, verify_fails
from tests.insider.test_upgrade_seal import _Editor

link_migration = importlib.import_module("casino.migrations.0011_changelog_link")


def _outsider_walk(rows: list[dict]) -> str:
    """The link as an outsider computes it from the documented format alone
    (casino/trail.py's docstring), with no import from the app: the head's
    link, or AssertionError naming the first row that does not hold."""
    prev = GENESIS
    for r in rows:
        body = [prev, _text_at(r["at"]), r["user_id"], r["device"] or "",
                r["action"], r["object_type"] or "", r["object_id"] or "",
                r["reason"] or "", r["old"], r["new"]]
        if r["ledger"]:
            body.append(r["ledger"])
        text = json.dumps(body, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert digest == r["link"], f"row {r['id']}"
        prev = digest
    return prev


def _text_at(at) -> str:
    assert _when(at).endswith("Z") and len(_when(at)) == 27
    return _when(at)


def test_every_row_carries_a_link_an_outsider_can_walk(played, deal, shoe):
    deal(shoe, BANKER_WINS, [stake("150")])  # a coup on this database's path
    rows = list(iter_rows(ChangeLog.objects.all()))
    assert all(len(r["link"]) == 64 for r in rows)
    assert len({r["link"] for r in rows}) == len(rows)
    assert _outsider_walk(rows) == rows[-1]["link"]
    # the link is not the HMAC: it needs no key, the HMAC does
    assert all(r["link"] != r["hash"] for r in rows)


@pytest.mark.tampers
def test_a_link_changed_is_named_by_row(played):
    target = ChangeLog.objects.filter(action="tables.coup.recorded")[1]
    with superuser() as c:
        c.execute("UPDATE casino_changelog SET link = %s WHERE id = %s",
                  ["ab" * 32, target.pk])
    problem = verify_fails()
    assert f"row {target.pk} (tables.coup.recorded): its public link abababababab" \
        in problem


@pytest.mark.tampers
def test_a_row_and_every_link_after_it_rebuilt_still_fails_on_the_hmac(played):
    """Whoever rewrites a row and recomputes every link after it (he needs no
    key for that) is still caught by the HMAC, the second signature."""
    from casino.trail import CONTENT, link_digest

    target = ChangeLog.objects.filter(action="tables.coup.recorded")[1]
    rows = list(iter_rows(ChangeLog.objects.all()))
    prev = GENESIS
    with superuser() as c:
        for r in rows:
            if r["id"] == target.pk:
                r["new"] = {**r["new"], "commission": "0.00"}
            prev = link_digest(prev_link=prev, **{k: r[k] for k in CONTENT})
            c.execute("UPDATE casino_changelog SET new = %s, link = %s WHERE id = %s",
                      [json.dumps(r["new"]), prev, r["id"]])
    assert f"row {target.pk} (tables.coup.recorded): its content" in verify_fails()


def _apps():
    return MigrationLoader(connection).project_state(
        ("casino", "0011_changelog_link")).apps


@pytest.mark.tampers
def test_the_migration_fills_the_links_of_an_existing_chain(played):
    expected = list(ChangeLog.objects.order_by("id").values_list("id", "link"))
    with superuser() as c:
        c.execute("UPDATE casino_changelog SET link = ''")
    assert not trail_verify().ok
    with superuser() as c:
        if connection.vendor == "postgresql":
            c.execute("SET session_replication_role = origin")  # as migrate runs
        link_migration.fill_links(_apps(), _Editor(c))
    assert list(ChangeLog.objects.order_by("id").values_list("id", "link")) == expected
    check = trail_verify()
    assert check.ok, check.problem


@pytest.mark.tampers
def test_a_broken_chain_stops_the_migration_naming_the_row(played):
    target = ChangeLog.objects.filter(action="tables.coup.recorded")[2]
    with superuser() as c:
        c.execute("UPDATE casino_changelog SET link = '', reason = 'edited' "
                  "WHERE id >= %s", [target.pk])
        c.execute("UPDATE casino_changelog SET link = '' WHERE id < %s",
                  [target.pk])
        if connection.vendor == "postgresql":
            c.execute("SET session_replication_role = origin")
        with pytest.raises(RuntimeError, match=f"at row {target.pk} "):
            link_migration.fill_links(_apps(), _Editor(c))
    # nothing was written: every link is still empty
    assert set(ChangeLog.objects.values_list("link", flat=True)) == {""}


@pytest.mark.postgres
def test_neither_the_runtime_role_nor_the_owner_can_rewrite_a_link(played):
    """The migration switched the append-only trigger off for its one pass:
    it is back on, for the owner too."""
    from django.db import DatabaseError, transaction

    from tests.pgroles import as_owner

    row = ChangeLog.objects.order_by("id").first()
    sql = "UPDATE casino_changelog SET link = %s WHERE id = %s"
    with pytest.raises(DatabaseError, match="permission denied"), \
            transaction.atomic():
        with connection.cursor() as c:
            c.execute(sql, ["0" * 64, row.pk])
    with as_owner() as c:
        with pytest.raises(DatabaseError, match="append-only"), \
                transaction.atomic():
            c.execute(sql, ["0" * 64, row.pk])


@pytest.mark.postgres
def test_the_chain_head_function_gives_hash_and_link(played):
    from casino.trail import ADVISORY_LOCK_KEY, split_head

    head = ChangeLog.objects.order_by("-id").first()
    with connection.cursor() as c:
        c.execute("SELECT casino_chain_head(%s)", [ADVISORY_LOCK_KEY])
        text = c.fetchone()[0]
    assert split_head(text) == (head.hash, head.link)
