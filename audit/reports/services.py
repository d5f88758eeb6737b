"""Services for reports: request, dispatch, build, the nightly batch.

A request is one transaction (the job row and its change-log row); the task is
sent on commit, so a worker never looks for a job that is not there yet. If the
broker cannot be reached the job stays queued and undispatched — the caller is
told (HTTP 503) and reports.dispatch_pending sends it when the queue is back.
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import secrets
from datetime import date, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from casino.celery import by_name, publish
from casino.changelog import log_action
from casino.continuity import alarm, guard, seal_check
from casino.errors import RecordChanged
from tables.errors import Invalid
from tables.models import Table
from tables.services import gaming_day_for

from ..periods import check_period, check_tables
from .files import job_name, reports_folder
from .models import ReportJob, Status
from .selectors import GROUPS

log = logging.getLogger(__name__)
UNAVAILABLE = "reports are unavailable: the task queue cannot be reached"


def report_request(
    *,
    user,
    kind: str,
    format: str,  # noqa: A002 - the API's word
    from_day,
    to_day,
    group_by: str = "table",
    table_ids=None,
    source: str = ReportJob.Source.MANUAL,
    dedupe_key: str | None = None,
    device: str = "",
) -> ReportJob:
    if kind not in ReportJob.Kind.values:
        raise Invalid("kind", f"must be one of {', '.join(ReportJob.Kind.values)}")
    if format not in ReportJob.Format.values:
        raise Invalid("format", "must be one of csv, xlsx, pdf")
    if (kind == ReportJob.Kind.EVIDENCE) != (format == ReportJob.Format.ZIP):
        raise Invalid("format", "the evidence bundle is a zip, and only it")
    if kind == ReportJob.Kind.COUPS and format != ReportJob.Format.CSV:
        raise Invalid("format", "the coup detail export is CSV only (streamed)")
    if kind == ReportJob.Kind.COMMISSION and group_by not in GROUPS:
        raise Invalid("group_by", f"must be one of {', '.join(GROUPS)}")
    start, end = check_period(from_day, to_day)
    params = {
        "from_day": start.isoformat(), "to_day": end.isoformat(),
        "tables": check_tables(table_ids),
    }
    if kind == ReportJob.Kind.COMMISSION:
        params["group_by"] = group_by
    with transaction.atomic():
        job = ReportJob.objects.create(
            kind=kind, format=format, params=params, source=source,
            dedupe_key=dedupe_key, requested_by=user, requested_at=timezone.now(),
        )
        log_action(action="reports.report.requested", user=user, device=device,
                   obj=job, new={"kind": kind, "format": format, **params})
        transaction.on_commit(lambda: report_dispatch(job=job))
    return job


def report_dispatch(*, job: ReportJob) -> bool:
    """Send the build task; False (job left undispatched) if the broker is
    down. Gives up within a second (casino.celery.publish says how)."""
    try:
        task_id = publish(by_name("reports.build", job.pk))
    except Exception as exc:  # kombu/redis raise several kinds; all mean "down"
        log.warning("report job %s not dispatched: %s", job.pk, exc)
        job.dispatched_at = None
        return False
    now = timezone.now()
    ReportJob.objects.filter(pk=job.pk, dispatched_at__isnull=True).update(
        dispatched_at=now, task_id=task_id or ""
    )
    job.dispatched_at, job.task_id = now, task_id or ""
    return True


def report_progress(job_id: int, *, rows: int, expected: int,
                    attempt: int | None = None) -> None:
    # 100 % is the job done (the file in place): until then at most 99; a
    # report with no rows to write has only its file left to finish.
    percent = min(99, rows * 100 // expected) if expected else 99
    jobs = ReportJob.objects.filter(pk=job_id)
    if attempt is not None:  # a superseded attempt does not report
        jobs = jobs.filter(attempts=attempt)
    jobs.update(rows=rows, percent=percent)


def _claim(job_id: int) -> ReportJob | None:
    """Start an attempt: None if there is nothing to build (gone, built by an
    earlier delivery of the task, or not a job the trail knows in this state:
    a row inserted or changed by hand, or a forged message naming one, builds
    nothing; the alarm says so). Files an interrupted attempt left half
    written (its worker was killed) are removed here."""
    try:
        with guard(device="celery"):
            job = (ReportJob.objects.select_for_update(no_key=True)
                   .filter(pk=job_id).first())
            if job is None or job.status == Status.DONE:
                return None  # gone, or already built: a redelivery does nothing
            seal_check(job)
            name = job_name(job)
            for stale in _folder().glob(f".{glob.escape(name)}.*.tmp"):
                stale.unlink(missing_ok=True)
            job.status, job.started_at = Status.RUNNING, timezone.now()
            job.percent = job.rows = job.rows_expected = 0
            job.attempts += 1
            job.error = ""
            job.save(update_fields=["status", "started_at", "percent", "rows",
                                    "rows_expected", "attempts", "error"])
            log_action(action="reports.report.started", device="celery", obj=job,
                       new={"attempt": job.attempts})
            return job
    except RecordChanged as exc:
        log.warning("report job %s not built: %s", job_id, exc)
        return None


def _folder() -> Path:
    folder = reports_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _current(job: ReportJob) -> ReportJob | None:
    """The job, locked, if this attempt is still the one to finish it; None if
    a later delivery of the task took it over (the broker gave it again while
    this one ran: a visibility timeout shorter than the build) or finished it."""
    current = ReportJob.objects.select_for_update(no_key=True).get(pk=job.pk)
    if current.status == Status.RUNNING and current.attempts == job.attempts:
        seal_check(current)  # the state its finishing write builds on
        return current
    return None


def report_build(*, job_id: int) -> ReportJob | None:
    """Build the job's file (idempotent: a built job is left as it is).

    The file is written under a temporary name and renamed into place, and
    only by the job's latest attempt, in the transaction that marks it done:
    a task delivered twice never leaves two files, a half file, or two
    "built" rows in the trail."""
    job = _claim(job_id)
    if job is None:
        return ReportJob.objects.filter(pk=job_id).first()
    final = _folder() / job_name(job)  # the path downloads derive (files.py)
    tmp = final.with_name(f".{final.name}.{job.attempts}-{os.getpid()}.tmp")
    try:
        rows, stamp = _build_file(job, tmp)
        size, sha256 = _digest(tmp)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        done = report_fail(job_id=job.pk, error=f"{type(exc).__name__}: {exc}",
                           attempt=job.attempts)
        if done.attempts == job.attempts:
            log.exception("report job %s failed", job.pk)
        else:  # a later attempt removed this one's file (see _claim)
            log.warning("report job %s: attempt %s superseded (%s)", job.pk,
                        job.attempts, exc)
        return done
    try:
        return _publish(job, tmp, final, rows=rows, stamp=stamp, size=size,
                        sha256=sha256)
    except RecordChanged as exc:  # changed by hand while it was built
        tmp.unlink(missing_ok=True)
        log.warning("report job %s not published: %s", job.pk, exc)
        return ReportJob.objects.get(pk=job.pk)


def _publish(job: ReportJob, tmp: Path, final: Path, *, rows: int, stamp: dict,
             size: int, sha256: str) -> ReportJob:
    """Put the file in place and mark the job done, with the file's digest
    sealed in the trail by the same write (what a download checks)."""
    with guard(device="celery"):
        current = _current(job)
        if current is None:
            tmp.unlink(missing_ok=True)
            log.warning("report job %s: attempt %s superseded, its file dropped",
                        job.pk, job.attempts)
            return ReportJob.objects.get(pk=job.pk)
        os.replace(tmp, final)  # a reader never sees half a file
        job = current
        job.status, job.percent, job.rows = Status.DONE, 100, rows
        job.finished_at, job.stamp = timezone.now(), stamp
        job.file = str(final.relative_to(settings.MEDIA_ROOT))
        job.file_size, job.sha256 = size, sha256
        job.save()
        log_action(action="reports.report.built", user=None, device="celery",
                   obj=job, new={"file": job.file, "rows": rows,
                                 "sha256": job.sha256})
    return job


def _digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return path.stat().st_size, digest.hexdigest()


def report_fail(*, job_id: int, error: str, attempt: int | None = None) -> ReportJob:
    """Mark the job failed, saying why; an attempt that was superseded (see
    _current) leaves the job to the attempt that took it over; a job changed
    by hand is left as it is (the alarm is raised)."""
    try:
        return _fail(job_id, error, attempt)
    except RecordChanged as exc:
        log.warning("report job %s not marked failed: %s", job_id, exc)
        return ReportJob.objects.get(pk=job_id)


def _fail(job_id: int, error: str, attempt: int | None) -> ReportJob:
    with guard(device="celery"):
        job = ReportJob.objects.select_for_update(no_key=True).get(pk=job_id)
        if attempt is not None and (job.status != Status.RUNNING
                                    or job.attempts != attempt):
            return job
        seal_check(job)
        job.status, job.error, job.finished_at = Status.FAILED, error, timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        log_action(action="reports.report.failed", user=None, device="celery",
                   obj=job, new={"error": error})
    return job


def _read_position(job: ReportJob, position) -> dict:
    """Keep how far the data goes on the job (its API shows it from now on)
    and return the line the report's stamp prints."""
    ReportJob.objects.filter(pk=job.pk, attempts=job.attempts).update(
        data_position=position.as_dict())
    return {"data_position": position.text()}


