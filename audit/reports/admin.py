"""Admin: report jobs (read-only) and the beat schedules, with every schedule
change written to the change log in the same transaction."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django_celery_beat.admin import PeriodicTaskAdmin
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from casino.changelog import log_action

from .models import ReauditRun, ReportJob

SCHEDULE_FIELDS = ("name", "task", "enabled", "kwargs", "args", "one_off")


def schedule_state(task: PeriodicTask | None) -> dict | None:
    if task is None or task.pk is None:
        return None
    state = {f: getattr(task, f) for f in SCHEDULE_FIELDS}
    state["schedule"] = str(task.crontab or task.interval or task.clocked or "")
    return state


class LoggedPeriodicTaskAdmin(PeriodicTaskAdmin):
    def save_model(self, request, obj, form, change):
        old = schedule_state(PeriodicTask.objects.filter(pk=obj.pk).first())
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            log_action(action="reports.schedule.changed" if change
                       else "reports.schedule.created", user=request.user,
                       device="admin", obj=obj, old=old, new=schedule_state(obj))

    def delete_model(self, request, obj):
        with transaction.atomic():
            log_action(action="reports.schedule.deleted", user=request.user,
                       device="admin", obj=obj, old=schedule_state(obj))
            super().delete_model(request, obj)


class LoggedCrontabAdmin(admin.ModelAdmin):
    def save_model(self, request, obj, form, change):
        old = None
        if change:
            old = str(CrontabSchedule.objects.get(pk=obj.pk))
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            log_action(action="reports.schedule.crontab_changed", user=request.user,
                       device="admin", obj=obj, old=old, new=str(obj))


admin.site.unregister(PeriodicTask)
admin.site.register(PeriodicTask, LoggedPeriodicTaskAdmin)
admin.site.unregister(CrontabSchedule)
admin.site.register(CrontabSchedule, LoggedCrontabAdmin)


@admin.register(ReportJob)
class ReportJobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "format", "status", "percent", "source",
                    "requested_by", "requested_at")
    list_filter = ("kind", "status", "source")

    def has_add_permission(self, request):
        return False  # requests go through the service (logged, dispatched)

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ReauditRun)
class ReauditRunAdmin(admin.ModelAdmin):
    list_display = ("id", "from_day", "to_day", "tableau_version", "status",
                    "coups_checked", "findings_new", "findings_cleared")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
