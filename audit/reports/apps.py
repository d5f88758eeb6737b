from django.apps import AppConfig


class ReportsConfig(AppConfig):
    """Manager reports built by Celery tasks, the exact odds, re-audit."""

    name = "audit.reports"
    label = "reports"
    verbose_name = "Reports"
