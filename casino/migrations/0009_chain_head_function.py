"""`casino_chain_head(key)`: take the chain lock, then read the head, in one
statement (casino/trail.py). PL/pgSQL runs each statement of a VOLATILE
function with a fresh snapshot, so under READ COMMITTED the read sees the
row the previous lock holder committed. The runtime role may call it (as
everyone may call a function); only the owner may replace it."""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION casino_chain_head(lock_key bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    RETURN (SELECT hash FROM casino_changelog ORDER BY id DESC LIMIT 1);
END;
$$;
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS casino_chain_head(bigint)")


class Migration(migrations.Migration):
    dependencies = [("casino", "0008_forget_clear_tokens")]
    operations = [migrations.RunPython(create, drop)]
