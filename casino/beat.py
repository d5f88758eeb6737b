"""Beat's scheduler: django-celery-beat's database scheduler, an interval
that is not a whole number of seconds stored in microseconds.

django-celery-beat stores the intervals beat copies from
CELERY_BEAT_SCHEDULE as a whole `every` of seconds: the trail's checkpoints
every 0.5 s (TRAIL_CHECKPOINT_SECONDS) were stored as every 0 seconds, and
once beat read its schedules back from the database (a full read every five
minutes, django_celery_beat's SCHEDULE_SYNC_MAX_INTERVAL) it sent
`trail.checkpoint` as fast as it could loop, some 140 a second, for as long
as it ran (bench/bench_floor.py at 1,000 tables, 2026-12-04). Such an
interval is stored as its microseconds instead (a period django-celery-beat
has), which it reads back as the same timedelta; whole seconds are stored
as before, so the rows of an installation do not change."""

from __future__ import annotations

from celery import schedules
from django_celery_beat.models import IntervalSchedule
from django_celery_beat.schedulers import DatabaseScheduler, ModelEntry


class Entry(ModelEntry):
    @classmethod
    def to_model_schedule(cls, schedule):
        schedule = schedules.maybe_schedule(schedule)
        if type(schedule) is schedules.schedule:
            seconds = schedule.run_every.total_seconds()
            if seconds != int(seconds):
                model, _ = IntervalSchedule.objects.get_or_create(
                    every=round(seconds * 1_000_000),
                    period=IntervalSchedule.MICROSECONDS)
                return model, "interval"
        return super().to_model_schedule(schedule)


class Scheduler(DatabaseScheduler):
    """`celery -A casino beat` (CELERY_BEAT_SCHEDULER)."""

    Entry = Entry
