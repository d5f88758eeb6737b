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
last leaf and that the quorum of witnesses (WITNESS_QUORUM) cosigned, else
the earliest covering it (with what cosignatures it has); and the last one
made in each hour inside the segment (a month: ~720, not a checkpoint a
second). Each checkpoint once, by log and size, with its stored
cosignatures and a consistency proof from the previous one of its log.
O(log n) look-ups a checkpoint; nothing per row. A window no checkpoint
covers yet (no beat, or built before the next tick) is carried as far as
one does: the verifier says so.

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
from casino.models import Checkpoint, TreeNode, WitnessEvent
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


def _chosen(epoch: int, lo: int, hi: int) -> list[Checkpoint]:
    """The checkpoints a segment of leaves [lo, hi) is checked against."""
    mine = Checkpoint.objects.filter(epoch=epoch)
    hourly = (mine.filter(size__gt=lo, size__lte=hi)
              .annotate(hour=Trunc("at", "hour")).order_by()
              .values("hour").annotate(last=Max("id")).values_list("last",
                                                                   flat=True))
    ids = set(hourly)
    covering = mine.filter(size__gte=hi).order_by("size", "id")
    quorum = max(settings.WITNESS_QUORUM, 1) if settings.WITNESSES else 0
    closing = None
    if quorum:
        closing = (covering.annotate(n=Count("cosignatures")).filter(n__gte=quorum)
                   .values_list("id", flat=True).first())
    closing = closing or covering.values_list("id", flat=True).first()
    if closing is not None:
        ids.add(closing)
    return list(Checkpoint.objects.filter(id__in=ids).order_by("size", "id"))


def checkpoint_lines(windows: list[dict]) -> list[dict]:
    """checkpoints.jsonl's lines for the bundle's windows."""
    segments, chosen = [], {}
    for n, window in enumerate(windows):
        for start, end in _pieces(window):
            seg = _segment(start, end)
            if seg is None:
                continue
            cps = _chosen(seg["epoch"], seg["lo"], seg["hi"])
            nodes = DbNodes(epoch=seg["epoch"])
            segments.append({
                "kind": "segment", "window": n, "origin": origin(seg["epoch"]),
                "first_row": start, "last_row": seg["last_row"],
                "first_index": seg["lo"],
                "left": _b64(nodes.get(*p) for p in tlog.subtrees(0, seg["lo"])),
                "checks": [{"size": cp.size, "right": _b64(
                    nodes.get(*p) for p in tlog.subtrees(seg["hi"], cp.size))}
                    for cp in cps],
            })
            for cp in cps:
                chosen[cp.pk] = cp
    lines, previous = [], {}
    for cp in sorted(chosen.values(), key=lambda c: (c.epoch, c.size, c.pk)):
        before = previous.get(cp.epoch)
        proof = []
        if before is not None:
            proof = tlog.consistency_proof(DbNodes(epoch=cp.epoch).get,
                                           before.size, cp.size)
        previous[cp.epoch] = cp
        lines.append({"kind": "checkpoint", "note": cp.note,
                      "cosignatures": [c.line for c in
                                       cp.cosignatures.order_by("witness", "id")],
                      "consistency": _b64(proof)})
    return lines + segments


def witness_keys() -> list[str]:
    """The witnesses' verifier keys as WITNESS_URLS configures them (for
    information: a regulator passes his own with --witness-key)."""
    return [w["vkey"] for w in settings.WITNESSES]
