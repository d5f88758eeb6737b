"""The nightly re-settlement: verify_ledger over the previous gaming day, each
difference a critical flag in the pit boss's queue (audit/tasks.py runs it
from the beat schedule that migration audit 0003 writes).

A difference is evidence that the record was changed outside the application
(or written wrong by it): nothing here repairs anything, a pit boss reviews
it against the change log and the paper. Flags are raised once: a flag's
ident is the digest of the difference's text (which row, which field, the
value stored and the value re-settled), so the same difference found again
the next night, or by a second delivery of the task, raises nothing new; a
different value in the same place is a new difference and a new flag.
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta

from django.db import transaction
from django.utils import timezone

from casino.changelog import log_action
from tables.models import TableSession
from tables.services import gaming_day_for

from ..ledger_check import Difference, LedgerCheck, ledger_verify
from ..models import Flag, FlagEvent

LEDGER_CODE = "ledger_mismatch"
DEFAULT_CUTOFF = 6


def ledger_flag_ident(difference: Difference) -> str:
    return "l:" + hashlib.sha256(difference.text.encode()).hexdigest()


def ledger_nightly(*, day: date | None = None, cutoff_hour: int | None = None,
                   now=None, device: str = "celery") -> dict:
    """Re-settle gaming day `day` (default: the one before the current gaming
    day at `cutoff_hour`), raise a flag per new difference, log the run."""
    if day is None:
        cutoff = DEFAULT_CUTOFF if cutoff_hour is None else cutoff_hour
        day = gaming_day_for(now or timezone.now(), cutoff) - timedelta(days=1)
    check = ledger_verify(from_day=day, to_day=day)
    return ledger_flags_raise(check, device=device)


def ledger_flags_raise(check: LedgerCheck, *, device: str = "celery") -> dict:
    """One flag per difference not flagged before; the run in the trail."""
    with transaction.atomic():
        raised = unplaced = 0
        for difference in check.differences:
            outcome = _flag(difference)
            raised += outcome == "raised"
            unplaced += outcome == "unplaced"
        summary = {
            "from_day": check.from_day, "to_day": check.to_day,
            "coups": check.coups, "turns": check.turns, "shoes": check.shoes,
            "rollup_cells": check.rollup_cells, "sessions": check.sessions,
            "differences": len(check.differences) + check.more,
            "flags_raised": raised, "unplaced": unplaced,
        }
        log_action(action="audit.ledger.verified", device=device, new=summary)
    return summary


def _session(d: Difference) -> TableSession | None:
    """The session a flag stands in: the difference's own, else (a rollup
    cell, which has none) the table's session of that gaming day, one that
    dealt coups on that day, or the table's latest."""
    if d.session_id is not None:
        return TableSession.objects.get(pk=d.session_id)
    sessions = TableSession.objects.filter(table_id=d.table_id).order_by("-pk")
    return (sessions.filter(gaming_day=d.gaming_day).first()
            or sessions.filter(shoes__coups__gaming_day=d.gaming_day).first()
            or sessions.first())


def _flag(d: Difference) -> str:
    session = _session(d)
    if session is None:
        return "unplaced"  # a table with no session at all: named by the run
    now = timezone.now()
    flag, created = Flag.objects.get_or_create(
        ident=ledger_flag_ident(d),
        defaults={
            "kind": Flag.Kind.LEDGER, "code": LEDGER_CODE, "severity": "critical",
            "message": d.text[:400], "table_id": d.table_id, "session": session,
            "gaming_day": d.gaming_day or session.gaming_day,
            "shoe_id": d.shoe_id, "seq": d.seq, "coup_id": d.coup_id,
            "croupier_id": d.croupier_id, "author": None, "raised_at": now,
        },
    )
    if not created:
        return "known"
    FlagEvent.objects.create(flag=flag, at=now, action="raised",
                             reason="verify_ledger", detail=d.to_dict())
    return "raised"
