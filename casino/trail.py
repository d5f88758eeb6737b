"""The tamper-evident trail: each change-log row holds the digest of the row
before it and a digest of its own content, so editing, deleting or inserting
a row in the database breaks the chain at that row.

The digest is SHA-256 over a canonical JSON list of the row's content and the
previous digest. Canonical means: keys sorted, no whitespace, times in UTC
with microseconds — what the database gives back is what was hashed, on
SQLite and on PostgreSQL (jsonb reorders keys; sorting makes that harmless).

A chain alone proves no more than "nobody rewrote it without recomputing
every later digest". `verify_trail` prints the head (last row and digest):
written down in a report or a regulator's register, it is an anchor that a
rewritten chain cannot match (`verify_trail --anchor ID:DIGEST`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

GENESIS = "0" * 64
FIELDS = (
    "id", "at", "user_id", "device", "action", "object_type", "object_id",
    "reason", "old", "new", "prev_hash", "hash",
)
# Any constant works; it only has to be the same for every writer of the log.
ADVISORY_LOCK_KEY = 0x43484E  # "CHN"


def _when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _body(
    *,
    prev_hash: str,
    at: datetime,
    user_id: int | None,
    device: str,
    action: str,
    object_type: str,
    object_id: str,
    reason: str,
    old: Any,
    new: Any,
) -> str:
    body = [
        prev_hash, _when(at), user_id, device or "", action, object_type or "",
        object_id or "", reason or "", old, new,
    ]
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_digest(**row: Any) -> str:
    """SHA-256 (hex) of the row's canonical body; `row` holds the fields
    prev_hash, at, user_id, device, action, object_type, object_id, reason,
    old and new."""
    return hashlib.sha256(_body(**row).encode("utf-8")).hexdigest()


def body_after_link(**row: Any) -> str:
    """The canonical body minus its opening `["<prev_hash>",`: what the
    database appends to the link it reads under the chain lock, so it can
    compute the digest itself (`casino.changelog.chained_insert_sql`). The
    link is 64 hex digits, which JSON writes as they are."""
    return _body(**{**row, "prev_hash": ""})[len('["",'):]


def chain_head(connection) -> str:
    """The digest the next row must link to. On PostgreSQL a transaction-level
    advisory lock serialises writers from here to their commit; log_action is
    the last statement of most services, so the lock is held for the commit
    only. SQLite has one writer at a time anyway, and the unique constraint on
    prev_hash refuses a fork on any database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        # A fresh statement after the lock: under READ COMMITTED it sees the
        # row the previous lock holder committed.
        cursor.execute("SELECT hash FROM casino_changelog ORDER BY id DESC LIMIT 1")
        row = cursor.fetchone()
    return row[0] if row and row[0] else GENESIS


@dataclass(frozen=True)
class TrailCheck:
    rows: int
    head_id: int | None
    head_hash: str
    broken_id: int | None = None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.broken_id is None

    def to_dict(self) -> dict:
        return {
            "ok": self.ok, "rows": self.rows, "head_id": self.head_id,
            "head_hash": self.head_hash, "broken_id": self.broken_id,
            "problem": self.problem,
        }


def verify_rows(
    rows: Iterable[dict], anchor: tuple[int, str] | None = None
) -> TrailCheck:
    """Walk rows in id order; stop at the first one that does not hold."""
    prev, count, head_id = GENESIS, 0, None
    anchor_seen = anchor is None
    for r in rows:
        count += 1
        rid = r["id"]
        if r["prev_hash"] != prev:
            what = "the first row" if prev == GENESIS else f"row {head_id}"
            return TrailCheck(
                count, head_id, prev, rid,
                f"row {rid} ({r['action']}): its link does not match {what} "
                "(a row before it was changed, removed or inserted)",
            )
        again = row_digest(**{k: r[k] for k in FIELDS if k not in ("id", "hash")})
        if again != r["hash"]:
            return TrailCheck(
                count, head_id, prev, rid,
                f"row {rid} ({r['action']}): its content does not match its digest "
                "(the row was edited)",
            )
        if anchor is not None and rid == anchor[0]:
            if r["hash"] != anchor[1]:
                return TrailCheck(
                    count, head_id, prev, rid,
                    f"row {rid}: digest {r['hash']} is not the anchor {anchor[1]} "
                    "(the chain was rewritten up to here)",
                )
            anchor_seen = True
        prev, head_id = r["hash"], rid
    if not anchor_seen:
        return TrailCheck(
            count, head_id, prev, anchor[0],
            f"row {anchor[0]} of the anchor is missing (rows were removed)",
        )
    return TrailCheck(count, head_id, prev)


def iter_rows(queryset, chunk: int = 2000) -> Iterator[dict]:
    """Rows as dicts in id order, a chunk at a time (a season is millions)."""
    last = 0
    while True:
        page = queryset.filter(id__gt=last).order_by("id").values(*FIELDS)
        batch = list(page[:chunk])
        if not batch:
            return
        yield from batch
        last = batch[-1]["id"]


def trail_verify(anchor: tuple[int, str] | None = None) -> TrailCheck:
    from .models import ChangeLog

    return verify_rows(iter_rows(ChangeLog.objects.all()), anchor)
