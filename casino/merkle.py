"""The trail as a Merkle log (issue 37): its leaves are the change-log rows'
public links (casino/trail.py) in id order, leaf data = the link's 32 raw
bytes, so an outsider needs no key; the tree is RFC 6962's
(tools/evidence_verifier/tlog.py).

`tree_extend` appends the rows committed since the last checkpoint, keeping
every complete subtree in casino.TreeNode (about one node per row), so a
checkpoint at size n costs O(log n) look-ups plus the new rows, and an
inclusion or consistency proof O(log n): never a rehash of the log.
`checkpoint_make` signs the new tree head as a c2sp.org/tlog-checkpoint
(origin TRAIL_LOG_ORIGIN, key name the origin, TRAIL_SIGNING_KEY; a declared
loss starts a new epoch, casino/epochs.py), which casino/checkpoints.py hands
to the witnesses (casino/witness.py). It runs in the Celery task
`trail.checkpoint`, which beat sends every second, never on a write's path:
idle, no checkpoint. An advisory lock keeps it to one maker at a time.

Before it extends the tree it checks that the database's chain still
extends it: the tree's last leaf's row is there with the same link, and the
first new row links to it. A cut tail or a rewritten chain is a `fork`
(casino.WitnessEvent), which stops writes until declared.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from tools.evidence_verifier import tlog

from .models import ChangeLog, Checkpoint, TreeNode, WitnessEvent
from .trailstop import stop_reason_event

log = logging.getLogger("casino.witness")

CHECKPOINT_LOCK_KEY = 0x434B50  # "CKP": one checkpoint maker at a time
CHUNK = 5000


def leaf_of(link: str) -> bytes:
    """The leaf hash of a change-log row: RFC 6962's over its public link's
    32 bytes."""
    return tlog.leaf_hash(bytes.fromhex(link))


def current_epoch() -> tuple[int, int]:
    """(the log's epoch, its first change-log row): 1 and 0 until a loss is
    declared (casino/epochs.py); then each declaration starts the next log,
    whose first leaf is the declaration's own row."""
    last = (WitnessEvent.objects.filter(kind="epoch").order_by("-id")
            .values("epoch", "row").first())
    if last is None:
        return 1, 0
    return last["epoch"], last["row"]


class DbNodes:
    """tlog.Nodes over one epoch's casino.TreeNode, with what it read kept (a
    proof reads O(log n) nodes)."""

    def __init__(self, cache: dict | None = None, *, epoch: int | None = None):
        self.cache: dict[tuple[int, int], bytes] = cache or {}
        self.epoch = current_epoch()[0] if epoch is None else epoch

    def get(self, level: int, index: int) -> bytes:
        key = (level, index)
        if key not in self.cache:
            row = TreeNode.objects.filter(
                epoch=self.epoch, level=level, index=index).values_list(
                "hash", flat=True).first()
            if row is None:
                raise tlog.ProofError(f"tree node {level}/{index} is missing")
            self.cache[key] = bytes.fromhex(row)
        return self.cache[key]


def frontier(size: int) -> list[tuple[int, int]]:
    """The complete subtrees (level, index) that make a tree of `size`, left
    to right: one per bit of size."""
    return tlog.subtrees(0, size)


def _load(epoch: int, positions: list[tuple[int, int]]
          ) -> dict[tuple[int, int], bytes]:
    from django.db.models import Q

    if not positions:
        return {}
    q = Q()
    for level, index in positions:
        q |= Q(level=level, index=index)
    return {(n.level, n.index): bytes.fromhex(n.hash)
            for n in TreeNode.objects.filter(q, epoch=epoch).only(
                "level", "index", "hash")}


@dataclass
class TreeHead:
    epoch: int
    size: int
    root: bytes
    head_row: int | None
    start_row: int = 0


def tree_head() -> TreeHead:
    """The current epoch's tree as the table holds it: its size, root and
    last leaf's row."""
    epoch, start = current_epoch()
    last = (TreeNode.objects.filter(epoch=epoch, level=0).order_by("-index")
            .values("index", "row").first())
    if last is None:
        return TreeHead(epoch, 0, tlog.EMPTY_ROOT, None, start)
    size = last["index"] + 1
    nodes = DbNodes(_load(epoch, frontier(size)), epoch=epoch)
    return TreeHead(epoch, size, tlog.root_hash(nodes.get, size), last["row"], start)


class ChainBroken(Exception):
    """The database's chain does not extend the tree (a cut tail, a rewrite)."""


def _continuity(head: TreeHead, first_new: dict | None) -> None:
    if head.head_row is None:
        return
    last = ChangeLog.objects.filter(id=head.head_row).values(
        "hash", "link").first()
    stored = TreeNode.objects.filter(
        epoch=head.epoch, level=0, index=head.size - 1).values_list(
        "hash", flat=True).first()
    if last is None:
        raise ChainBroken(
            f"row {head.head_row}, leaf {head.size} of the checkpointed tree, is "
            "missing from the change log (its tail was cut, or an older dump "
            "restored)")
    if stored != leaf_of(last["link"] or "0" * 64).hex():
        raise ChainBroken(
            f"row {head.head_row}'s public link differs from leaf {head.size} of "
            "the checkpointed tree (the chain was rewritten)")
    if first_new is not None and first_new["prev_hash"] != last["hash"]:
        raise ChainBroken(
            f"row {first_new['id']} does not link to row {head.head_row}, the "
            "checkpointed head (rows were removed or the chain rewritten)")


def tree_extend() -> TreeHead:
    """Append the change-log rows written since the tree's last leaf; raises
    ChainBroken when the database's chain no longer extends the tree."""
    head = tree_head()
    epoch = head.epoch
    cache = _load(epoch, frontier(head.size))
    size = head.size
    # the epoch's first row is a leaf too (the declaration, casino/epochs.py)
    last_row = head.head_row or (head.start_row - 1 if head.start_row else 0)
    checked = False
    while True:
        rows = list(ChangeLog.objects.filter(id__gt=last_row).order_by("id")
                    .values("id", "link", "prev_hash")[:CHUNK])
        if not checked:
            _continuity(head, rows[0] if rows else None)
            checked = True
        if not rows:
            break
        new = []
        for r in rows:
            if not r["link"]:
                raise ChainBroken(f"row {r['id']} has no public link")
            h, level, index = leaf_of(r["link"]), 0, size
            new.append(TreeNode(epoch=epoch, level=0, index=index, hash=h.hex(),
                                row=r["id"]))
            cache[(0, index)] = h
            while index & 1:
                h = tlog.node_hash(cache[(level, index - 1)], h)
                level, index = level + 1, index >> 1
                cache[(level, index)] = h
                new.append(TreeNode(epoch=epoch, level=level, index=index,
                                    hash=h.hex()))
            size += 1
        TreeNode.objects.bulk_create(new)
        last_row = rows[-1]["id"]
        # only the right edge is needed from here on
        keep = set(frontier(size))
        cache = {k: v for k, v in cache.items() if k in keep}
    root = tlog.root_hash(DbNodes(cache, epoch=epoch).get, size)
    return TreeHead(epoch, size, root, (last_row if size else None) or None,
                    head.start_row)


def origin(epoch: int | None = None) -> str:
    """The log's name in its checkpoints: TRAIL_LOG_ORIGIN for the first
    epoch, then "<TRAIL_LOG_ORIGIN>/epoch<n>" (a new log for the witnesses,
    which never cosign a tree that does not extend the last one)."""
    epoch = current_epoch()[0] if epoch is None else epoch
    base = settings.TRAIL_LOG_ORIGIN
    return base if epoch == 1 else f"{base}/epoch{epoch}"


def _log_key():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(settings.TRAIL_SIGNING_KEY)


def log_vkey(epoch: int | None = None) -> str:
    """The log's verifier key (signed-note, type 0x01), for the witnesses."""
    return tlog.vkey(origin(epoch), tlog.public_raw(_log_key().public_key()))


def checkpoint_note(size: int, root: bytes, epoch: int) -> str:
    name = origin(epoch)
    text = tlog.Checkpoint(name, size, root).text()
    return text + "\n" + tlog.note_sign(text, name, _log_key())


def _lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHECKPOINT_LOCK_KEY])


