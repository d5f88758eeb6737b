"""The hash chain on the change log (casino/trail.py).

Rows written before this migration are sealed into the chain here, in id
order: the chain vouches for them from the migration on, not before. On
PostgreSQL the append-only trigger is switched off for that one UPDATE pass
and back on in the same transaction.
"""

from django.conf import settings
from django.db import migrations, models

TRIGGER = "casino_changelog_append_only"


def seal(apps, schema_editor):
    from casino.trail import GENESIS, row_digest

    ChangeLog = apps.get_model("casino", "ChangeLog")
    pg = schema_editor.connection.vendor == "postgresql"
    if not ChangeLog.objects.exists():
        return
    if pg:
        schema_editor.execute(f"ALTER TABLE casino_changelog DISABLE TRIGGER {TRIGGER}")
    prev = GENESIS
    for row in ChangeLog.objects.order_by("id").iterator(chunk_size=2000):
        digest = row_digest(
            prev_hash=prev, at=row.at, user_id=row.user_id, device=row.device,
            action=row.action, object_type=row.object_type, object_id=row.object_id,
            reason=row.reason, old=row.old, new=row.new,
        )
        ChangeLog.objects.filter(pk=row.pk).update(prev_hash=prev, hash=digest)
        prev = digest
    if pg:
        schema_editor.execute(f"ALTER TABLE casino_changelog ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):

    dependencies = [
        ('casino', '0002_roles_and_guards'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='changelog',
            name='hash',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name='changelog',
            name='prev_hash',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(seal, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='changelog',
            constraint=models.UniqueConstraint(condition=models.Q(('prev_hash', ''), _negated=True), fields=('prev_hash',), name='changelog_chain_no_fork'),
        ),
    ]
