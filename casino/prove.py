"""One coup proven alone (issue 37 item 4): its ledger rows (the coup, its
stakes and findings, as the trail digests them), the change-log rows that
wrote them with their previous links, each row's inclusion proof in the
trail's Merkle tree (casino/merkle.py), a checkpoint that covers them signed
with the log's key, and the witnesses' cosignatures of it. A file of a few
kilobytes that `python tools/verify_evidence.py coup-proof FILE` checks with
the log's and the witnesses' public keys, no database and no secret
(tools/evidence_verifier/coupproof.py says exactly what).

The checkpoint chosen: the latest one cosigned by the quorum (WITNESS_QUORUM)
that covers the rows; else the latest covering them, with the cosignatures
it has (the verifier then says the quorum is short)."""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.db.models import Count, Q

from tools.evidence_verifier import tlog

from .merkle import DbNodes
from .models import ChangeLog, Checkpoint, TreeNode
from .trail import CONTENT, GENESIS, _when, ledger_content

FORMAT = "chemmy-coup-proof/1"
CHILDREN = ("tables.stake", "tables.finding")


class ProofUnavailable(Exception):
    """The coup cannot be proven yet (no such coup, not checkpointed)."""


def _ledger_rows(coup) -> list[dict]:
    rows = [{"label": "tables.coup", "key": str(coup.pk),
             "row": ledger_content(coup)}]
    for label in CHILDREN:
        model = apps.get_model(label)
        for n, obj in enumerate(model._base_manager.filter(coup_id=coup.pk)
                                .order_by("pk")):
            rows.append({"label": label, "key": f"{coup.pk}#{n}",
                         "row": ledger_content(obj)})
    return rows


def _log_rows(coup_id: int) -> list[dict]:
    key = str(coup_id)
    named = (Q(object_type="tables.coup", object_id=key)
             | Q(**{"ledger__tables.coup__has_key": key}))
    rows = list(ChangeLog.objects.filter(named).order_by("id").values(
        "id", "link", *CONTENT))
    out = []
    for r in rows:
        prev = (ChangeLog.objects.filter(id__lt=r["id"]).order_by("-id")
                .values_list("link", flat=True).first()) or GENESIS
        content = {k: r[k] for k in CONTENT if k != "prev_hash"}
        content["at"] = _when(r["at"])
        out.append({"id": r["id"], "link": r["link"], "prev_link": prev,
                    "row": content})
    return out


def _checkpoint(epoch: int, last_index: int) -> Checkpoint:
    covering = Checkpoint.objects.filter(epoch=epoch, size__gt=last_index)
    quorum = max(settings.WITNESS_QUORUM, 1) if settings.WITNESSES else 0
    best = (covering.annotate(n=Count("cosignatures")).filter(n__gte=quorum)
            .order_by("-id").first())
    best = best or covering.order_by("-id").first()
    if best is None:
        raise ProofUnavailable(
            "no checkpoint covers the coup's rows yet (one follows within a "
            "second of a write: try again)")
    return best


def coup_prove(*, coup_id: int) -> dict:
    model = apps.get_model("tables.coup")
    coup = model._base_manager.filter(pk=coup_id).first()
    if coup is None:
        raise ProofUnavailable(f"no coup {coup_id}")
    log = _log_rows(coup.pk)
    if not log:
        raise ProofUnavailable(f"no change-log row names coup {coup_id}")
    found = list(TreeNode.objects.filter(level=0, row__in=[r["id"] for r in log])
                 .order_by("epoch").values_list("row", "index", "epoch"))
    epoch = found[-1][2] if found else None
    leaves = {row: index for row, index, e in found if e == epoch}
    if len(leaves) != len(log):
        raise ProofUnavailable("the coup's rows are not in a checkpoint yet")
    cp = _checkpoint(epoch, max(leaves.values()))
    nodes = DbNodes(epoch=epoch)
    for r in log:
        r["index"] = leaves[r["id"]]
        r["inclusion"] = [tlog.b64(h) for h in
                          tlog.inclusion_proof(nodes.get, r["index"], cp.size)]
    return {
        "format": FORMAT,
        "coup": coup.pk,
        "rows": _ledger_rows(coup),
        "log": log,
        "checkpoint": cp.note,
        "cosignatures": [c.line for c in cp.cosignatures.order_by("witness")],
    }
