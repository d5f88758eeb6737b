"""A database superuser without the trail key edits the records (issue 11,
findings 2 and 3): every edit is named by verify_trail, which exits non-zero.

The superuser skips every trigger (`session_replication_role = replica`) on
the test's own connection, so the edit lands in the same transaction as the
coups it tampers with (tests/pgroles.py). Without PostgreSQL the same edits
are plain SQL on SQLite, where there are no triggers to skip."""

from __future__ import annotations

import io
import json
from contextlib import contextmanager

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from casino.anchors import trail_anchor
from casino.models import ChangeLog
from casino.trail import GENESIS, trail_verify
from tables.models import BankerTurn, Coup, Finding, Stake
from tests.audit.conftest import BANKER_WINS, stake

# These tests edit the records behind the app's back on purpose.
pytestmark = pytest.mark.tampers


@contextmanager
def superuser():
    if connection.vendor == "postgresql":
        from tests.pgroles import as_superuser

        with as_superuser() as cursor:
            yield cursor
    else:
        with connection.cursor() as cursor:
            yield cursor


def verify_fails() -> str:
    out = io.StringIO()
    with pytest.raises(CommandError) as err:
        call_command("verify_trail", stdout=out)
    return str(err.value)


def test_honest_play_verifies(played):
    out = io.StringIO()
    call_command("verify_trail", stdout=out)
    # 4 coups, their stakes and findings, the turn, the shoe, the house rules.
    assert "Trail intact" in out.getvalue()
    assert trail_verify().ledger_rows >= 4 + 4 + 1 + 1 + 1


def test_a_commission_raised_is_named(played):
    coup = played[0]
    with superuser() as c:
        c.execute("UPDATE tables_coup SET commission = 50 WHERE id = %s", [coup.pk])
    problem = verify_fails()
    assert f"coup {coup.pk}: differs from what trail row" in problem


def test_stakes_times_ten_are_named(played):
    first = Stake.objects.filter(coup=played[1]).order_by("id").first()
    with superuser() as c:
        c.execute("UPDATE tables_stake SET amount = amount * 10, "
                  "covered = covered * 10")
    problem = verify_fails()
    assert "stake" in problem and "differs" in problem
    assert f"stake {first.pk} (coup {played[1].pk}#0)" in trail_verify().problems[1]


def test_a_finding_edited_or_removed_is_named(played):
    finding = Finding.objects.get(coup=played[1], code="false_draw")
    with superuser() as c:
        c.execute("UPDATE tables_finding SET severity = 'info' WHERE id = %s",
                  [finding.pk])
    assert f"finding {finding.pk}" in verify_fails()
    with superuser() as c:
        # with its review flag (raised in the coup's transaction)
        c.execute("DELETE FROM audit_flagevent WHERE flag_id IN (SELECT id FROM "
                  "audit_flag WHERE finding_id = %s)", [finding.pk])
        c.execute("DELETE FROM audit_flag WHERE finding_id = %s", [finding.pk])
        c.execute("DELETE FROM tables_finding WHERE id = %s", [finding.pk])
    assert f"finding {played[1].pk}#0: written by trail row" in verify_fails()


def test_a_turn_and_a_shoe_edited_are_named(played):
    turn = BankerTurn.objects.get()
    with superuser() as c:
        c.execute("UPDATE tables_bankerturn SET bank = bank + 100 WHERE id = %s",
                  [turn.pk])
    assert f"bankerturn {turn.pk}: differs" in verify_fails()


def test_a_coup_inserted_behind_the_apps_back_is_named(played):
    """The runtime role may INSERT (the app does): a row that no service
    wrote has no trail row, and is named."""
    copy = Coup.objects.get(pk=played[0].pk)
    copy.pk, copy.seq = None, 99
    copy._state.adding = True
    Coup.objects.bulk_create([copy])
    assert f"coup {copy.pk}: no trail row wrote it" in verify_fails()


def test_a_log_row_edited_is_named(played):
    target = ChangeLog.objects.filter(action="tables.coup.recorded")[1]
    with superuser() as c:
        c.execute("UPDATE casino_changelog SET new = %s WHERE id = %s",
                  [json.dumps({"commission": "0.00"}), target.pk])
    assert f"row {target.pk} (tables.coup.recorded): its content" in verify_fails()


