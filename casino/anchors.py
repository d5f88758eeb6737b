"""Anchors: the chain's head written outside the database.

A keyed chain shows any edit, but not that its last rows were cut off: the
shortened chain still links. An anchor is the head (row id and digest) copied,
as it stood, to a place the database's people cannot rewrite: a file in
`TRAIL_ANCHOR_DIR` (the app only ever adds files there, created exclusively
and read-only; in production mount it from write-once storage or another
host), and the stamp of every report. `verify_trail` reads every anchor on
file, so a deleted tail is caught without anyone passing one by hand.

Anchors are taken every `TRAIL_ANCHOR_MINUTES` by beat (`trail.anchor`), at
every gaming-day close (with the nightly reports), and on demand
(`manage.py trail_anchor`).

Anchors are expected, not optional (DESIGN.md, "Integrity": a missing or
stale anchor is a failure, not "0 checked"). Beyond the anchors on file,
`verify_trail` asks (`anchors_expected`):

- every anchor the database records (a gaming-day close's summary, a report's
  stamp: the apps register where, `recorded_register`) must have its file: an
  emptied or pruned folder is named by what recorded the anchor it lost;
- the trail must not have gone unanchored for long: with rows after the
  newest anchored row, the newest anchor must be at most 2 x
  `TRAIL_ANCHOR_MINUTES` old (beat anchors every interval, whatever was
  written; an older one means anchoring stopped, and a tail cut off since
  would not show), and with no anchor at all the trail's first row must be
  younger than that (a fresh install before beat's first run).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone


class AnchorError(Exception):
    pass


@dataclass(frozen=True)
class Anchor:
    row: int
    hash: str
    at: datetime
    reason: str
    file: str = ""

    def to_dict(self) -> dict:
        return {"row": self.row, "hash": self.hash,
                "at": self.at.astimezone(UTC).isoformat(), "reason": self.reason,
                "file": self.file}


def _folder() -> Path:
    return Path(settings.TRAIL_ANCHOR_DIR)


def chain_head_row() -> tuple[int, str] | None:
    """The last committed row of the log (id, digest); no lock: an anchor
    vouches for what was committed when it was taken."""
    from .models import ChangeLog

    # The primary's head, also inside a replica.reading() block (a report's
    # stamp): a replica may be behind.
    return (ChangeLog.objects.using("default").order_by("-id")
            .values_list("id", "hash").first())


def anchor_write(row: int, digest: str, reason: str) -> Anchor:
    """One anchor file, created exclusively (never overwritten), read-only,
    flushed to disk with its directory entry."""
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    name = f"{now:%Y%m%dT%H%M%S%fZ}-row{row}.json"
    body = json.dumps({"row": row, "hash": digest, "at": now.isoformat(),
                       "reason": reason}, sort_keys=True)
    fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        os.write(fd, body.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    dirfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)
    return Anchor(row, digest, now, reason, name)


def trail_anchor(*, reason: str = "manual") -> Anchor | None:
    """Anchor the chain's head now; None when the log is empty."""
    head = chain_head_row()
    if head is None:
        return None
    return anchor_write(head[0], head[1], reason)


def anchors_list() -> list[Anchor]:
    """Every anchor on file, newest first. A file that is not an anchor is an
    error: the folder holds anchors only."""
    folder = _folder()
    if not folder.is_dir():
        return []
    out = []
    for path in folder.glob("*.json"):
        try:
            data = json.loads(path.read_text())
            anchor = Anchor(int(data["row"]), str(data["hash"]),
                            datetime.fromisoformat(data["at"]), str(data["reason"]),
                            path.name)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise AnchorError(f"anchor file {path.name} is unreadable: {exc}") from exc
        if len(anchor.hash) != 64:
            raise AnchorError(f"anchor file {path.name}: not a digest")
        if anchor.at.tzinfo is None:  # its age could not be told
            raise AnchorError(f"anchor file {path.name}: a time without its zone")
        out.append(anchor)
    return sorted(out, key=lambda a: (a.at, a.row), reverse=True)


def anchors_read(found: list[Anchor] | None = None) -> dict[int, str]:
    """Row id -> digest of every anchor on file (or of `found`, a listing
    already read). Two anchors disagreeing on a row would mean one was
    forged: an error."""
    known: dict[int, str] = {}
    for anchor in anchors_list() if found is None else found:
        if known.setdefault(anchor.row, anchor.hash) != anchor.hash:
            raise AnchorError(f"two anchors disagree on row {anchor.row}")
    return known


# -- anchors expected ----------------------------------------------------------

@dataclass(frozen=True)
class Recorded:
    """An anchor the database says was taken: its row, its digest and what
    recorded it ("report #12's stamp")."""

    row: int
    hash: str
    where: str


# Where the database records anchors: callables yielding Recorded, or a
# string (a record that no longer reads as an anchor: a problem). The apps
# that record them register here (this module imports nothing from them).
_RECORDERS: list[Callable[[], Iterable[Recorded | str]]] = []


