"""Continuity (casino/continuity.py): the seal index of the trail, the
PostgreSQL function that reads a row's last sealed digest, and the rows now
bound that were not before (tables, sessions, tableau versions, gaming-day
closes, users, groups and grants, API tokens, tablet profiles, beat's
schedules) sealed as they stand into the trail, as migration 0006 sealed the
ledger. The chain is verified first: a broken chain is not blessed."""

from django.db import migrations, models
from django.utils import timezone

# VOLATILE, in PL/pgSQL: its read takes a fresh snapshot, so that called
# after a row lock (the lock statements of tables/services/ledger_pg.py call
# it on the rows their subquery locked) it sees the seal the previous holder
# of that lock committed, as casino_chain_head (0009) sees the head. STABLE,
# it would read the statement's snapshot, older than the lock: two coups on
# one shoe would find the shoe newer than its seal.
FUNCTION = """
CREATE OR REPLACE FUNCTION casino_sealed(seal_label text, seal_key text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN (
        SELECT CASE jsonb_typeof(e) WHEN 'array' THEN e ->> 1 ELSE e #>> '{}' END
        FROM (SELECT c.ledger -> seal_label -> seal_key AS e
              FROM casino_changelog c
              WHERE c.id = (SELECT s.log_id FROM casino_seal s
                            WHERE s.label = seal_label AND s.key = seal_key
                            ORDER BY s.log_id DESC LIMIT 1)) x
    );
END;
$$;
"""

NEWLY_BOUND = (
    "tables.tableauversion", "tables.table", "tables.tablesession",
    "audit.gamingdayclose", "auth.user", "auth.group", "auth.user_groups",
    "auth.group_permissions", "auth.user_user_permissions", "casino.apitoken",
    "tablet.tabletprofile", "django_celery_beat.periodictask",
    "django_celery_beat.crontabschedule", "django_celery_beat.intervalschedule",
    "django_celery_beat.solarschedule", "django_celery_beat.clockedschedule",
)


def seal(apps, schema_editor):
    from casino.trail import (
        GENESIS,
        INDEXED,
        current_key,
        ledger_baseline,
        row_digest,
        seal_index,
        trail_keys,
        verify_rows,
    )

    ChangeLog = apps.get_model("casino", "ChangeLog")
    Seal = apps.get_model("casino", "Seal")
    fields = ("id", "at", "user_id", "device", "action", "object_type",
              "object_id", "reason", "old", "new", "ledger", "prev_hash", "hash",
              "key_id")
    rows = ChangeLog.objects.order_by("id").values(*fields).iterator(chunk_size=2000)
    # the public link comes later (casino 0011), which checks it
    check = verify_rows(rows, keys=trail_keys(), links=False)
    if not check.ok:
        raise RuntimeError(
            f"the change log does not verify ({check.problem}): investigate "
            "before upgrading"
        )
    # what the trail holds already: the last row naming each indexed row
    known: dict = {}
    last: dict = {}
    for log_id, ledger in ChangeLog.objects.order_by("id").values_list(
        "id", "ledger"
    ).iterator(chunk_size=2000):
        for label, entries in (ledger or {}).items():
            known.setdefault(label, set()).update(entries)
            if label in INDEXED:
                for key in entries:
                    last[(label, key)] = log_id
    key_id, key = current_key()
    head = ChangeLog.objects.order_by("-id").first()
    prev = head.hash if head else GENESIS
    for entries in ledger_baseline(apps, labels=NEWLY_BOUND, skip=known):
        row = dict(
            prev_hash=prev, at=timezone.now(), user_id=None, device="migration",
            action="casino.trail.ledger_sealed", object_type="", object_id="",
            reason="rows bound to the trail from this release, sealed as they stood",
            old=None, new={"rows": sum(len(v) for v in entries.values())},
            ledger=entries,
        )
        row["hash"] = prev = row_digest(key=key, **row)
        log = ChangeLog.objects.create(key_id=key_id, **row)
        for pair in seal_index(entries):
            last[pair] = log.pk
    Seal.objects.bulk_create(
        [Seal(label=label, key=k, log_id=log_id)
         for (label, k), log_id in sorted(last.items())],
        batch_size=5000,
    )


def create_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FUNCTION)


def drop_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS casino_sealed(text, text)")


class Migration(migrations.Migration):

    dependencies = [
        ("casino", "0009_chain_head_function"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("tables", "0011_rollup_grains"),
        ("audit", "0006_flag_kind_shoe"),
        ("reports", "0006_reaudit_data_position"),
        ("tablet", "0003_tablet_profile_theme"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.CreateModel(
            name="Seal",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("label", models.CharField(max_length=64)),
                ("key", models.CharField(max_length=128)),
                ("log_id", models.BigIntegerField()),
            ],
            options={
                "indexes": [models.Index(fields=["label", "key", "log_id"],
                                         name="seal_latest")],
            },
        ),
        migrations.RunPython(create_function, drop_function),
        migrations.RunPython(seal, migrations.RunPython.noop),
    ]
