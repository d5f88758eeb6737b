"""Roles as groups, and the database's own refusal to change append-only rows.

On PostgreSQL a trigger refuses UPDATE and DELETE on the change log and on the
coup records; Python refuses too (casino.models.AppendOnlyModel), but only the
database guard holds against a direct SQL session.
"""

from django.db import migrations

ROLES = ("croupier", "pitboss", "manager", "auditor")
GUARDED = (
    "casino_changelog", "tables_coup", "tables_stake", "tables_finding",
    "tables_houserules", "tables_tableauversion",
)

FUNCTION = """
CREATE OR REPLACE FUNCTION casino_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'append-only table %: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def guards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION, params=None)
    for table in GUARDED:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION casino_refuse_change();"
        )


def drop_guards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in GUARDED:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table};")


class Migration(migrations.Migration):
    dependencies = [
        ("casino", "0001_initial"),
        ("tables", "0002_seed_tableaux"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [
        migrations.RunPython(roles, migrations.RunPython.noop),
        migrations.RunPython(guards, drop_guards),
    ]