def test_a_chain_rebuilt_without_the_key_fails(played, settings):
    """The superuser recomputes every digest, as the unkeyed chain allowed:
    without TRAIL_KEY he can only sign with a key of his own."""
    from casino.trail import CONTENT, iter_rows, row_digest

    target = ChangeLog.objects.filter(action="tables.coup.recorded").first()
    rows = list(iter_rows(ChangeLog.objects.all()))
    prev = GENESIS
    with superuser() as c:
        for r in rows:
            if r["id"] == target.pk:
                r["new"] = {**r["new"], "commission": "0.00"}
            content = {k: r[k] for k in CONTENT}
            content["prev_hash"] = prev
            prev = row_digest(key=b"a guess at the key", **content)
            c.execute("UPDATE casino_changelog SET new = %s, prev_hash = %s, "
                      "hash = %s WHERE id = %s",
                      [json.dumps(r["new"]), content["prev_hash"], prev, r["id"]])
    assert f"row {rows[0]['id']} (" in verify_fails()
    assert "its content does not match its digest" in verify_fails()


def test_a_whole_coup_deleted_with_its_log_row_is_caught(played):
    coup = played[1]
    row = ChangeLog.objects.get(action="tables.coup.recorded", object_id=str(coup.pk))
    after = ChangeLog.objects.filter(id__gt=row.pk).order_by("id").first()
    with superuser() as c:
        for table in ("tables_finding", "tables_stake"):
            c.execute(f"DELETE FROM {table} WHERE coup_id = %s", [coup.pk])
        c.execute("DELETE FROM audit_flagevent WHERE flag_id IN (SELECT id FROM "
                  "audit_flag WHERE coup_id = %s)", [coup.pk])
        c.execute("DELETE FROM audit_flag WHERE coup_id = %s", [coup.pk])
        c.execute("DELETE FROM tables_coup WHERE id = %s", [coup.pk])
        c.execute("DELETE FROM casino_changelog WHERE id = %s", [row.pk])
    check = trail_verify()
    assert check.broken_id == after.pk and "link" in check.problem
    assert f"row {after.pk}" in verify_fails()


def test_the_last_coup_deleted_with_its_log_row_is_caught(played):
    """Cut at the very end, the chain still links: the shoe and the turn the
    coup moved on still say so, and their digests no longer match."""
    coup = played[-1]
    row = ChangeLog.objects.order_by("-id").first()
    assert row.object_id == str(coup.pk)
    with superuser() as c:
        for table in ("tables_finding", "tables_stake"):
            c.execute(f"DELETE FROM {table} WHERE coup_id = %s", [coup.pk])
        c.execute("DELETE FROM tables_coup WHERE id = %s", [coup.pk])
        c.execute("DELETE FROM casino_changelog WHERE id = %s", [row.pk])
    problems = trail_verify().problems
    assert any("shoe" in p and "differs" in p for p in problems), problems
    assert any("bankerturn" in p and "differs" in p for p in problems), problems


def test_a_deleted_tail_is_caught_by_the_anchors_on_file(played, deal, shoe):
    """Finding 3: no --anchor typed by anyone; the anchor the beat task wrote
    is read by verify_trail itself."""
    anchored = trail_anchor(reason="interval")
    deal(shoe, BANKER_WINS, [stake("100")])
    head = ChangeLog.objects.order_by("-id").first()
    with superuser() as c:
        # Everything from the anchored row on, with the ledger rows it wrote
        # and the state rolled back, so that only the anchor can tell.
        c.execute("DELETE FROM casino_changelog WHERE id >= %s", [anchored.row])
        c.execute("DELETE FROM audit_flagevent")
        c.execute("DELETE FROM audit_flag")
        c.execute("DELETE FROM tables_finding")
        c.execute("DELETE FROM tables_stake")
        c.execute("DELETE FROM tables_coup")
    problem = verify_fails()
    assert f"row {anchored.row} of an anchor is missing" in problem
    assert head.pk > anchored.row


def test_the_log_truncated_by_a_superuser_is_caught(played):
    trail_anchor(reason="gaming-day close")
    with superuser() as c:
        c.execute("DELETE FROM casino_changelog")
    problem = verify_fails()
    assert "of an anchor is missing" in problem
    check = trail_verify(anchors=False)  # even with every anchor lost:
    assert not check.ok and "no trail row wrote it" in check.problem


def test_verify_endpoint_reports_the_break(played, auditor, as_user):
    with superuser() as c:
        c.execute("UPDATE tables_coup SET commission = 50 WHERE id = %s",
                  [played[0].pk])
    body = as_user(auditor).get("/api/v1/trail/verify/").json()
    assert body["ok"] is False and f"coup {played[0].pk}" in body["problem"]
