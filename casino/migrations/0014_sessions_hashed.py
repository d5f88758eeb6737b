"""Browser sessions are stored under a digest of their key (casino/sessions.py):
the rows of Django's own store hold the cookies themselves, readable by the
runtime role, and no cookie finds them any more. They go: everyone signs in
again once after the upgrade."""

from django.db import migrations


def forget_plain_sessions(apps, schema_editor):
    apps.get_model("sessions", "Session").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("casino", "0013_sealed_by_index"),
        ("sessions", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(forget_plain_sessions, migrations.RunPython.noop),
    ]
