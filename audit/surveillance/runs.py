"""Surveillance runs: request, dispatch, run, the nightly one.

Like a report job (audit/reports/services.py): a request is one transaction
(the run's row and its change-log row) and the task is sent on commit, so a
worker never looks for a run that is not there; with the broker down the run
stays queued and reports.dispatch_pending sends it later. The task takes the
run's id and is idempotent: a run already done is left as it is, and a run
delivered twice (a worker killed mid-way) writes no alert twice — an alert's
flag is unique per subject, test and period (alerts.py), whichever run or
attempt finds it first.

The pipeline: collect (the period's current coups as numpy arrays, one query:
collect.py), detect (the statistics core: detect.py, at the run's false
discovery rate), write (flags of kind "surveillance" with their evidence, and
the run's summary for the page: alerts.py, summary.py), each stage timed.
"""

from __future__ import annotations

import logging
import time
from datetime import date, timedelta
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.periods import check_period as report_period
from audit.periods import check_tables  # noqa: F401 - the API's check too
from casino import replica
from casino.celery import by_name, publish
from casino.changelog import log_action
from casino.roles import has_capability
from tables.errors import Forbidden, Invalid

from ..models import SurveillanceRun

log = logging.getLogger(__name__)
MAX_DAYS = 366
NIGHTLY_CUSUM_DAYS = 7  # the nightly run's CUSUM reads this many gaming days
UNAVAILABLE = "surveillance is unavailable: the task queue cannot be reached"
Status = SurveillanceRun.Status


def house_fdr() -> Decimal:
    """The house's false discovery rate (settings.SURVEILLANCE_FDR)."""
    return Decimal(str(settings.SURVEILLANCE_FDR)).quantize(Decimal("0.0001"))


def check_period(from_day, to_day) -> tuple[date, date]:
    """A run's period: the reports' check, at most MAX_DAYS gaming days."""
    return report_period(from_day, to_day, max_days=MAX_DAYS, what="a run")


def check_fdr(value, user) -> Decimal:
    """The run's rate: the house's, or a manager's own (0 < q < 0.5)."""
    if value in (None, ""):
        return house_fdr()
    try:
        q = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise Invalid("fdr", "must be a number such as 0.05") from None
    if not q.is_finite() or not Decimal(0) < q < Decimal("0.5"):
        raise Invalid("fdr", "must be above 0 and below 0.5")
    if q.as_tuple().exponent < -4:
        raise Invalid("fdr", "at most 4 decimals")
    if q != house_fdr() and user is not None and not has_capability(
            user, "surveillance.fdr"):
        raise Forbidden("fdr", "only a manager runs at another rate than the "
                        f"house's ({house_fdr()})")
    return q.quantize(Decimal("0.0001"))


def surveillance_request(*, user, from_day, to_day, table_ids=None, fdr=None,
                         source: str = SurveillanceRun.Source.MANUAL,
                         dedupe_key: str | None = None,
                         device: str = "") -> SurveillanceRun:
    """Ask for a run over gaming days from_day..to_day (optionally some
    tables). Answered at once; the run is sent to the queue on commit."""
    start, end = check_period(from_day, to_day)
    tables = check_tables(table_ids)
    q = check_fdr(fdr, user)
    with transaction.atomic():
        run = SurveillanceRun.objects.create(
            from_day=start, to_day=end, tables=tables, fdr=q, source=source,
            dedupe_key=dedupe_key, requested_by=user, requested_at=timezone.now())
        log_action(action="audit.surveillance.requested", user=user,
                   device=device, obj=run,
                   new={"from_day": start.isoformat(), "to_day": end.isoformat(),
                        "tables": tables, "fdr": str(q), "source": source})
        transaction.on_commit(lambda: surveillance_dispatch(run=run))
    return run


def surveillance_dispatch(*, run: SurveillanceRun) -> bool:
    """Send the run's task; False (left undispatched) if the broker is down."""
    try:
        task_id = publish(by_name("audit.surveillance_run", run.pk))
    except Exception as exc:  # kombu/redis raise several kinds; all mean "down"
        log.warning("surveillance run %s not dispatched: %s", run.pk, exc)
        run.dispatched_at = None
        return False
    now = timezone.now()
    SurveillanceRun.objects.filter(pk=run.pk, dispatched_at__isnull=True).update(
        dispatched_at=now, task_id=task_id or "")
    run.dispatched_at, run.task_id = now, task_id or ""
    return True


def dispatch_pending(*, older_than: int = 30) -> int:
    cutoff = timezone.now() - timedelta(seconds=older_than)
    return sum(surveillance_dispatch(run=run) for run in SurveillanceRun.objects.filter(
        status=Status.QUEUED, dispatched_at=None, requested_at__lt=cutoff))


def progress(run_id: int, attempt: int, *, stage: str, percent: int,
             **counts) -> None:
    """Record progress (never 100 before the run is done); a superseded
    attempt does not report."""
    SurveillanceRun.objects.filter(pk=run_id, attempts=attempt).update(
        stage=stage, percent=min(99, max(0, percent)), **counts)


def _claim(run_id: int) -> SurveillanceRun | None:
    with transaction.atomic():
        run = (SurveillanceRun.objects.select_for_update(no_key=True)
               .filter(pk=run_id).first())
        if run is None or run.status == Status.DONE:
            return None  # gone, or done by an earlier delivery
        run.status, run.started_at = Status.RUNNING, timezone.now()
        run.attempts += 1
        run.percent, run.stage, run.error = 0, "collect", ""
        run.save(update_fields=["status", "started_at", "attempts", "percent",
                                "stage", "error"])
        return run


