"""Migration tables 0011 fills the reports' rollup grains of an existing
database: from the cells, and from the coups for a table-day played under two
house-rules versions. The rows it writes equal what the coup path writes."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from tables.models import Coup, CroupierMonthRollup, SeatMonthRollup, TableDayRollup
from tables.rollups import GRAINS, rollup_snapshot, rollups_hold
from tables.services import house_rules_change
from tests.insider.test_verify_ledger import tamper

from .conftest import DAY1, DAY2, at, evening, play

pytestmark = pytest.mark.django_db


@pytest.mark.tampers  # empties the grains as a database before 0011 had them
def test_the_backfill_writes_what_the_coup_path_writes(croupier, croupier2, manager):
    play(croupier, DAY1, tables=2, seed=21, rate=0.05, prefix="B")
    play(croupier2, DAY2, tables=2, seed=22, rate=0.05, prefix="B")
    # a table-day of two versions: a session before and one after a change
    from tables.models import Table

    table = Table.objects.filter(name__startswith="B").order_by("pk").first()
    play(croupier, DAY2, seed=21, prefix="B")  # its session under version 1
    with at(evening(DAY2, 23)):
        house_rules_change(table=table, user=manager, reason="eight decks", decks=8)
    play(croupier, DAY2, seed=21, prefix="B")  # a new session: version 2
    assert TableDayRollup.objects.filter(table=table, gaming_day=DAY2).count() == 2
    assert rollups_hold() == []
    written = {g.model: rollup_snapshot(g.model) for g in GRAINS[1:]}

    for model in (TableDayRollup, CroupierMonthRollup, SeatMonthRollup):
        tamper(f"DELETE FROM {model._meta.db_table}")
    assert not TableDayRollup.objects.exists()
    migration = importlib.import_module("tables.migrations.0011_rollup_grains")
    migration.backfill(apps, None)

    assert {g.model: rollup_snapshot(g.model) for g in GRAINS[1:]} == written
    assert rollups_hold() == []
    assert sum(r["coups"] for r in written[TableDayRollup].values()) == (
        Coup.objects.count())
