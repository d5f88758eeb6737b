"""The nightly jobs follow the tables' house rules by themselves: one hourly
beat task (reports.gaming_day_close) closes each gaming day at each cut-off
hour in use, so a manager who sets a new cut-off edits no schedule. It takes
the place of the fixed 06:00 report and 06:30 ledger schedules (migrations
reports 0002 and audit 0003), which are removed here (and put back on the way
down). GamingDayClose records what a close ran, once."""

from django.conf import settings
from django.db import migrations, models

CLOSE = "Gaming-day close: nightly reports and ledger re-settlement (hourly)"
OLD_REPORTS = "Nightly commission reports (cut-off 06:00)"
OLD_LEDGER = "Nightly ledger re-settlement (previous gaming day, cut-off 06:00)"


def create(apps, schema_editor):
    crontabs = apps.get_model("django_celery_beat", "CrontabSchedule")
    tasks = apps.get_model("django_celery_beat", "PeriodicTask")
    tasks.objects.filter(name__in=[OLD_REPORTS, OLD_LEDGER]).delete()
    # Every hour at :15, in the casino's time zone: a day closing at H:00 is
    # closed at H:15 (the margin, NIGHTLY_MARGIN_MINUTES, is 10 minutes).
    hourly, _ = crontabs.objects.get_or_create(
        minute="15", hour="*", day_of_week="*", day_of_month="*",
        month_of_year="*", timezone=settings.TIME_ZONE,
    )
    tasks.objects.get_or_create(
        name=CLOSE,
        defaults={"task": "reports.gaming_day_close", "crontab": hourly,
                  "kwargs": "{}", "enabled": True},
    )


def remove(apps, schema_editor):
    import importlib

    tasks = apps.get_model("django_celery_beat", "PeriodicTask")
    tasks.objects.filter(name=CLOSE).delete()
    importlib.import_module("audit.reports.migrations.0002_schedules").create(
        apps, schema_editor)
    importlib.import_module("audit.migrations.0003_ledger_mismatch").create(
        apps, schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0003_ledger_mismatch"),
        ("reports", "0002_schedules"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.CreateModel(
            name="GamingDayClose",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("anchor", "trail anchored"),
                                                   ("ledger", "ledger re-settled")],
                                          max_length=10)),
                ("cutoff_hour", models.PositiveSmallIntegerField()),
                ("gaming_day", models.DateField()),
                ("done_at", models.DateTimeField()),
                ("summary", models.JSONField(blank=True, default=dict)),
            ],
            options={"ordering": ["gaming_day", "cutoff_hour", "kind"]},
        ),
        migrations.AddConstraint(
            model_name="gamingdayclose",
            constraint=models.UniqueConstraint(
                fields=("kind", "cutoff_hour", "gaming_day"),
                name="gaming_day_close_once"),
        ),
        migrations.RunPython(create, remove),
    ]
