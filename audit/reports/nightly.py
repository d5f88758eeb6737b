"""The gaming-day close: nightly jobs that follow the tables' house rules.

One beat task runs every hour (migration audit 0004: at :15, in the casino's
time zone) and calls ``gaming_day_close``. For each cut-off hour H in use (the
cut-off an active table's gaming day runs on now: its open session's pinned
rules, else the version in force for its next session), the latest gaming day
that closed at H at least NIGHTLY_MARGIN_MINUTES ago is closed:

- each table on H gets that day's commission report (one job per table and
  day: the ReportJob dedupe key, shared with the older per-hour task);
- the day's statistical surveillance runs over those tables (one
  SurveillanceRun per cut-off and day: its dedupe key; audit/surveillance);
- the change log is anchored, and the day is re-settled from the cards
  (verify_ledger, all tables: a table on a later cut-off is re-settled again
  at its own close, and a difference is flagged once whoever finds it), each
  once per cut-off and day (a GamingDayClose row, written when it has run).

Nothing is scheduled per cut-off: a manager who sets a new cut-off hour edits
no schedule, and an hour nobody's tables use any more runs nothing. Beat
firing twice, a worker redelivering the task, or an hour missed (beat down)
is harmless: the day closed at H stays "the latest closed" for 24 hours, and
everything above is done once. A worker killed mid-way leaves no row, so the
next run does it; two runs at once on PostgreSQL take an advisory lock per
(kind, cut-off, day), and the second leaves it to the first.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from contextlib import contextmanager
from datetime import date, datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.models import GamingDayClose
from audit.services.ledger_flags import ledger_nightly
from audit.surveillance.runs import dispatch_pending as surveillance_pending
from audit.surveillance.runs import surveillance_nightly
from casino.anchors import trail_anchor
from casino.changelog import log_action
from casino.continuity import alarm, seal_check
from casino.errors import RecordChanged
from tables.models import Table, TableSession
from tables.services import gaming_day_for
from tables.services.house import rules_in_force

from .models import ReauditRun, ReportJob, Status
from .reaudit import reaudit_dispatch
from .services import nightly_request, report_dispatch

log = logging.getLogger(__name__)
DEFAULT_CUTOFF = 6
LOCK_BASE = 0x4744430000  # "GDC": advisory lock keys of the close


def margin() -> timedelta:
    return timedelta(minutes=getattr(settings, "NIGHTLY_MARGIN_MINUTES", 10))


def table_cutoff(table: Table, now: datetime) -> int:
    """The cut-off hour the table's gaming day runs on now: its open session's
    (a session keeps the version it opened under, and its coups take their
    gaming day from it), else the version its next session will play."""
    session = (TableSession.objects.filter(table=table, closed_at__isnull=True)
               .select_related("rules").first())
    if session is not None and session.rules is not None:
        return session.rules.gaming_day_cutoff
    latest = table.rules
    if latest is None:
        return DEFAULT_CUTOFF
    in_force = rules_in_force(table, gaming_day_for(now, latest.gaming_day_cutoff))
    return (in_force or latest).gaming_day_cutoff


def cutoffs_in_use(now: datetime) -> dict[int, list[Table]]:
    """Active tables by the cut-off hour they are on."""
    out: dict[int, list[Table]] = defaultdict(list)
    for table in Table.objects.filter(active=True).select_related("rules"):
        out[table_cutoff(table, now)].append(table)
    return dict(sorted(out.items()))


def closed_day(now: datetime, cutoff: int) -> date:
    """The latest gaming day at ``cutoff`` that closed at least the margin
    ago (local time of the casino: TIME_ZONE)."""
    return gaming_day_for(now - margin(), cutoff) - timedelta(days=1)


def gaming_day_close(*, now: datetime | None = None, format: str = "pdf",  # noqa: A002
                     ledger: bool = True) -> dict:
    """Close, for every cut-off hour in use, the gaming day that closed last.
    Returns {cut-off: {"day", "tables", "jobs", "anchored", "ledger"}}."""
    now = now or timezone.now()
    out = {}
    for cutoff, tables in cutoffs_in_use(now).items():
        day = closed_day(now, cutoff)
        jobs = [job.pk for t in tables
                if (job := table_report(table=t, day=day, format=format))]
        anchored = _once(GamingDayClose.Kind.ANCHOR, cutoff, day,
                         lambda c=cutoff, d=day: _anchor(c, d))
        verified = ledger and _once(GamingDayClose.Kind.LEDGER, cutoff, day,
                                    lambda d=day: _verify(d))
        surveyed = _survey(cutoff, day, tables)
        out[cutoff] = {"day": day.isoformat(), "tables": [t.pk for t in tables],
                       "jobs": jobs, "anchored": bool(anchored),
                       "ledger": bool(verified), "surveillance": surveyed}
    return out


def table_report(*, table: Table, day: date, format: str = "pdf"):  # noqa: A002
    """Gaming day ``day``'s commission report for one table, once (None if a
    job the trail knows was asked for it already: services.nightly_request)."""
    return nightly_request(table=table, day=day, format=format)


def _survey(cutoff: int, day: date, tables: list[Table]) -> int | None:
    """The day's statistical surveillance of the tables on this cut-off,
    once (the run's dedupe key): the run's id, None if asked for already."""
    run = surveillance_nightly(cutoff=cutoff, day=day,
                               table_ids=[t.pk for t in tables])
    return run.pk if run is not None else None


def _anchor(cutoff: int, day: date) -> dict:
    anchor = trail_anchor(reason=f"gaming-day close {day} (cut-off {cutoff}:00)")
    return {"row": anchor.row, "hash": anchor.hash} if anchor else {}


def _verify(day: date) -> dict:
    summary = ledger_nightly(day=day, device="beat")
    return {k: v.isoformat() if isinstance(v, date) else v
            for k, v in summary.items()}


def _done(kind: str, cutoff: int, day: date) -> bool:
    """Whether (kind, cut-off, day) has run: its row, sealed in the trail. A
    row written by hand (the runtime role could insert "done" for the days to
    come) is no proof: the alarm is raised and the close runs anyway."""
    row = GamingDayClose.objects.filter(kind=kind, cutoff_hour=cutoff,
                                        gaming_day=day).first()
    if row is None:
        return False
    try:
        seal_check(row)
    except RecordChanged as exc:
        alarm(exc, device="beat")
        return False
    return True


def _once(kind: str, cutoff: int, day: date, run) -> dict | None:
    """Run ``run`` for (kind, cut-off, day) unless it has run: the row is
    written after it, so a run that died is done again by the next."""
    if _done(kind, cutoff, day):
        return None
    with _lock(kind, cutoff, day) as mine:
        if not mine or _done(kind, cutoff, day):
            return None
        summary = run()
        try:
            with transaction.atomic():
                close = GamingDayClose.objects.create(
                    kind=kind, cutoff_hour=cutoff, gaming_day=day,
                    done_at=timezone.now(), summary=summary)
                log_action(action=f"audit.gaming_day.{kind}", device="beat",
                           obj=close, new={"cutoff_hour": cutoff,
                                           "gaming_day": day, "summary": summary})
        except IntegrityError:
            return summary  # a forged row holds the place: ran, not recorded
    log.info("gaming day %s closed at cut-off %s: %s", day, cutoff, kind)
    return summary


@contextmanager
def _lock(kind: str, cutoff: int, day: date):
    """A session-level advisory lock on PostgreSQL (released when the
    connection goes, so a killed worker never holds it); SQLite has one
    writer at a time anyway."""
    if connection.vendor != "postgresql":
        yield True
        return
    key = LOCK_BASE + (day.toordinal() * 24 + cutoff) * 2 + (kind == "ledger")
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s)", [key])
        got = cur.fetchone()[0]
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s)", [key])


def dispatch_pending(*, older_than: int = 30) -> int:
    """Send again the jobs, re-audits and surveillance runs the broker missed
    (it was down): beat's sweep (reports.dispatch_pending), every 2 minutes."""
    cutoff = timezone.now() - timedelta(seconds=older_than)
    sent = 0
    for job in ReportJob.objects.filter(status=Status.QUEUED, dispatched_at=None,
                                        requested_at__lt=cutoff):
        sent += report_dispatch(job=job)
    for run in ReauditRun.objects.filter(status=Status.QUEUED, dispatched_at=None,
                                         requested_at__lt=cutoff):
        sent += reaudit_dispatch(run=run)
    return sent + surveillance_pending(older_than=older_than)