def _build_file(job: ReportJob, path: Path) -> tuple[int, dict]:
    """The report's data is read from the replica when there is one
    (casino/replica.py), in one snapshot with its position; the job's rows,
    progress and file stay on the primary."""
    from casino import replica

    from . import detail, pdf, sheets, writers

    # Read on the primary: a lagging replica may not have the user yet.
    user = job.requested_by
    if job.kind == ReportJob.Kind.EVIDENCE:
        from audit.evidence.job import evidence_file

        return evidence_file(job, path, progress=lambda n, expected: (
            report_progress(job.pk, rows=n, expected=expected,
                            attempt=job.attempts)))
    if job.kind == ReportJob.Kind.COUPS:
        # The rows stream to the file as they are read: one snapshot for both.
        with replica.reading() as alias, replica.snapshot() as position:
            stamp = sheets.make_stamp(kind=job.kind, params=job.params, user=user,
                                      rules=_detail_rules(job.params))
            stamp.update(_read_position(job, position))
            stamp = sheets.stamp_signed(stamp)
            expected = detail.coups_expected(job.params)
            ReportJob.objects.filter(pk=job.pk).update(rows_expected=expected)
            rows = detail.write_coups_csv(
                job.params, path, stamp=stamp, using=alias,
                progress=lambda n: report_progress(job.pk, rows=n, expected=expected,
                                                   attempt=job.attempts),
            )
        return rows, stamp
    build = (sheets.commission_document if job.kind == ReportJob.Kind.COMMISSION
             else sheets.findings_document)
    # Everything is read before the first row is written: the snapshot (a
    # transaction on the replica) ends before the file is laid out.
    with replica.reading(), replica.snapshot() as position:
        doc = build(params=job.params, user=user)
    doc.stamp.update(_read_position(job, position))
    doc.stamp = sheets.stamp_signed(doc.stamp)
    # The data is read: the rows to write are known before the first is
    # written, and progress is counted against them as the writer goes.
    expected = sum(len(s.rows) for s in doc.sheets)
    ReportJob.objects.filter(pk=job.pk, attempts=job.attempts).update(
        rows_expected=expected)
    writer = {"csv": writers.write_csv, "xlsx": writers.write_xlsx,
              "pdf": pdf.write_pdf}[job.format]
    rows = writer(doc, path, progress=lambda n: report_progress(
        job.pk, rows=n, expected=expected, attempt=job.attempts))
    return rows, doc.stamp


