"""The schedules every installation starts with, editable in the admin:
the nightly commission reports at the default cut-off hour (06:00), and a
sweep that sends report jobs the broker missed while it was down."""

from django.conf import settings
from django.db import migrations

NIGHTLY = "Nightly commission reports (cut-off 06:00)"
SWEEP = "Send report jobs the queue missed"


def create(apps, schema_editor):
    Crontab = apps.get_model("django_celery_beat", "CrontabSchedule")
    Interval = apps.get_model("django_celery_beat", "IntervalSchedule")
    Task = apps.get_model("django_celery_beat", "PeriodicTask")
    at_six, _ = Crontab.objects.get_or_create(
        minute="0", hour="6", day_of_week="*", day_of_month="*",
        month_of_year="*", timezone=settings.TIME_ZONE,
    )
    Task.objects.get_or_create(
        name=NIGHTLY,
        defaults={"task": "reports.nightly", "crontab": at_six,
                  "kwargs": '{"cutoff_hour": 6}', "enabled": True},
    )
    every_2, _ = Interval.objects.get_or_create(every=2, period="minutes")
    Task.objects.get_or_create(
        name=SWEEP,
        defaults={"task": "reports.dispatch_pending", "interval": every_2,
                  "enabled": True},
    )


def remove(apps, schema_editor):
    Task = apps.get_model("django_celery_beat", "PeriodicTask")
    Task.objects.filter(name__in=[NIGHTLY, SWEEP]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("reports", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]
    operations = [migrations.RunPython(create, remove)]