def fork_record(kind: str, detail: str, *, witness: str = "", size=None,
                request: str = "") -> WitnessEvent:
    """Name a fork or a rollback: a critical flag (through the apps' alarm,
    casino/continuity.py), then the event that stops writes."""
    from .continuity import alarm
    from .errors import RecordChanged

    log.critical("trail %s: %s", kind, detail)
    detail = detail[:2000]
    seen = stop_reason_event()
    if seen is not None and seen.kind == kind and seen.detail == detail:
        return seen  # named already, and writes are stopped
    if seen is None:  # (once stopped, the chain takes no flag's row either)
        alarm(RecordChanged("casino.changelog", str(size or ""), detail[:300],
                            found=kind), device="witness")
    return WitnessEvent.objects.create(
        kind=kind, witness=witness, size=size, detail=detail,
        request=request, at=timezone.now())


def checkpoint_make() -> Checkpoint | None:
    """Extend the tree and sign a checkpoint of it, if it grew (idle: None).
    One maker at a time (an advisory lock); a broken chain writes nothing
    but the fork's record."""
    try:
        with transaction.atomic():
            _lock()
            head = tree_extend()
            last = (Checkpoint.objects.filter(epoch=head.epoch).order_by("-id")
                    .values("size").first())
            if head.size == 0 or (last is not None and head.size == last["size"]):
                return None
            return Checkpoint.objects.create(
                epoch=head.epoch, size=head.size, root=head.root.hex(),
                head_row=head.head_row, at=timezone.now(),
                note=checkpoint_note(head.size, head.root, head.epoch))
    except ChainBroken as exc:
        fork_record("fork", "the change log no longer extends the checkpointed "
                    f"tree: {exc}")
    return None
