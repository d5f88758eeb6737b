"""casino_sealed (migration 0010) reads casino_seal through its index
whatever the planner's statistics say (issue 33 item 10).

PL/pgSQL keeps a statement's plan for the session: planned while casino_seal
was a few rows (a fresh install, statistics never gathered, autovacuum off),
the lookup was a sequential scan and a sort, and it stayed one while the
table grew to millions of rows, since nothing invalidated it (55 -> 12 coups
a second at 16k coups). The function now plans without sequential scans,
bitmap scans and sorts (its own settings, for its own statements only), which
leaves the backward scan of seal_latest (label, key, log_id) that stops at
the first row: the same plan at 12 rows and at a million, with or without
statistics. bench/bench_seal.py measures it; tests/insider/
test_seal_lookup_plan.py checks the plan."""

from django.db import migrations

BODY = """
RETURNS text LANGUAGE plpgsql VOLATILE{settings} AS $$
BEGIN
    RETURN (
        SELECT CASE jsonb_typeof(e) WHEN 'array' THEN e ->> 1 ELSE e #>> '{{}}' END
        FROM (SELECT c.ledger -> seal_label -> seal_key AS e
              FROM casino_changelog c
              WHERE c.id = (SELECT s.log_id FROM casino_seal s
                            WHERE s.label = seal_label AND s.key = seal_key
                            ORDER BY s.log_id DESC LIMIT 1)) x
    );
END;
$$;
"""
HEAD = "CREATE OR REPLACE FUNCTION casino_sealed(seal_label text, seal_key text)"
# Only the index is left to the planner: no sequential scan, no bitmap scan
# (it would fetch every seal of a row, thousands for a shoe, then sort them).
BY_INDEX = ("\nSET enable_seqscan = off SET enable_bitmapscan = off "
            "SET enable_sort = off")
FUNCTION = HEAD + BODY.format(settings=BY_INDEX)
OLD_FUNCTION = HEAD + BODY.format(settings="")


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(OLD_FUNCTION)


class Migration(migrations.Migration):

    dependencies = [("casino", "0012_anchor_records")]

    operations = [migrations.RunPython(forward, backward)]
