"""Re-audit: check a period's coups again against a tableau version.

After a tableau change or an import, every current coup revision in the range
is evaluated again by the engine against the new version (each table's
current tableau, or one named version). What changes is recorded as
ReauditFinding rows: a finding the new version raises that the coup was not
recorded with (new), and one it was recorded with that the new version does
not raise (cleared); the findings kept are counted on the run, not written.
The coups and their original findings stay as they are, so the history the
rollups summarise is untouched.

The range is planned from the rollups into chunks of about `chunk_size` coups
(a gaming day whole, a day bigger than a chunk split by coup id modulo), at
least MIN_CHUNKS of them when the range is big enough, so that several
workers share it evenly; they run as a Celery chord on however many workers
exist; each chunk reads its coups (from the replica when there is one, no
transaction open on "default"), then writes what changed in one transaction,
and is done once. Each chunk keeps how far the data it read goes
(casino.replica.Position), the run its chunks' most conservative. How a chunk
reads and judges its coups (in one pass, the engine memoized):
reaudit_check.py.
"""

from __future__ import annotations

import logging
import math
from decimal import Decimal

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from casino import replica
from casino.celery import by_name, publish
from casino.changelog import log_action
from tables.errors import Invalid
from tables.models import DailyRollup, Finding, Table, TableauVersion
from tables.services.coups import tableau_for

from ..periods import check_period, check_tables
from .models import ReauditChunk, ReauditFinding, ReauditRun, Status
from .reaudit_check import ENGINE_CODES, check_cells

log = logging.getLogger(__name__)
# A range big enough is cut into at least this many chunks, so that a few
# workers share it evenly (the last chunk is no longer than the others)...
MIN_CHUNKS = 16
# ...but no chunk is cut smaller than this for it (each costs a transaction,
# a task and a trail row).
MIN_CHUNK_COUPS = 1000
# A day bigger than a chunk is read once per part (split by coup id modulo):
# a chunk this size keeps a busy casino's day (20 tables, ~1 400 coups each)
# whole.
DEFAULT_CHUNK_SIZE = 30_000


