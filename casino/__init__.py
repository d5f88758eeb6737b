"""Casino project package: settings, URLs, the Celery app, roles, the change log."""

from .celery import app as celery_app

__all__ = ["celery_app"]
