"""The change log's public link (casino/trail.py, issue 25 item 3): a plain
SHA-256 chain over each row's content and the previous row's link, beside the
keyed HMAC chain.

The existing chain is verified first (links, keys, digests): a broken chain
stops the migration, naming the row, and is not blessed with links. Then
every row's link is filled in id order. The append-only trigger refuses the
UPDATE even to the owner, so it is switched off for this one pass and back on
in the same transaction (the owner runs migrations; the runtime role can do
neither). Last, casino_chain_head (0009) returns the head's hash || link, so
that every writer links the next row's both chains from one read.
"""

from django.db import migrations, models

TRIGGER = "casino_changelog_append_only"

FUNCTION = """
CREATE OR REPLACE FUNCTION casino_chain_head(lock_key bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    RETURN (SELECT hash || link FROM casino_changelog ORDER BY id DESC LIMIT 1);
END;
$$;
"""

FUNCTION_BEFORE = """
CREATE OR REPLACE FUNCTION casino_chain_head(lock_key bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    RETURN (SELECT hash FROM casino_changelog ORDER BY id DESC LIMIT 1);
END;
$$;
"""

COLUMNS = ("id", "at", "user_id", "device", "action", "object_type", "object_id",
           "reason", "old", "new", "ledger", "prev_hash", "hash", "key_id")


def fill_links(apps, schema_editor):
    """Verify the chain, then give every row its link, in id order."""
    from casino.trail import CONTENT, GENESIS, link_digest, trail_keys, verify_rows

    ChangeLog = apps.get_model("casino", "ChangeLog")

    def rows():
        return ChangeLog.objects.order_by("id").values(*COLUMNS).iterator(
            chunk_size=2000)

    check = verify_rows(rows(), keys=trail_keys(), links=False)
    if not check.ok:
        raise RuntimeError(
            f"the change log does not verify at row {check.broken_id} "
            f"({check.problem}): investigate before upgrading; no link was "
            "written"
        )
    pg = schema_editor.connection.vendor == "postgresql"
    if pg:
        schema_editor.execute(f"ALTER TABLE casino_changelog DISABLE TRIGGER {TRIGGER}")
    prev = GENESIS
    batch: list[tuple[str, int]] = []
    with schema_editor.connection.cursor() as cursor:
        for r in rows():
            prev = link_digest(prev_link=prev, **{k: r[k] for k in CONTENT})
            batch.append((prev, r["id"]))
            if len(batch) == 2000:
                cursor.executemany(
                    "UPDATE casino_changelog SET link = %s WHERE id = %s", batch)
                batch = []
        if batch:
            cursor.executemany(
                "UPDATE casino_changelog SET link = %s WHERE id = %s", batch)
    if pg:
        schema_editor.execute(f"ALTER TABLE casino_changelog ENABLE TRIGGER {TRIGGER}")


def create_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION)


def restore_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION_BEFORE)


class Migration(migrations.Migration):

    dependencies = [("casino", "0010_continuity")]

    operations = [
        migrations.AddField(
            model_name="changelog",
            name="link",
            field=models.CharField(blank=True, max_length=64, default="",
                                   db_default=""),
        ),
        migrations.RunPython(fill_links, migrations.RunPython.noop),
        migrations.RunPython(create_function, restore_function),
    ]
