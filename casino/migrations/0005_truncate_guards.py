"""Every append-only table refuses TRUNCATE (a statement trigger: row triggers
do not fire on TRUNCATE) and UPDATE/DELETE (row triggers; re-audit findings
had none). The runtime role holds no TRUNCATE privilege anyway
(casino/dbroles.py); these hold even for the tables' owner."""

from django.db import migrations

TABLES = (
    "casino_changelog", "tables_tableauversion", "tables_houserules", "tables_coup",
    "tables_stake", "tables_finding", "audit_cagnottecount",
    "audit_cagnotteattestation", "audit_flagevent", "reports_reauditfinding",
)


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from casino.dbroles import guards_install

    guards_install(schema_editor.connection, TABLES)


def remove(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f'DROP TRIGGER IF EXISTS "{table}_no_truncate" ON "{table}"')


class Migration(migrations.Migration):
    dependencies = [
        ("casino", "0004_bench_row"),
        ("tables", "0005_coup_redundant_indexes"),
        ("audit", "0002_review"),
        ("reports", "0003_attempts_and_finding_once"),
    ]
    operations = [migrations.RunPython(install, remove)]
