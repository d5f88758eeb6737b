"""The hash-chained trail: every write is a linked row; tampering is named."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from casino.changelog import log_action
from casino.models import ChangeLog
from casino.trail import GENESIS, current_key, link_digest, row_digest, trail_verify

from .conftest import FALSE_DRAW


def verify(*args) -> str:
    out = io.StringIO()
    call_command("verify_trail", *args, stdout=out)
    return out.getvalue()


def raw(sql: str, params=()):
    """Edit the log behind the application's back (the attack we detect): on
    PostgreSQL as a superuser skipping the append-only triggers."""
    if connection.vendor == "postgresql":
        from tests.pgroles import as_superuser

        with as_superuser() as cursor:
            cursor.execute(sql, params)
        return
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_rows_link_into_a_chain(played):
    rows = list(ChangeLog.objects.order_by("id"))
    assert rows[0].prev_hash == GENESIS
    for before, row in zip(rows, rows[1:], strict=False):
        assert row.prev_hash == before.hash and len(row.hash) == 64
    last = rows[-1]
    key_id, key = current_key()
    assert last.key_id == key_id
    assert last.hash == row_digest(
        key=key, prev_hash=last.prev_hash, at=last.at, user_id=last.user_id,
        device=last.device, action=last.action, object_type=last.object_type,
        object_id=last.object_id, reason=last.reason, old=last.old, new=last.new,
        ledger=last.ledger,
    )
    out = verify()
    assert out.startswith(f"Trail intact: {len(rows)} rows; head row {last.pk}")


@pytest.mark.tampers
def test_an_edited_row_is_named(played):
    target = ChangeLog.objects.filter(action="tables.coup.recorded").order_by("id")[1]
    raw("UPDATE casino_changelog SET new = %s WHERE id = %s",
        [json.dumps({"commission": "0.00"}), target.pk])
    with pytest.raises(CommandError) as err:
        verify()
    assert f"row {target.pk} (tables.coup.recorded)" in str(err.value)
    assert "content does not match" in str(err.value)


@pytest.mark.tampers
def test_an_edit_with_a_recomputed_digest_breaks_the_next_link(played):
    rows = list(ChangeLog.objects.order_by("id"))
    i = next(i for i, r in enumerate(rows) if r.user_id is not None)
    target, after = rows[i], rows[i + 1]
    # Whoever holds the key (not a database superuser alone) re-signs one row.
    fake = row_digest(key=current_key()[1], prev_hash=target.prev_hash,
                      at=target.at, user_id=None, device=target.device,
                      action=target.action, object_type=target.object_type,
                      object_id=target.object_id, reason=target.reason,
                      old=target.old, new=target.new, ledger=target.ledger)
    raw("UPDATE casino_changelog SET user_id = NULL, hash = %s WHERE id = %s",
        [fake, target.pk])
    # the row's own public link (SHA-256 over its content) names it first
    check = trail_verify()
    assert check.broken_id == target.pk and "public link" in check.problem
    # its public link recomputed too (it needs no key): the next row's links
    prev = rows[i - 1].link if i else GENESIS
    fake_link = link_digest(prev_link=prev, at=target.at, user_id=None,
                            device=target.device, action=target.action,
                            object_type=target.object_type,
                            object_id=target.object_id, reason=target.reason,
                            old=target.old, new=target.new, ledger=target.ledger)
    raw("UPDATE casino_changelog SET link = %s WHERE id = %s", [fake_link, target.pk])
    check = trail_verify()
    assert check.broken_id == after.pk and "link" in check.problem


@pytest.mark.tampers
def test_a_deleted_row_is_caught(played):
    rows = list(ChangeLog.objects.order_by("id"))
    raw("DELETE FROM casino_changelog WHERE id = %s", [rows[3].pk])
    check = trail_verify()
    assert check.broken_id == rows[4].pk


def test_an_anchor_catches_a_rewritten_chain(played):
    head = trail_verify()
    verify("--anchor", f"{head.head_id}:{head.head_hash}")
    with pytest.raises(CommandError, match="anchor"):
        verify("--anchor", f"{head.head_id}:{'f' * 64}")
    with pytest.raises(CommandError, match="ROW_ID:DIGEST"):
        verify("--anchor", "nonsense")


def test_json_output(played):
    body = json.loads(verify("--json"))
    assert body["ok"] is True and body["broken_id"] is None


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_write_leaves_no_gap(table, shoe, turn, deal):
    with pytest.raises(RuntimeError), transaction.atomic():
        log_action(action="test.rolled_back")
        raise RuntimeError("boom")
    deal(shoe, FALSE_DRAW)
    assert trail_verify().ok


def test_user_and_role_changes_are_logged(db):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("newbie", password="pw-newbie-123")
    user.groups.add(Group.objects.get(name="croupier"))
    user.groups.remove(Group.objects.get(name="croupier"))
    user.is_active = False
    user.save()
    actions = list(ChangeLog.objects.filter(object_id=str(user.pk))
                   .values_list("action", flat=True))
    assert actions == ["auth.user.created", "auth.user.roles_added",
                       "auth.user.roles_removed", "auth.user.changed"]
    last = ChangeLog.objects.filter(action="auth.user.changed").get()
    assert last.old == {"is_active": True} and last.new == {"is_active": False}
    assert "password" not in json.dumps(last.new)
    assert trail_verify().ok


@pytest.mark.postgres
def test_postgres_refuses_edits_of_the_trail_and_the_records(played):
    from django.db import DatabaseError

    from audit.services import flags_sync
    from tests.pgroles import as_owner

    flags_sync()  # a flag and its first event
    for sql in ("UPDATE casino_changelog SET hash = ''",
                "DELETE FROM audit_flagevent",
                "UPDATE tables_coup SET revision = 9"):
        # The runtime role may not; the owner is stopped by the trigger.
        with pytest.raises(DatabaseError, match="permission denied"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql)
        with as_owner(), pytest.raises(DatabaseError, match="append-only"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql)


def test_a_new_tableau_is_a_logged_version(tmp_path, manager, table):
    from tables import services
    from tables.chemmy import STANDARD_TABLEAU
    from tables.models import TableauVersion

    rows = STANDARD_TABLEAU.to_dict()["rows"]
    rows["5"] = list("DSSSSDDDDSS")  # the club draws at 5 against a 4
    path = tmp_path / "club.json"
    path.write_text(json.dumps(rows))
    call_command("tableau_add", "club-1", str(path), "--reason", "club rules",
                 stdout=io.StringIO())
    row = ChangeLog.objects.get(action="tables.tableau.created", reason="club rules")
    assert (row.reason, row.new["version"]) == ("club rules", "club-1")
    rows["9"] = list("DDDDDDDDDDD")
    path.write_text(json.dumps(rows))
    with pytest.raises(CommandError, match="rows"):
        call_command("tableau_add", "club-2", str(path), "--reason", "x")
    services.house_rules_change(table=table, user=manager, reason="club variant",
                                tableau_version="club-1")
    assert TableauVersion.objects.get(version="club-1").rows["5"][5] == "D"
    assert trail_verify().ok


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_never_fork_the_chain(manager, croupier, croupier2):
    """Two tables recording at once, each in its own connection: the advisory
    lock makes them take turns at the head of the chain."""
    import threading
    from decimal import Decimal

    from django.db import connections

    from tables import services

    shoes = []
    for name, user in (("T-A", croupier), ("T-B", croupier2)):
        table = services.table_create(user=manager, name=name)
        session = services.session_open(table=table, user=user)
        shoes.append((services.shoe_open(session=session, user=user), user))
        services.banker_turn_open(session=session, user=user, seat=1,
                                  bank=Decimal("100000"))
    errors = []

    def play(shoe, user):
        try:
            for i in range(15):
                s = "HDCS"[i % 4]
                services.coup_record(
                    shoe_id=shoe.pk, user=user, punter=[f"3{s}", f"4{s}"],
                    banker=[f"2{s}", f"5{s}"],
                    stakes=[services.StakeInput(amount=Decimal("100"), seat=2)])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=play, args=pair) for pair in shoes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    check = trail_verify()
    assert check.ok, check.problem
    assert ChangeLog.objects.filter(action="tables.coup.recorded").count() == 30
