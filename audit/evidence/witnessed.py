"""The bundle's checkpoints (issue 37): what proves that every log row of
its windows is a leaf of a tree the casino signed and its witnesses cosigned
(casino/merkle.py, casino/witness.py), in `checkpoints.jsonl`.

The rows of a window are consecutive leaves of the log's RFC 6962 tree
(leaf data = the row's public link): the window's part of the tree is a
*segment* (one per window, or more where a declared loss started a new
epoch of the log inside it, casino/epochs.py). For each segment the part
carries the hashes of the complete subtrees left of its first leaf (the
tree's right edge there, tlog.subtrees(0, first)), and for each checkpoint
it is checked against, the hashes of the subtrees right of its last leaf up
to the checkpoint's size: with the window's own rows the verifier
recomputes each checkpoint's root (tools/evidence_verifier/witnessed.py).

Which checkpoints: for each segment, the earliest whose tree covers its
last leaf and that the quorum of witnesses (WITNESS_QUORUM) cosigned
(looked for among the next 10,000), else the earliest covering it (with
what cosignatures it has); and the last one made in each hour inside the
segment (a month: ~720, not a checkpoint a second). Each checkpoint once,
by log and size, with its stored cosignatures and a consistency proof from
the previous one of its log. O(log n) tree nodes a checkpoint, fetched a
level at a time (a few queries for the whole bundle); nothing per row. A
window no checkpoint covers yet (no beat, or built before the next tick)
is carried as far as one does: the verifier says so.

Lines: {"kind": "checkpoint", "note", "cosignatures": [lines],
"consistency": [base64 hashes]} in (log, size) order, then {"kind":
"segment", "window", "origin", "first_row", "last_row", "first_index",
"left": [...], "checks": [{"size", "right": [...]}]}.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Max
from django.db.models.functions import Trunc

from casino.merkle import DbNodes, origin
from casino.models import Checkpoint, Cosignature, TreeNode, WitnessEvent
from tools.evidence_verifier import tlog

PART = "checkpoints.jsonl"


def _b64(hashes) -> list[str]:
    return [tlog.b64(h) for h in hashes]


def _pieces(window: dict) -> list[tuple[int, int]]:
    """The window's rows first..last cut where a declared epoch starts."""
    first, last = window["first"], window["last"]
    cuts = list(WitnessEvent.objects.filter(kind="epoch", row__gt=first,
                                            row__lte=last)
                .order_by("row").values_list("row", flat=True))
    starts = [first, *cuts]
    return [(s, (starts[i + 1] - 1) if i + 1 < len(starts) else last)
            for i, s in enumerate(starts)]


def _segment(start: int, end: int) -> dict | None:
    """The leaves of rows start..end: (epoch, first index, last index, the
    row of the last), or None while the tree does not hold the first."""
    leaf = TreeNode.objects.filter(level=0, row=start).values(
        "epoch", "index").first()
    if leaf is None:
        return None
    epoch = leaf["epoch"]
    last = (TreeNode.objects.filter(level=0, epoch=epoch, row__gte=start,
                                    row__lte=end)
            .order_by("-index").values("index", "row").first())
    return {"epoch": epoch, "lo": leaf["index"], "hi": last["index"] + 1,
            "last_row": last["row"]}


BATCH = 200  # covering checkpoints looked at a time for the quorum
SEARCH = 50  # batches: past 10,000 checkpoints (over an hour), the earliest


def _closing(mine, hi: int) -> int | None:
    """The earliest checkpoint holding leaf hi - 1 that the quorum cosigned
    (looked for a batch at a time, in tree order: no count over the whole
    log's checkpoints), else the earliest holding it."""
    quorum = max(settings.WITNESS_QUORUM, 1) if settings.WITNESSES else 0
    covering = mine.filter(size__gte=hi).order_by("size", "id")
    first, after = None, None
    for _ in range(SEARCH if quorum else 1):
        page = covering if after is None else covering.filter(size__gt=after)
        ids = list(page.values_list("id", "size")[:BATCH])
        if not ids:
            break
        first = first or ids[0][0]
        if not quorum:
            break
        counts = dict(Cosignature.objects.filter(checkpoint_id__in=[i for i, _ in ids])
                      .values("checkpoint_id").annotate(n=Count("id"))
                      .values_list("checkpoint_id", "n"))
        for cid, _size in ids:
            if counts.get(cid, 0) >= quorum:
                return cid
        after = ids[-1][1]
    return first


