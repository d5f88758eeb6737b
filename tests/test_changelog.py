"""The change log and the coup records refuse change, in Python and in PostgreSQL."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import DatabaseError, connection, transaction

from casino.changelog import log_action
from casino.models import AppendOnlyError, ChangeLog
from tables import services


@pytest.mark.django_db(transaction=True)
def test_log_action_must_share_the_callers_transaction():
    with pytest.raises(RuntimeError):
        log_action(action="x.y")
    assert ChangeLog.objects.filter(action="x.y").count() == 0


def test_log_rows_refuse_update_and_delete_in_python(table):
    row = ChangeLog.objects.filter(action="tables.table.created").get()
    row.reason = "tampered"
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        ChangeLog.objects.all().delete()


def test_every_floor_write_is_logged(shoe, turn, croupier):
    services.coup_record(
        shoe_id=shoe.pk,
        user=croupier,
        punter=["2H", "3D"],
        banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("100"), seat=2)],
        device="tab-3",
    )
    services.banker_turn_pass(turn=turn, user=croupier)
    # (user and role changes are logged too: tests/audit/test_trail.py; the
    # tableaux, put back after a flush, by tests/conftest.py _migration_rows)
    actions = list(
        ChangeLog.objects.filter(action__startswith="tables.")
        .exclude(action="tables.tableau.created")
        .values_list("action", flat=True)
    )
    assert actions == [
        "tables.table.created",
        "tables.house_rules.changed",
        "tables.session.opened",
        "tables.shoe.opened",
        "tables.turn.opened",
        "tables.coup.recorded",
        "tables.turn.passed",
    ]


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE casino_changelog SET reason = 'tampered'",
        "DELETE FROM casino_changelog",
        "UPDATE tables_coup SET commission = 0",
        "DELETE FROM tables_stake",
        "UPDATE tables_finding SET code = 'nothing'",
        "UPDATE tables_houserules SET commission_rate = 0",
    ],
)
def test_postgres_triggers_refuse_direct_sql(shoe, turn, croupier, sql):
    services.coup_record(
        shoe_id=shoe.pk,
        user=croupier,
        punter=["2H", "2D", "6C"],
        banker=["3S", "2C"],
        stakes=[services.StakeInput(amount=Decimal("100"), seat=2)],
    )
    # The runtime role the app connects as holds no such privilege at all...
    with pytest.raises(DatabaseError, match="permission denied"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
    # ...and the trigger refuses the owner too (a second line).
    from tests.pgroles import as_owner

    with as_owner(), pytest.raises(DatabaseError, match="append-only"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql)
