"""Celery tasks: thin. Each takes ids, calls a service and returns a summary.

acks_late: a worker that dies mid-task leaves the message to be delivered
again, and every service here is idempotent (a built job, a done chunk is
left as it is), so a redelivery is harmless. A pool child killed (OOM,
SIGKILL): the worker puts the message back at once (reject_on_worker_lost).
The whole worker killed: the message waits, unacked in Redis, until a worker
finds it older than CELERY_VISIBILITY_TIMEOUT. A report job written by two
deliveries at once is published by the latest only (services.report_build);
a re-audit chunk is one transaction on its locked row. Proven with real
workers killed mid-task: tests/reports/test_worker_lost.py.

A message is no authority (casino/celery.py, "what a message may ask"):
each task takes ids whose rows say what to do (a report job must be the one
the trail sealed: services._claim), or arguments from a fixed set; a message
asking anything else is refused with a warning and does nothing.
"""

from __future__ import annotations

from celery import shared_task

from casino.celery import is_hour, is_id, message_refused

from . import nightly, reaudit, services

TASK = {"acks_late": True, "reject_on_worker_lost": True}
FORMATS = ("pdf", "csv", "xlsx")  # what the nightly report is written as


@shared_task(name="reports.build", **TASK)
def report_build_task(job_id: int) -> dict:
    if not is_id(job_id):
        return message_refused("reports.build", f"job id {job_id!r}")
    job = services.report_build(job_id=job_id)
    if job is None:
        return {"job": job_id, "status": "missing"}
    return {"job": job.pk, "status": job.status, "rows": job.rows}


@shared_task(name="reports.reaudit_start", **TASK)
def reaudit_start_task(run_id: int) -> dict:
    if not is_id(run_id):
        return message_refused("reports.reaudit_start", f"run id {run_id!r}")
    return {"run": run_id, "chunks": reaudit.reaudit_launch(run_id=run_id)}


@shared_task(name="reports.reaudit_chunk", **TASK)
def reaudit_chunk_task(run_id: int, index: int) -> dict:
    if not (is_id(run_id) and (index == 0 or is_id(index))):
        return message_refused("reports.reaudit_chunk", f"{run_id!r}, {index!r}")
    try:
        return reaudit.reaudit_chunk(run_id=run_id, index=index)
    except Exception as exc:
        # Recorded on the run, not raised: a raising header would stop the
        # chord's finish, and the run must still end (as failed, saying why).
        reaudit.reaudit_fail_chunk(run_id=run_id, index=index,
                                   error=f"{type(exc).__name__}: {exc}")
        return {"chunk": index, "error": str(exc)}


@shared_task(name="reports.reaudit_finish", **TASK)
def reaudit_finish_task(run_id: int) -> dict:
    if not is_id(run_id):
        return message_refused("reports.reaudit_finish", f"run id {run_id!r}")
    run = reaudit.reaudit_finish(run_id=run_id)
    return {"run": run.pk, "status": run.status, "coups": run.coups_checked}


@shared_task(name="reports.nightly", **TASK)
def nightly_reports_task(cutoff_hour: int | None = None, format: str = "pdf") -> list:  # noqa: A002
    if not (is_hour(cutoff_hour) and format in FORMATS):
        return message_refused("reports.nightly", f"{cutoff_hour!r}, {format!r}")
    # A gaming day closed: anchor the trail as it stands (casino/anchors.py);
    # every report's stamp anchors it again. The reason is ours, the hour
    # checked above.
    from casino.anchors import trail_anchor

    trail_anchor(reason=f"gaming-day close (cut-off {cutoff_hour}:00)")
    jobs = services.nightly_reports(cutoff_hour=cutoff_hour, format=format)
    return [j.pk for j in jobs]


@shared_task(name="reports.gaming_day_close", **TASK)
def gaming_day_close_task(format: str = "pdf") -> dict:  # noqa: A002
    """Hourly (beat): close the gaming day at every cut-off hour in use
    (audit/reports/nightly.py). Idempotent: run it as often as you like."""
    if format not in FORMATS:
        return message_refused("reports.gaming_day_close", f"format {format!r}")
    return {str(k): v for k, v in nightly.gaming_day_close(format=format).items()}


@shared_task(name="reports.dispatch_pending", **TASK)
def dispatch_pending_task() -> int:
    return nightly.dispatch_pending()
