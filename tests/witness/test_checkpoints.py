"""The trail as a Merkle log (casino/merkle.py): the tree kept incrementally
is the tree of the change log's links, each checkpoint is a signed note the
log's key verifies, idle makes none, and a cut tail or a rewritten chain is
named and stops writes (503 naming it)."""

from __future__ import annotations

import pytest

from casino.merkle import DbNodes, checkpoint_make, leaf_of, log_vkey
from casino.models import ChangeLog, Checkpoint, TreeNode, WitnessEvent
from casino.trailstop import stop_reason_event
from tests.witness.conftest import table_created, write
from tools.evidence_verifier import tlog


def db_tree() -> tlog.MemoryTree:
    links = ChangeLog.objects.order_by("id").values_list("link", flat=True)
    return tlog.MemoryTree([leaf_of(x) for x in links])


@pytest.mark.django_db
def test_incremental_checkpoints_are_the_logs_tree():
    write(3)
    first = checkpoint_make()
    assert first is not None and first.size == ChangeLog.objects.count()
    assert checkpoint_make() is None  # idle: no checkpoint
    sizes = [first.size]
    for n in (1, 4, 9):
        write(n)
        cp = checkpoint_make()
        sizes.append(cp.size)
        full = db_tree()
        assert cp.size == full.size and bytes.fromhex(cp.root) == full.root()
        text, names = tlog.note_open(cp.note, [tlog.parse_vkey(log_vkey())])
        assert names == [tlog.checkpoint_parse(text).origin]
        assert tlog.checkpoint_parse(text).root == full.root()
    # every complete subtree is stored once; proofs from the table verify
    assert TreeNode.objects.filter(level=0).count() == sizes[-1]
    nodes = DbNodes()
    for old in sizes[:-1]:
        proof = tlog.consistency_proof(nodes.get, old, sizes[-1])
        tlog.verify_consistency(old, sizes[-1], proof, db_tree().root(old),
                                db_tree().root())
    for i in (0, sizes[-1] // 2, sizes[-1] - 1):
        proof = tlog.inclusion_proof(nodes.get, i, sizes[-1])
        leaf = bytes.fromhex(TreeNode.objects.get(level=0, index=i).hash)
        tlog.verify_inclusion(i, sizes[-1], leaf, proof, db_tree().root())


@pytest.mark.django_db
def test_beat_checkpoints_every_second_and_idle_signs_nothing(settings):
    from casino.celery import by_name
    from casino.checkpoints import checkpoint_tick

    entry = settings.CELERY_BEAT_SCHEDULE["trail-checkpoint"]
    assert entry["task"] == "trail.checkpoint"
    assert entry["schedule"].total_seconds() == settings.TRAIL_CHECKPOINT_SECONDS == 0.5
    by_name("trail.checkpoint")  # registered
    write(2)
    assert checkpoint_tick()["checkpoint"] == ChangeLog.objects.count()
    assert checkpoint_tick() == {"checkpoint": None, "witnesses": {}}
    assert Checkpoint.objects.count() == 1


@pytest.mark.tampers
@pytest.mark.django_db
def test_a_cut_tail_is_named_and_stops_writes(api, manager):
    from tests.insider.test_tampering import superuser

    write(5)
    cp = checkpoint_make()
    last = ChangeLog.objects.order_by("-id").first()
    with superuser() as c:
        c.execute("DELETE FROM casino_changelog WHERE id >= %s", [last.pk - 1])
    assert checkpoint_make() is None
    stop = stop_reason_event()
    assert stop is not None and stop.kind == "fork"
    assert f"row {last.pk}, leaf {cp.size}" in stop.detail
    assert "missing from the change log" in stop.detail
    r = table_created(api, manager)
    assert r.status_code == 503, r.content
    assert r.json()["code"] == "trail_stopped"
    assert "missing from the change log" in r.json()["detail"]
    assert WitnessEvent.objects.filter(kind="fork").count() == 1
    assert Checkpoint.objects.count() == 1
