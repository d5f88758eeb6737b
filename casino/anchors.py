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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings


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
        out.append(anchor)
    return sorted(out, key=lambda a: (a.at, a.row), reverse=True)


def anchors_read() -> dict[int, str]:
    """Row id -> digest of every anchor on file. Two anchors disagreeing on a
    row would mean one was forged: an error."""
    known: dict[int, str] = {}
    for anchor in anchors_list():
        if known.setdefault(anchor.row, anchor.hash) != anchor.hash:
            raise AnchorError(f"two anchors disagree on row {anchor.row}")
    return known
