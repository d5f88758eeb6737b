"""Each write's seal lookup (casino_sealed, migrations casino 0010 and 0013)
goes through its index whatever the planner's statistics (issue 33 item 10).

The case that slowed the writes from 55 to 12 coups a second: casino_seal
with autovacuum off and no statistics, the function's plan made (and kept
by PL/pgSQL for the session) while the table was a few rows, then the table
grown. The old function kept a sequential scan and a sort; this one must
show the backward scan of seal_latest. Read from PostgreSQL's own plan of
the function's statement (auto_explain, nested statements)."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from tests.pgroles import as_superuser

pytestmark = pytest.mark.postgres

GROWN = 100_000


def _plans_of(cursor, sql: str) -> list[str]:
    """The plans auto_explain reports (as notices) while `sql` runs."""
    seen: list[str] = []

    def keep(diag) -> None:
        seen.append(diag.message_primary or "")

    raw = connection.connection
    raw.add_notice_handler(keep)
    try:
        cursor.execute(sql)
        cursor.fetchall()
    finally:
        raw.remove_notice_handler(keep)
    return [plan for plan in seen if "plan:" in plan]


def _lookup_plan_after_growth(cursor) -> str:
    """Statistics gone and the table planned small, the plan kept; then the
    table grown a hundred thousand seals, and the lookup planned again."""
    cursor.execute("ALTER TABLE casino_seal SET (autovacuum_enabled = off)")
    cursor.execute("DELETE FROM pg_statistic "
                   "WHERE starelid = 'casino_seal'::regclass")
    # as a fresh install leaves it: a dozen seals on one page, never
    # analysed (the test's transaction takes it all back)
    cursor.execute("TRUNCATE casino_seal")
    cursor.execute("INSERT INTO casino_seal (label, key, log_id) "
                   "SELECT 'tables.table', g::text, g FROM generate_series(1, 12) g")
    cursor.execute("UPDATE pg_class SET reltuples = 12, relpages = 1 "
                   "WHERE oid = 'casino_seal'::regclass")
    cursor.execute("LOAD 'auto_explain'")
    cursor.execute("SET LOCAL auto_explain.log_nested_statements = on")
    cursor.execute("SET LOCAL auto_explain.log_level = notice")
    cursor.execute("SET LOCAL client_min_messages = notice")
    # more than five calls: PL/pgSQL settles on a plan it keeps
    cursor.execute("SELECT casino_sealed('tables.shoe', g::text) "
                   "FROM generate_series(1, 8) g")
    cursor.execute(
        "INSERT INTO casino_seal (label, key, log_id) "
        "SELECT 'tables.shoe', (g %% 1000)::text, g "
        "FROM generate_series(1, %s) g", [GROWN])
    cursor.execute("SET LOCAL auto_explain.log_min_duration = 0")
    plans = _plans_of(cursor, "SELECT casino_sealed('tables.shoe', '5')")
    cursor.execute("SET LOCAL auto_explain.log_min_duration = -1")
    inner = [p for p in plans if "casino_seal s" in p]
    assert inner, plans
    return inner[0]


@pytest.mark.django_db
@pytest.mark.tampers  # seals inserted by hand, rolled back with the test
def test_the_seal_lookup_uses_its_index_without_statistics():
    with as_superuser() as cursor:
        plan = _lookup_plan_after_growth(cursor)
    assert "Index Only Scan Backward using seal_latest" in plan or (
        "Index Scan Backward using seal_latest" in plan), plan
    assert "Seq Scan on casino_seal" not in plan, plan
    assert "Sort" not in plan, plan


@pytest.mark.django_db
@pytest.mark.tampers
def test_the_old_lookup_scanned_the_table_whole():
    """The same case with migration 0010's function: the test above can
    fail (a sequential scan kept from the small table)."""
    old = importlib.import_module("casino.migrations.0013_sealed_by_index")
    with as_superuser() as cursor:
        cursor.execute(old.OLD_FUNCTION)
        plan = _lookup_plan_after_growth(cursor)
    assert "Seq Scan on casino_seal" in plan, plan