def recorded_register(source: Callable[[], Iterable[Recorded | str]]) -> None:
    if source not in _RECORDERS:
        _RECORDERS.append(source)


def recorded_anchors() -> list[Recorded | str]:
    return [r for source in _RECORDERS for r in source()]


def interval() -> timedelta:
    return timedelta(minutes=settings.TRAIL_ANCHOR_MINUTES)


def age(delta: timedelta) -> str:
    """A duration as the messages say it: '40 seconds', '12 minutes',
    '5 hours 3 minutes', '3 days 2 hours'."""
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds} seconds"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if minutes < 120:
        return f"{minutes} minutes"
    if hours < 48:
        return f"{hours} hours {minutes % 60} minutes"
    return f"{days} days {hours % 24} hours"


def anchors_missing(found: list[Anchor]) -> list[tuple[int, str]]:
    """Every anchor the database records that has no file saying the same
    (row, digest): (row, problem), by row."""
    on_file = {(a.row, a.hash) for a in found}
    by_row: dict[int, str] = {a.row: a.hash for a in found}
    folder = settings.TRAIL_ANCHOR_DIR
    problems = []
    for rec in recorded_anchors():
        if isinstance(rec, str):
            problems.append((None, rec))
        elif (rec.row, rec.hash) in on_file:
            continue
        elif rec.row in by_row:
            problems.append((rec.row, (
                f"row {rec.row}: the anchor recorded by {rec.where} ({rec.hash}) "
                f"is not the anchor on file ({by_row[rec.row]})"
            )))
        else:
            problems.append((rec.row, (
                f"row {rec.row}: the anchor recorded by {rec.where} has no file "
                f"in TRAIL_ANCHOR_DIR ({folder}): the anchors were removed"
            )))
    return sorted(problems, key=lambda p: (p[0] is None, p[0] or 0))


@dataclass(frozen=True)
class Freshness:
    """How far the anchors cover the trail, now: the newest anchor (None: no
    anchor on file), the first row after the newest anchored row (None: the
    head is anchored, or the log is empty) and its time, and the problem when
    the trail has gone unanchored too long."""

    last: Anchor | None
    first_unanchored: int | None
    first_unanchored_at: datetime | None
    head: int | None
    now: datetime
    problem: str = ""

    @property
    def last_age(self) -> str:
        return age(self.now - self.last.at) if self.last else ""


def anchors_freshness(found: list[Anchor], *, now: datetime | None = None
                      ) -> Freshness:
    """Stale: rows after the newest anchored row while the newest anchor is
    older than 2 x TRAIL_ANCHOR_MINUTES (beat anchors every interval whatever
    was written, so an older one means anchoring stopped); with no anchor at
    all, a first row older than that. Each row is then at most 2 intervals
    away from an anchor's protection: the window a tail can be cut off
    unseen."""
    from .models import ChangeLog

    now = now or timezone.now()
    limit = 2 * interval()
    covered = max((a.row for a in found), default=0)
    last = max(found, key=lambda a: (a.at, a.row), default=None)
    after = (ChangeLog.objects.using("default").filter(id__gt=covered)
             .order_by("id").values_list("id", "at").first())
    if after is None:
        return Freshness(last, None, None, covered or None, now)
    head = (ChangeLog.objects.using("default").order_by("-id")
            .values_list("id", flat=True).first())
    fresh = Freshness(last, after[0], after[1], head, now)
    rows = f"row {after[0]}" if after[0] == head else f"rows {after[0]} to {head}"
    due = (f"anchors are due every {settings.TRAIL_ANCHOR_MINUTES} minutes "
           "(TRAIL_ANCHOR_MINUTES): is beat running trail.anchor? "
           "`manage.py trail_anchor` takes one now")
    if last is None:
        if now - after[1] <= limit:
            return fresh
        problem = (
            f"no anchor on file in TRAIL_ANCHOR_DIR, yet {rows} of the trail "
            f"are anchored nowhere, the first written {age(now - after[1])} "
            f"ago (more than 2 x {settings.TRAIL_ANCHOR_MINUTES} minutes): {due}"
        )
    else:
        if now - last.at <= limit:
            return fresh
        problem = (
            f"the last anchor (row {last.row}) was taken {age(now - last.at)} "
            f"ago, more than 2 x {settings.TRAIL_ANCHOR_MINUTES} minutes, and "
            f"{rows} written since (the first {age(now - after[1])} ago) are "
            f"anchored nowhere: a tail cut off there would not show; {due}"
        )
    return Freshness(last, after[0], after[1], head, now, problem)


def anchors_expected(found: list[Anchor], *, now: datetime | None = None
                     ) -> list[tuple[int | None, str]]:
    """What the anchors on file (`found`) leave unproven: anchors the database
    records without their file, and a trail gone unanchored too long.
    (row or None, problem) each; empty when nothing is missing."""
    problems = anchors_missing(found)
    fresh = anchors_freshness(found, now=now)
    if fresh.problem:
        problems.append((fresh.first_unanchored, fresh.problem))
    return problems