def _detail_rules(params: dict) -> list[dict]:
    """Every house-rules version the detail's rows name in their `rules`
    column (a session opened before a change keeps its version), with the
    versions in force over the period."""
    from .selectors import rules_of_period

    return rules_of_period(date.fromisoformat(params["from_day"]),
                           date.fromisoformat(params["to_day"]),
                           params.get("tables") or None)


def nightly_key(table_id: int, day: date, format: str) -> str:  # noqa: A002
    return f"nightly:commission:{table_id}:{day.isoformat()}:{format}"


def _sealed_as_is(job: ReportJob) -> bool:
    """Whether the trail sealed this job in the state it is in; a row
    inserted or changed by hand is no proof of anything (the alarm says so)."""
    try:
        seal_check(job)
    except RecordChanged as exc:
        alarm(exc, device="beat")
        return False
    return True


def nightly_request(*, table: Table, day: date,
                    format: str = "pdf") -> ReportJob | None:  # noqa: A002
    """Gaming day ``day``'s commission report for one table, once: None if a
    job the trail knows was asked for it already. A job under its key that
    the trail does not know (the runtime role can insert a "done" one for
    the days to come) suppresses nothing: the alarm is raised and the report
    is asked for under the key and a random suffix (the forged row holds the
    key's place; the next run finds the sealed job by the key's prefix)."""
    key = nightly_key(table.pk, day, format)
    held = [job for job in ReportJob.objects.filter(dedupe_key__startswith=key)
            if job.dedupe_key == key or job.dedupe_key.startswith(f"{key}:")]
    if any(_sealed_as_is(job) for job in held):
        return None
    if held:
        key = f"{key}:{secrets.token_hex(6)}"
    try:
        with transaction.atomic():
            return report_request(
                user=None, kind="commission", format=format, from_day=day,
                to_day=day, group_by="croupier", table_ids=[table.pk],
                source=ReportJob.Source.NIGHTLY, dedupe_key=key, device="beat",
            )
    except IntegrityError:  # a concurrent run made it first
        return None


def nightly_reports(*, now: datetime | None = None, cutoff_hour: int | None = None,
                    format: str = "pdf") -> list[ReportJob]:  # noqa: A002
    """The previous gaming day's commission report for every open table (whose
    cut-off is this hour, when given). Once per table and day: beat may fire
    twice, a worker may retry; the dedupe key keeps one job."""
    now = now or timezone.now()
    jobs = []
    for table in Table.objects.filter(active=True).select_related("rules"):
        cutoff = table.rules.gaming_day_cutoff if table.rules else 6
        if cutoff_hour is not None and cutoff != cutoff_hour:
            continue
        day = gaming_day_for(now, cutoff) - timedelta(days=1)
        job = nightly_request(table=table, day=day, format=format)
        if job is not None:
            jobs.append(job)
    return jobs
