from django.apps import AppConfig


class ReportsConfig(AppConfig):
    """Manager reports built by Celery tasks, the exact odds, re-audit."""

    name = "audit.reports"
    label = "reports"
    verbose_name = "Reports"

    def ready(self) -> None:
        # verify_trail asks for the file of every anchor a gaming-day close
        # or a report's stamp records (casino/anchors.py).
        from casino.anchors import recorded_register

        from .anchored import recorded

        recorded_register(recorded)
