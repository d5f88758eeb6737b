"""Nothing unverified is signed (issue 34 item 3).

An anchor's Ed25519 signature (casino/signing.py) vouches for the head of
the public links, which anyone can recompute: a database superuser without
TRAIL_KEY who rewrote a row and recomputed its digests and every link after
it would otherwise get his forgery signed by the next anchor, and an
outsider walking the links would find nothing wrong. So before any anchor
is signed (beat's, a gaming-day close's, a report's stamp, an evidence
bundle's), the keyed chain (the HMACs, which need TRAIL_KEY) is checked up
to the row it anchors; a chain that does not hold is not signed: the
caller fails with `ChainBroken` naming the row, and the alarm is raised (a
critical flag, through casino/continuity.py's hook: casino imports no app).

Incremental: an anchor records (`AnchorRecord.checked_from`, and the file's
`checked_from`) that the chain was checked before it was signed, from the
row after `checked_from` to its own row; the next check starts at the
newest such anchor whose signature holds and whose row is still in the log
as it signed it, so each anchor checks only the rows written since the
last one (bench/bench_chain_check.py). With none yet (a fresh install, or
the first anchor after this release), the whole chain is checked once.

The mark itself is not signed (the statement stays as casino/signing.py
documents it): a mark forged on a record can only make a check start at an
anchor the casino's key signed; the rows under it are those that
`verify_trail` checks in full.
"""

from __future__ import annotations

import hmac
import logging

from .anchors import AnchorError
from .trail import GENESIS, iter_rows, row_digests, trail_keys

log = logging.getLogger("casino.anchors")
CONTENT = ("at", "user_id", "device", "action", "object_type", "object_id",
           "reason", "old", "new", "ledger")


class ChainBroken(AnchorError):
    """The keyed chain under an anchor about to be signed does not hold."""

    def __init__(self, row: int, problem: str):
        self.row, self.problem = row, problem
        super().__init__(f"nothing was signed: trail row {row}: {problem}")

    def __reduce__(self):  # sent whole from the process building a log part
        return type(self), (self.row, self.problem)


def checkpoint() -> tuple[int, str, str]:
    """(row, hash, link) where the last check ended: the newest anchor
    recorded as checked whose signature holds; (0, GENESIS, GENESIS) with
    none."""
    from .models import AnchorRecord
    from .signing import anchor_statement, at_text, verify

    records = (AnchorRecord.objects.using("default")
               .filter(checked_from__isnull=False).order_by("-row", "-id"))
    for record in records.iterator(chunk_size=20):
        statement = anchor_statement(row=record.row, link=record.link,
                                     hash=record.hash, at=at_text(record.at),
                                     reason=record.reason)
        if record.link and not verify(statement, record.signature,
                                      record.signing_key_id, record.at):
            return record.row, record.hash, record.link
    return 0, GENESIS, GENESIS


def _walk(start: tuple[int, str, str], row: int) -> tuple[int, str, str]:
    """Check rows start+1..row; (row, hash, link) of the last one."""
    from .models import ChangeLog

    keys = trail_keys()
    last, prev, prev_link = start
    rows = ChangeLog.objects.using("default").filter(id__gt=last, id__lte=row)
    for r in iter_rows(rows):
        rid = r["id"]
        if r["prev_hash"] != prev:
            raise ChainBroken(rid, f"its link to row {last} does not hold (a row "
                              "was removed, inserted or changed before it)")
        key = keys.get(r["key_id"] or "")
        if key is None:
            raise ChainBroken(rid, f"signed with key {r['key_id'] or '(none)'}, "
                              "which is neither TRAIL_KEY nor in TRAIL_OLD_KEYS")
        digest, link = row_digests(key=key, prev_link=prev_link, prev_hash=prev,
                                   **{k: r[k] for k in CONTENT})
        if not hmac.compare_digest(digest, r["hash"]):
            raise ChainBroken(rid, f"its content does not match its digest "
                              f"({r['action']}: the row was edited without the "
                              "trail key)")
        if r["link"] != link:
            raise ChainBroken(rid, "its public link is not the SHA-256 of its "
                              "content and the link before it")
        last, prev, prev_link = rid, r["hash"], link
    return last, prev, prev_link


def chain_checked(row: int, digest: str, link: str) -> int:
    """Check the keyed chain up to `row` (whose hash and link must be
    `digest` and `link`) from the last checkpoint; the row the check started
    after. ChainBroken, with the alarm raised, when it does not hold."""
    from .models import ChangeLog

    start = checkpoint()
    try:
        if row <= start[0]:
            found = (ChangeLog.objects.using("default").filter(id=start[0])
                     .values_list("hash", "link").first())
            if found != start[1:]:
                raise ChainBroken(start[0], "it is no longer the row an anchor "
                                  "signed after checking the chain (rows were "
                                  "changed or removed)")
            there = (ChangeLog.objects.using("default").filter(id=row)
                     .values_list("hash", "link").first())
            end = (row, *(there or ("", "")))
        else:
            end = _walk(start, row)
        if end[0] != row or end[1:] != (digest, link):
            raise ChainBroken(row, "the log ends before it, or it is not the row "
                              "to be anchored")
    except ChainBroken as exc:
        _alarm(exc)
        raise
    return min(start[0], row)


def _alarm(exc: ChainBroken) -> None:
    from .continuity import alarm
    from .errors import RecordChanged

    log.error("anchor refused: %s", exc)
    found = (_row_hash(exc.row) or "-")
    alarm(RecordChanged("casino.changelog", str(exc.row),
                        f"{exc.problem}; no anchor was signed", found=found),
          device="anchor")


def _row_hash(rid: int) -> str:
    from .models import ChangeLog

    return (ChangeLog.objects.using("default").filter(id=rid)
            .values_list("hash", flat=True).first() or "")