def plan_chunks(from_day, to_day, chunk_size: int, table_ids=()) -> list[list]:
    """[[cells, coups], ...]: chunks of at most `chunk_size` coups, in gaming
    day and table order; cells [table_id, "YYYY-MM-DD", part, parts]."""
    rollups = DailyRollup.objects.filter(gaming_day__gte=from_day,
                                         gaming_day__lte=to_day)
    if table_ids:
        rollups = rollups.filter(table_id__in=table_ids)
    cells = (
        rollups
        .values("table_id", "gaming_day")
        .annotate(n=Sum("coups"))
        .filter(n__gt=0)
        .order_by("gaming_day", "table_id")
    )
    days: dict = {}
    for c in cells:  # in gaming day order
        days.setdefault(c["gaming_day"].isoformat(), []).append(c)
    total = sum(c["n"] for cells in days.values() for c in cells)
    chunk_size = min(chunk_size, max(MIN_CHUNK_COUPS, math.ceil(total / MIN_CHUNKS)))
    # A gaming day stays in one chunk (a chunk reads its days whole); a day
    # bigger than a chunk is split by coup id modulo, every table alike.
    chunks: list[list] = []
    current: list = []
    size = 0
    for day, day_cells in days.items():
        n = sum(c["n"] for c in day_cells)
        parts = max(1, math.ceil(n / chunk_size))
        if current and (parts > 1 or size + n > chunk_size):
            chunks.append([current, size])
            current, size = [], 0
        if parts == 1:
            current += [[c["table_id"], day, 0, 1] for c in day_cells]
            size += n
            continue
        for part in range(parts):
            chunks.append([[[c["table_id"], day, part, parts] for c in day_cells],
                           n // parts + (1 if part < n % parts else 0)])
    if current:
        chunks.append([current, size])
    return chunks


def reaudit_request(*, user, from_day, to_day, tableau_version: str = "",
                    chunk_size: int = DEFAULT_CHUNK_SIZE, device: str = "",
                    table_ids=()) -> ReauditRun:
    """A run over a period (and some tables, or every one) against one
    version, or each table's current one. Its findings say what would appear
    (new) and disappear (cleared) against the findings each coup was recorded
    with under the version it was checked against."""
    start, end = check_period(from_day, to_day)
    tables = check_tables(list(table_ids or []))
    if tableau_version and not TableauVersion.objects.filter(
        version=tableau_version
    ).exists():
        raise Invalid("tableau_version", f"unknown tableau {tableau_version!r}")
    if not isinstance(chunk_size, int) or not 10 <= chunk_size <= 100_000:
        raise Invalid("chunk_size", "must be between 10 and 100000 coups")
    with transaction.atomic():
        plan = plan_chunks(start, end, chunk_size, tables)
        run = ReauditRun.objects.create(
            from_day=start, to_day=end, tableau_version=tableau_version,
            tables=tables,
            requested_by=user, requested_at=timezone.now(), chunks_total=len(plan),
            coups_expected=sum(n for _, n in plan),
        )
        ReauditChunk.objects.bulk_create(
            ReauditChunk(run=run, index=i, cells=cells, coups_planned=n)
            for i, (cells, n) in enumerate(plan)
        )
        log_action(action="reports.reaudit.requested", user=user, device=device,
                   obj=run, new={"from_day": start, "to_day": end,
                                 "tableau_version": tableau_version or "current",
                                 "tables": tables or "all",
                                 "chunks": len(plan), "coups": run.coups_expected})
        transaction.on_commit(lambda: reaudit_dispatch(run=run))
    return run


def reaudit_dispatch(*, run: ReauditRun) -> bool:
    """Send the run's start task; False (left queued, sent again by the sweep)
    if the broker is down. One message, given up within a second
    (casino.celery.publish): the chord itself, which needs the result backend
    (its counter), is built by a worker (reaudit_launch), never in a request."""
    try:
        publish(by_name("reports.reaudit_start", run.pk))
    except Exception as exc:  # broker down: left queued, sent again later
        log.warning("re-audit %s not dispatched: %s", run.pk, exc)
        return False
    now = timezone.now()
    ReauditRun.objects.filter(pk=run.pk, dispatched_at=None).update(dispatched_at=now)
    run.dispatched_at = now
    return True


def reaudit_launch(*, run_id: int) -> int:
    """On a worker: the run's chunks as a chord, its finish once all are done.
    Delivered twice (a worker lost before its ack), the second chord finds
    every chunk done and the run finished: each step is done once."""
    from celery import chord

    run = ReauditRun.objects.get(pk=run_id)
    finish = by_name("reports.reaudit_finish", run.pk)
    if run.chunks_total:
        header = [by_name("reports.reaudit_chunk", run.pk, i)
                  for i in range(run.chunks_total)]
        chord(header)(finish)
    else:
        finish.apply_async()
    return run.chunks_total


def reaudit_chunk(*, run_id: int, index: int) -> dict:
    """Check one chunk's coups, then write what changed in one transaction,
    done once. The coups are read first, from the replica when there is one
    (casino.replica: never inside a transaction on "default"), in one
    snapshot with its position, which the chunk keeps (how far the data it
    read goes). Only what changed is written (findings that appear, findings
    that disappear); the findings kept are counted on the run."""
    chunk = (ReauditChunk.objects.select_related("run")
             .get(run_id=run_id, index=index))
    run = chunk.run
    if chunk.done_at is not None:
        return {"chunk": index, "skipped": True}
    # The versions the coups are judged against, on the primary (a lagging
    # replica may not have a new one yet).
    versions = _versions(run, {c[0] for c in chunk.cells})
    tableaux = {t: tableau_for(v) for t, v in versions.items()}
    with replica.reading(), replica.snapshot() as position:
        changes = check_cells(chunk.cells, tableaux, restrict=bool(run.tables))
    with transaction.atomic():
        # The chunk's row only (of=self): locking the joined run row too would
        # make every other chunk of the run wait for this one to commit.
        chunk = (ReauditChunk.objects.select_for_update(of=("self",), no_key=True)
                 .get(pk=chunk.pk))
        if chunk.done_at is not None:  # another delivery wrote it meanwhile
            return {"chunk": index, "skipped": True}
        _compare(run, changes, tableaux)
        counts = {"new": changes.new, "kept": changes.kept,
                  "cleared": changes.cleared}
        chunk.done_at, chunk.coups_checked = timezone.now(), changes.checked
        chunk.data_position = position.as_dict()
        chunk.save(update_fields=["done_at", "coups_checked", "data_position"])
        ReauditRun.objects.filter(pk=run.pk).update(
            chunks_done=F("chunks_done") + 1,
            coups_checked=F("coups_checked") + changes.checked,
            findings=F("findings") + changes.new + changes.kept,
            findings_new=F("findings_new") + changes.new,
            findings_cleared=F("findings_cleared") + changes.cleared,
        )
        ReauditRun.objects.filter(pk=run.pk, status=Status.QUEUED).update(
            status=Status.RUNNING, started_at=timezone.now())
        log_action(action="reports.reaudit.chunk_done", device="celery", obj=run,
                   new={"chunk": index, "coups": changes.checked, **counts,
                        "data": position.text()})
    return {"chunk": index, "coups": changes.checked, **counts}


def _versions(run: ReauditRun, table_ids) -> dict[int, str]:
    if run.tableau_version:
        return dict.fromkeys(table_ids, run.tableau_version)
    return dict(Table.objects.filter(pk__in=table_ids)
                .values_list("pk", "rules__tableau__version"))


def _compare(run, changes, tableaux) -> None:
    """Write a chunk's changes: a row per finding that appears or disappears
    (once per run, coup, code and side: reaudit_finding_once)."""
    rows = [
        ReauditFinding(
            run=run, coup_id=coup_id, table_id=table_id, gaming_day=day,
            code=f.code, severity=f.severity, side=f.side or "",
            detail=dict(f.detail), message=f.message,
            tableau_version=tableaux[table_id].version, change="new",
        )
        for coup_id, table_id, day, f in changes.appear
    ]
    if changes.disappear:
        gone = {(c, code, side) for c, _, _, (code, side) in changes.disappear}
        recorded = {}
        for f in Finding.objects.filter(coup_id__in={c for c, *_ in gone},
                                        code__in=ENGINE_CODES):
            recorded.setdefault((f.coup_id, f.code, f.side), f)
        for coup_id, table_id, day, (code, side) in changes.disappear:
            f = recorded[(coup_id, code, side)]
            version = tableaux[table_id].version
            rows.append(ReauditFinding(
                run=run, coup_id=coup_id, table_id=table_id, gaming_day=day,
                code=code, severity=f.severity, side=side, detail=f.detail,
                message=f"cleared under {version}: {f.message}"[:300],
                tableau_version=version, change="cleared",
            ))
    ReauditFinding.objects.bulk_create(rows, batch_size=2000)


def reaudit_finish(*, run_id: int) -> ReauditRun:
    with transaction.atomic():
        run = ReauditRun.objects.select_for_update(no_key=True).get(pk=run_id)
        if run.status in (Status.DONE, Status.FAILED):
            return run
        missing = list(run.chunks.filter(done_at=None).values_list("index", flat=True))
        if missing and not run.error:
            # The chord calls this once every chunk has run, each either done
            # or its error on the run: chunks left with no error mean the
            # message did not come from the chord (forged on the broker, or
            # sent again by hand). The run goes on; its chord finishes it.
            log.warning("re-audit %s: finish asked with chunks %s not done and "
                        "no error; left running", run.pk, missing[:20])
            return run
        run.finished_at = timezone.now()
        if missing:
            run.status = Status.FAILED
            run.error = (run.error or f"chunks not done: {missing[:20]}")
        else:
            run.status = Status.DONE
        run.data_position = run_position(
            run.chunks.exclude(done_at=None).values_list("data_position", flat=True))
        run.save(update_fields=["status", "error", "finished_at", "data_position"])
        log_action(action=f"reports.reaudit.{run.status}", device="celery", obj=run,
                   new={"coups": run.coups_checked, "findings": run.findings,
                        "new": run.findings_new, "cleared": run.findings_cleared,
                        "error": run.error,
                        "data": run.data_position.get("text", "")})
    return run


def run_position(positions) -> dict:
    """A run's position from its chunks' (Position dicts, as stored): the
    most conservative, so that the run says "data up to coup #N" of all it
    read. The chunk that saw the lowest coup (none at all is lower still)
    gives the coup, its time and the replay; the lag is the largest any
    chunk read with, and the run read a replica if any chunk did (then
    `alias` names each connection read: "default,reports"). {} when no
    chunk kept one (no chunk, or chunks done before positions were kept)."""
    positions = [p for p in positions if p]
    if not positions:
        return {}
    lowest = min(positions, key=lambda p: (p.get("coup") is not None,
                                           p.get("coup") or 0))
    out = dict(lowest)
    lags = [Decimal(p["lag_seconds"]) for p in positions
            if p.get("lag_seconds") is not None]
    out["lag_seconds"] = str(max(lags)) if lags else None
    out["replica"] = any(p.get("replica") for p in positions)
    out["alias"] = ",".join(sorted({p.get("alias") or "" for p in positions}))
    reads = [p["read_at"] for p in positions if p.get("read_at")]
    out["read_at"] = min(reads) if reads else None  # the earliest read
    out["text"] = replica.position_text(out)
    return out


def reaudit_fail_chunk(*, run_id: int, index: int, error: str) -> None:
    """A chunk that raised: the run says why (its finish will mark it failed)."""
    with transaction.atomic():
        run = ReauditRun.objects.select_for_update(no_key=True).get(pk=run_id)
        if not run.error:
            run.error = f"chunk {index}: {error}"[:2000]
            run.save(update_fields=["error"])
        log_action(action="reports.reaudit.chunk_failed", device="celery", obj=run,
                   new={"chunk": index, "error": error})