def _chosen(epoch: int, lo: int, hi: int) -> list[Checkpoint]:
    """The checkpoints a segment of leaves [lo, hi) is checked against: the
    closing one, and the last of each hour inside it."""
    mine = Checkpoint.objects.filter(epoch=epoch)
    ids = set(mine.filter(size__gt=lo, size__lte=hi)
              .annotate(hour=Trunc("at", "hour")).order_by()
              .values("hour").annotate(last=Max("id")).values_list("last", flat=True))
    closing = _closing(mine, hi)
    if closing is not None:
        ids.add(closing)
    return list(Checkpoint.objects.filter(id__in=ids).order_by("size", "id"))


ZERO = bytes(tlog.HASH_SIZE)


def _prefetched(epoch: int, jobs: list) -> list:
    """Each job (a function of a tlog.Nodes) run over the epoch's tree, the
    nodes they all read fetched first in a few queries a level (a first
    pass records the positions: the shape of a proof does not depend on the
    hashes), not one query a node."""
    wanted: set[tuple[int, int]] = set()

    def record(level: int, index: int) -> bytes:
        wanted.add((level, index))
        return ZERO

    for job in jobs:
        job(record)
    cache: dict[tuple[int, int], bytes] = {}
    by_level: dict[int, list[int]] = {}
    for level, index in wanted:
        by_level.setdefault(level, []).append(index)
    for level, indexes in by_level.items():
        indexes.sort()
        for at in range(0, len(indexes), 2000):
            for index, h in TreeNode.objects.filter(
                    epoch=epoch, level=level,
                    index__in=indexes[at:at + 2000]).values_list("index", "hash"):
                cache[(level, index)] = bytes.fromhex(h)
    nodes = DbNodes(cache, epoch=epoch)  # (a node not found: read, or named)
    return [job(nodes.get) for job in jobs]


def _subtrees(lo: int, hi: int):
    return lambda get: _b64(get(*p) for p in tlog.subtrees(lo, hi))


def _consistency(old: int, new: int):
    return lambda get: _b64(tlog.consistency_proof(get, old, new))


def checkpoint_lines(windows: list[dict]) -> list[dict]:
    """checkpoints.jsonl's lines for the bundle's windows."""
    segments, chosen = [], {}
    for n, window in enumerate(windows):
        for start, end in _pieces(window):
            seg = _segment(start, end)
            if seg is None:
                continue
            seg["cps"] = _chosen(seg["epoch"], seg["lo"], seg["hi"])
            seg.update(window=n, first_row=start)
            segments.append(seg)
            chosen.update((cp.pk, cp) for cp in seg["cps"])
    ordered = sorted(chosen.values(), key=lambda c: (c.epoch, c.size, c.pk))
    # the hashes every line needs, by epoch: one prefetch each
    jobs: dict[int, list] = {}
    for seg in segments:
        mine = jobs.setdefault(seg["epoch"], [])
        seg["jobs"] = len(mine)
        mine.append(_subtrees(0, seg["lo"]))
        mine += [_subtrees(seg["hi"], cp.size) for cp in seg["cps"]]
    before: dict[int, Checkpoint] = {}
    for cp in ordered:
        last = before.get(cp.epoch)
        cp.job = len(jobs.setdefault(cp.epoch, []))
        jobs[cp.epoch].append(_consistency(last.size if last else 0, cp.size))
        before[cp.epoch] = cp
    done = {epoch: _prefetched(epoch, mine) for epoch, mine in jobs.items()}
    cosigned: dict[int, list[str]] = {}
    for cid, line in (Cosignature.objects.filter(checkpoint_id__in=list(chosen))
                      .order_by("witness", "id").values_list("checkpoint_id", "line")):
        cosigned.setdefault(cid, []).append(line)
    lines = [{"kind": "checkpoint", "note": cp.note,
              "cosignatures": cosigned.get(cp.pk, []),
              "consistency": done[cp.epoch][cp.job]} for cp in ordered]
    for seg in segments:
        found, at = done[seg["epoch"]], seg["jobs"]
        lines.append({
            "kind": "segment", "window": seg["window"], "origin": origin(seg["epoch"]),
            "first_row": seg["first_row"], "last_row": seg["last_row"],
            "first_index": seg["lo"], "left": found[at],
            "checks": [{"size": cp.size, "right": found[at + 1 + i]}
                       for i, cp in enumerate(seg["cps"])]})
    return lines


def witness_keys() -> list[str]:
    """The witnesses' verifier keys as WITNESS_URLS configures them (for
    information: a regulator passes his own with --witness-key)."""
    return [w["vkey"] for w in settings.WITNESSES]
