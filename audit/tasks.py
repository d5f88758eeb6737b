"""Celery tasks of the review side: thin, idempotent, acks_late (as
audit/reports/tasks.py says why)."""

from __future__ import annotations

from datetime import date

from celery import shared_task

from casino.celery import is_hour, message_refused

from .services.ledger_flags import ledger_nightly
from .surveillance.tasks import (  # noqa: F401 (registers them)
    surveillance_live_task,
    surveillance_run_task,
)

TASK = {"acks_late": True, "reject_on_worker_lost": True}


@shared_task(name="audit.verify_ledger", **TASK)
def verify_ledger_task(cutoff_hour: int | None = None,
                       day: str | None = None) -> dict:
    """The previous gaming day (or `day`, YYYY-MM-DD) re-settled from the
    cards; each difference a critical flag, raised once. A forged message
    can only ask for a check (audit/reports/tasks.py says how it is read)."""
    try:
        when = date.fromisoformat(day) if day is not None else None
    except (TypeError, ValueError):
        when = None
        day = f"not a day: {str(day)[:40]!r}"
    if not is_hour(cutoff_hour) or (day is not None and when is None):
        return message_refused("audit.verify_ledger", f"{cutoff_hour!r}, {day!r}")
    summary = ledger_nightly(
        day=when, cutoff_hour=cutoff_hour)
    return {k: v.isoformat() if isinstance(v, date) else v
            for k, v in summary.items()}
