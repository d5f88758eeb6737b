"""Celery task of the surveillance: thin (takes the run's id, calls the
service), idempotent, acks_late (audit/reports/tasks.py says why). Registered
with the worker through audit/tasks.py (autodiscovery imports that module)."""

from __future__ import annotations

from celery import shared_task

from casino.celery import is_id, message_refused

TASK = {"acks_late": True, "reject_on_worker_lost": True}


@shared_task(name="audit.surveillance_run", **TASK)
def surveillance_run_task(run_id: int) -> dict:
    if not is_id(run_id):
        return message_refused("audit.surveillance_run", f"run id {run_id!r}")
    from .runs import surveillance_execute

    run = surveillance_execute(run_id=run_id)
    if run is None:
        return {"run": run_id, "status": "missing"}
    return {"run": run.pk, "status": run.status, "coups": run.coups,
            "alerts": run.alerts}


@shared_task(name="audit.surveillance_live", **TASK)
def surveillance_live_task(shoe_id: int | None = None) -> dict:
    """One look of the live surveillance at the open gaming day (beat, every
    SURVEILLANCE_LIVE_SECONDS; and each shoe's close, naming its shoe). A
    look delivered twice raises nothing twice (live.py's lock and idents)."""
    if shoe_id is not None and not is_id(shoe_id):
        return message_refused("audit.surveillance_live", f"shoe id {shoe_id!r}")
    from .live import live_look

    out = live_look()
    return {**out, "shoe": shoe_id} if shoe_id is not None else out