def surveillance_execute(*, run_id: int) -> SurveillanceRun | None:
    """Run it (the task's body): collect, detect, write. Idempotent."""
    run = _claim(run_id)
    if run is None:
        return SurveillanceRun.objects.filter(pk=run_id).first()
    try:
        result = _pipeline(run)
    except Exception as exc:
        log.exception("surveillance run %s failed", run.pk)
        return surveillance_fail(run_id=run.pk, attempt=run.attempts,
                                 error=f"{type(exc).__name__}: {exc}")
    return result


def _pipeline(run: SurveillanceRun) -> SurveillanceRun:
    from . import alerts, collect, live_write, summary
    from .detect import CUSUM_TESTS, analyse

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # The nightly run surveys its gaming day; a table's CUSUM reads the
    # trailing days too (a drift shows over more than one night; its alert
    # is dated the crossing day, which does not move as the window slides).
    nightly = run.source == SurveillanceRun.Source.NIGHTLY
    first = run.from_day - timedelta(days=NIGHTLY_CUSUM_DAYS - 1) if nightly \
        else run.from_day
    # Read from the replica when there is one (casino/replica.py), in one
    # snapshot with how far its data goes; progress is written on the primary.
    with replica.reading(), replica.snapshot() as position:
        period = collect.collect_period(
            from_day=first, to_day=run.to_day, table_ids=run.tables or None,
            progress=lambda done, total: progress(
                run.pk, run.attempts, stage="collect",
                percent=int(40 * done / total) if total else 0))
    window, shoes = period.rows, period.shoes
    rows = window
    if first < run.from_day and len(window):
        rows = window.take(window.day >= run.from_day.toordinal())
        shoes = [s for s in shoes if s.day >= run.from_day.toordinal()]
    timings["collect"] = time.perf_counter() - t0
    progress(run.pk, run.attempts, stage="detect", percent=45,
             coups=len(rows), shoes=len(shoes))
    t1 = time.perf_counter()
    report = analyse(rows, shoes, fdr=float(run.fdr), cusum_rows=window)
    found = report.alerts
    timings["detect"] = time.perf_counter() - t1
    progress(run.pk, run.attempts, stage="write", percent=80)
    t2 = time.perf_counter()
    overview = summary.build(rows, shoes, report, cusum_rows=window,
                             mix=period.mix)
    overview["cusum_from"] = first.isoformat()
    overview["data_position"] = position.as_dict()
    with transaction.atomic():
        current = (SurveillanceRun.objects.select_for_update(no_key=True)
                   .get(pk=run.pk))
        if current.status != Status.RUNNING or current.attempts != run.attempts:
            return current  # a later delivery took it over
        raised = alerts.alerts_write(run=current, alerts=found, rows=rows,
                                     shoes=shoes)
        # the nightly run's word on the day's live alerts (live_write.py)
        live_write.live_verdicts(run=current, found=found)
        timings["write"] = time.perf_counter() - t2
        timings["total"] = time.perf_counter() - t0
        current.status, current.percent, current.stage = Status.DONE, 100, "done"
        current.finished_at = timezone.now()
        current.coups, current.shoes = len(rows), len(shoes)
        # the BH tests and each table's CUSUMs (falling and rising)
        current.tests = report.tests + len(CUSUM_TESTS) * len(overview["tables"])
        current.alerts, current.alerts_new = len(found), raised
        # every alert's ident (the run's alerts, however many: never thinned)
        current.summary = {**alerts.plain(overview), "alert_idents": [
            alerts.alert_ident(a, run.from_day, run.to_day) for a in found]}
        current.timings = {k: round(v, 3) for k, v in timings.items()}
        current.save()
        log_action(action="audit.surveillance.done", user=None, device="celery",
                   obj=current,
                   new={"coups": current.coups, "shoes": current.shoes,
                        "tests": current.tests, "alerts": current.alerts,
                        "alerts_new": raised, "fdr": str(current.fdr)})
    return current


def surveillance_fail(*, run_id: int, attempt: int, error: str) -> SurveillanceRun:
    with transaction.atomic():
        run = SurveillanceRun.objects.select_for_update(no_key=True).get(pk=run_id)
        if run.status != Status.RUNNING or run.attempts != attempt:
            return run
        run.status, run.error, run.finished_at = Status.FAILED, error, timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        log_action(action="audit.surveillance.failed", user=None, device="celery",
                   obj=run, new={"error": error})
    return run


def surveillance_nightly(*, cutoff: int, day: date, table_ids: list[int]):
    """The gaming day that closed at ``cutoff`` surveyed once (the dedupe
    key); None if it was asked for already (audit/reports/nightly.py)."""
    key = f"nightly:surveillance:{cutoff}:{day.isoformat()}"
    if SurveillanceRun.objects.filter(dedupe_key=key).exists():
        return None
    try:
        with transaction.atomic():
            return surveillance_request(
                user=None, from_day=day, to_day=day, table_ids=sorted(table_ids),
                source=SurveillanceRun.Source.NIGHTLY, dedupe_key=key,
                device="beat")
    except IntegrityError:  # a concurrent close made it first
        return None
