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

An anchor file (`<UTC time>-row<id>.json`, one JSON object, keys sorted):

    {"row": id, "hash": the row's HMAC, "link": the row's public link,
     "at": "YYYY-MM-DDTHH:MM:SS.ffffffZ", "reason": why,
     "signature": base64 Ed25519 signature, "signing_key_id": key id,
     "tsa_token": base64 DER RFC 3161 TimeStampToken, or null,
     "checked_from": the row after which the keyed chain was checked up to
     "row" before signing (casino/chain_check.py; not signed)}

The signature is over the anchor's statement, `casino.signing.
anchor_statement` (row, link, hash, at, reason: see casino/signing.py), so
that anyone with the casino's public key (/trail/keys.json) can check that
the casino's key vouched for this head at that time, and walk the public
links of a log segment up to it (casino/trail.py). `tsa_token` is the
trusted timestamp of the same statement when the authority answered at once
(casino/timestamps.py); a token that came later is in the file beside it.
Files written before signatures (no "signature") are accepted as they were,
unless a signed anchor is older: once anchors are signed, an unsigned one is
a failure, as is one whose signature does not hold.

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
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from . import timestamps
from .writeonce import file_create

log = logging.getLogger("casino.anchors")


class AnchorError(Exception):
    pass


@dataclass(frozen=True)
class Anchor:
    row: int
    hash: str
    at: datetime
    reason: str
    file: str = ""
    link: str = ""
    signature: str = ""
    signing_key_id: str = ""
    tsa_token: str = ""

    def to_dict(self) -> dict:
        return {"row": self.row, "hash": self.hash,
                "at": self.at.astimezone(UTC).isoformat(), "reason": self.reason,
                "file": self.file, "link": self.link, "signature": self.signature,
                "signing_key_id": self.signing_key_id,
                "tsa_token": self.tsa_token or None}

    def statement(self) -> bytes:
        """What the signature (and the trusted timestamp) is over."""
        from .signing import anchor_statement, at_text

        return anchor_statement(row=self.row, link=self.link, hash=self.hash,
                                at=at_text(self.at), reason=self.reason)


def _folder() -> Path:
    return Path(settings.TRAIL_ANCHOR_DIR)


def chain_head_row() -> tuple[int, str] | None:
    """The last committed row of the log (id, digest); no lock: an anchor
    vouches for what was committed when it was taken."""
    head = chain_head_entry()
    return head[:2] if head else None


def chain_head_entry() -> tuple[int, str, str] | None:
    """The last committed row of the log (id, digest, public link)."""
    from .models import ChangeLog

    # The primary's head, also inside a replica.reading() block (a report's
    # stamp): a replica may be behind.
    return (ChangeLog.objects.using("default").order_by("-id")
            .values_list("id", "hash", "link").first())


def anchor_write(row: int, digest: str, reason: str, link: str = "") -> Anchor:
    """One anchor file, signed (casino/signing.py), time-stamped when an
    authority is set and answers (casino/timestamps.py), created exclusively,
    read-only; signed only once the keyed chain under it holds
    (casino/chain_check.py: ChainBroken, an AnchorError, when it does not)."""
    from .signing import sign

    checked_from = _chain_checked(row, digest, link)
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    name = f"{now:%Y%m%dT%H%M%S%fZ}-row{row}.json"
    anchor = Anchor(row, digest, now, reason, name, link)
    signature, key_id = sign(anchor.statement())
    anchor = replace(anchor, signature=signature, signing_key_id=key_id)
    stamp = timestamps.ask_now(anchor.statement())
    anchor = replace(anchor, tsa_token=stamp.token_b64 if stamp else "")
    body = json.dumps({"row": row, "hash": digest, "link": link,
                       "at": _at_text(now), "reason": reason,
                       "signature": signature, "signing_key_id": key_id,
                       "tsa_token": anchor.tsa_token or None,
                       "checked_from": checked_from},
                      sort_keys=True, ensure_ascii=False)
    file_create(folder / name, body.encode("utf-8") + b"\n")
    _record(anchor, stamp, checked_from)
    return anchor


# What checks the keyed chain under an anchor before it is signed: registered
# at start-up (casino.apps: chain_check.chain_checked), as this module is
# below the trail's verification. With none registered nothing is signed.
_CHAIN_CHECKS: list[Callable[[int, str, str], int]] = []


def chain_check_register(check: Callable[[int, str, str], int]) -> None:
    if check not in _CHAIN_CHECKS:
        _CHAIN_CHECKS.append(check)


def _chain_checked(row: int, digest: str, link: str) -> int:
    """The row the check of the chain up to `row` started after."""
    if not _CHAIN_CHECKS:
        raise AnchorError("no check of the keyed chain is registered "
                          "(casino.apps): nothing is signed unchecked")
    return min(check(row, digest, link) for check in _CHAIN_CHECKS)


def _at_text(at: datetime) -> str:
    from .signing import at_text

    return at_text(at)


def _record(anchor: Anchor, stamp, checked_from: int | None = None) -> None:
    """The anchor in the database too (casino.AnchorRecord), with its token
    when the authority answered (casino/timestamps.py). The file is written
    first: a database that refuses the row loses no anchor (logged)."""
    from django.db import DatabaseError, transaction

    from .models import AnchorRecord

    try:
        with transaction.atomic(using="default"):
            record = AnchorRecord.objects.using("default").create(
                row=anchor.row, link=anchor.link, hash=anchor.hash, at=anchor.at,
                reason=anchor.reason, signature=anchor.signature,
                signing_key_id=anchor.signing_key_id, file=anchor.file,
                checked_from=checked_from)
            if stamp is not None:
                timestamps.token_keep(record, stamp)
    except DatabaseError:
        log.exception("anchor %s written, but not recorded in the database",
                      anchor.file)


def trail_anchor(*, reason: str = "manual") -> Anchor | None:
    """Anchor the chain's head now; None when the log is empty."""
    head = chain_head_entry()
    if head is None:
        return None
    return anchor_write(head[0], head[1], reason, head[2])


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
                            path.name, str(data.get("link") or ""),
                            str(data.get("signature") or ""),
                            str(data.get("signing_key_id") or ""),
                            str(data.get("tsa_token") or ""))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise AnchorError(f"anchor file {path.name} is unreadable: {exc}") from exc
        if len(anchor.hash) != 64 or len(anchor.link) not in (0, 64):
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


def anchors_links(found: list[Anchor]) -> dict[int, str]:
    """Row id -> public link of every anchor that gives one (two anchors
    disagreeing on a row: an error)."""
    known: dict[int, str] = {}
    for anchor in found:
        if anchor.link and known.setdefault(anchor.row, anchor.link) != anchor.link:
            raise AnchorError(f"two anchors disagree on row {anchor.row}'s link")
    return known


def anchors_signed(found: list[Anchor]) -> list[tuple[int, str]]:
    """Each anchor whose signature does not hold, by the keys of
    /trail/keys.json and within the dates of the key named; and, once
    anchors are signed, one that is not (module docstring). (row, problem)."""
    from .signing import verify

    signed = [a.at for a in found if a.signature]
    since = min(signed) if signed else None
    problems = []
    for anchor in sorted(found, key=lambda a: (a.row, a.at)):
        if not anchor.signature:
            if since is not None and anchor.at >= since:
                problems.append((anchor.row, (
                    f"row {anchor.row}: anchor file {anchor.file} is not signed, "
                    "though anchors are signed since "
                    f"{since.astimezone(UTC):%Y-%m-%d %H:%M} UTC (a forged file?)")))
            continue
        wrong = verify(anchor.statement(), anchor.signature, anchor.signing_key_id,
                       anchor.at)
        if wrong:
            problems.append((anchor.row,
                             f"row {anchor.row}: anchor file {anchor.file}: {wrong}"))
    return problems


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
    # the apps' records first: a problem names what recorded it there first
    return [r for source in [*_RECORDERS, _records] for r in source()]


def _records() -> Iterable[Recorded]:
    """Every anchor kept in the database (casino.AnchorRecord)."""
    from .models import AnchorRecord

    rows = (AnchorRecord.objects.using("default").order_by("id")
            .values_list("id", "row", "hash", "file"))
    for pk, row, digest, name in rows.iterator(chunk_size=2000):
        yield Recorded(row, digest, f"anchor record {pk} ({name})")


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
    problems = (anchors_missing(found) + anchors_signed(found)
                + timestamps.tokens_check(found))
    fresh = anchors_freshness(found, now=now)
    if fresh.problem:
        problems.append((fresh.first_unanchored, fresh.problem))
    return problems
