"""The keyed chain and the ledger bound to it (casino/trail.py).

Rows written before this migration were chained with plain SHA-256. Their
chain is verified first (a broken chain stops the migration: it must not be
blessed), then every row is signed again with TRAIL_KEY, in id order. Then the
ledger rows that exist are sealed into the trail by `casino.trail.ledger_sealed`
rows (their digests, a few thousand rows each): from here on, an edit of any
of them is named by verify_trail. On PostgreSQL the append-only trigger is
switched off for the one UPDATE pass and back on in the same transaction.
"""

import hashlib
import json

from django.db import migrations, models
from django.utils import timezone

TRIGGER = "casino_changelog_append_only"


def _legacy_digest(row, prev):
    from casino.trail import _when

    body = [prev, _when(row.at), row.user_id, row.device or "", row.action,
            row.object_type or "", row.object_id or "", row.reason or "", row.old,
            row.new]
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The models bound to the trail by this release (casino/trail.py BOUND as it
# stood): those bound later are sealed by the migrations that bind them
# (casino 0010), from their own state of the models.
BOUND_HERE = (
    "tables.houserules", "tables.shoe", "tables.bankerturn", "tables.coup",
    "tables.stake", "tables.finding", "audit.cagnottecount",
    "audit.cagnotteattestation", "audit.flagevent",
)


def seal(apps, schema_editor):
    from casino.trail import GENESIS, current_key, ledger_baseline, row_digest

    ChangeLog = apps.get_model("casino", "ChangeLog")
    pg = schema_editor.connection.vendor == "postgresql"
    key_id, key = current_key()
    if ChangeLog.objects.exists():
        prev = GENESIS
        for row in ChangeLog.objects.order_by("id").iterator(chunk_size=2000):
            if row.prev_hash != prev or _legacy_digest(row, prev) != row.hash:
                raise RuntimeError(
                    f"change log row {row.pk} does not verify under the old chain: "
                    "run verify_trail on the previous release and investigate "
                    "before upgrading"
                )
            prev = row.hash
        if pg:
            schema_editor.execute(
                f"ALTER TABLE casino_changelog DISABLE TRIGGER {TRIGGER}"
            )
        prev = GENESIS
        for row in ChangeLog.objects.order_by("id").iterator(chunk_size=2000):
            digest = row_digest(
                key=key, prev_hash=prev, at=row.at, user_id=row.user_id,
                device=row.device, action=row.action, object_type=row.object_type,
                object_id=row.object_id, reason=row.reason, old=row.old,
                new=row.new, ledger=None,
            )
            ChangeLog.objects.filter(pk=row.pk).update(
                prev_hash=prev, hash=digest, key_id=key_id
            )
            prev = digest
        if pg:
            schema_editor.execute(
                f"ALTER TABLE casino_changelog ENABLE TRIGGER {TRIGGER}"
            )
    last = ChangeLog.objects.order_by("-id").first()
    prev = last.hash if last else GENESIS
    for entries in ledger_baseline(apps, labels=BOUND_HERE):
        row = dict(
            prev_hash=prev, at=timezone.now(), user_id=None, device="migration",
            action="casino.trail.ledger_sealed", object_type="", object_id="",
            reason="ledger rows written before they were bound to the trail",
            old=None, new={"rows": sum(len(v) for v in entries.values())},
            ledger=entries,
        )
        row["hash"] = prev = row_digest(key=key, **row)
        ChangeLog.objects.create(key_id=key_id, **row)


class Migration(migrations.Migration):

    dependencies = [
        ("casino", "0005_truncate_guards"),
    ]

    operations = [
        migrations.AddField(
            model_name="changelog",
            name="ledger",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="changelog",
            name="key_id",
            field=models.CharField(blank=True, max_length=16),
        ),
        migrations.RunPython(seal, migrations.RunPython.noop),
    ]
