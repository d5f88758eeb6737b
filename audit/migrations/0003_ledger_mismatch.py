"""Flags of a new kind, `ledger` (code ledger_mismatch): a stored value the
nightly re-settlement found differing from the cards, stakes and house rules;
and that nightly run's schedule, editable in the admin like the reports'."""

from django.conf import settings
from django.db import migrations, models

NIGHTLY = "Nightly ledger re-settlement (previous gaming day, cut-off 06:00)"


def create(apps, schema_editor):
    crontabs = apps.get_model("django_celery_beat", "CrontabSchedule")
    tasks = apps.get_model("django_celery_beat", "PeriodicTask")
    # Half an hour after the cut-off and the nightly commission reports.
    at_six_thirty, _ = crontabs.objects.get_or_create(
        minute="30", hour="6", day_of_week="*", day_of_month="*",
        month_of_year="*", timezone=settings.TIME_ZONE,
    )
    tasks.objects.get_or_create(
        name=NIGHTLY,
        defaults={"task": "audit.verify_ledger", "crontab": at_six_thirty,
                  "kwargs": '{"cutoff_hour": 6}', "enabled": True},
    )


def remove(apps, schema_editor):
    tasks = apps.get_model("django_celery_beat", "PeriodicTask")
    tasks.objects.filter(name=NIGHTLY).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_review"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.AlterField(
            model_name="flag",
            name="kind",
            field=models.CharField(
                choices=[
                    ("finding", "Finding"),
                    ("cagnotte", "Cagnotte"),
                    ("structure", "Structure"),
                    ("ledger", "ledger mismatch"),
                ],
                max_length=10,
            ),
        ),
        migrations.RunPython(create, remove),
    ]
