"""The app and its witnesses, each witness a real process on a port of its
own (tools/witness): checkpoints cosigned by two witnesses and a quorum, a
witness down then back, a cut tail, a restored older dump and a forked chain
(rows rewritten after a restore, signed with the app's own keys) named with
the witness's numbers, and writes stopped (503 naming it)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from casino.checkpoints import checkpoint_publish
from casino.models import ChangeLog, Checkpoint, Cosignature, TreeNode, WitnessEvent
from casino.trailstop import stop_reason_event
from casino.witness import witness_compare
from tests.insider.test_tampering import superuser
from tests.witness.conftest import (
    cosigned_then_restored,
    cosigned_then_rewritten,
    restore_to,
    stopped_behind,
    table_created,
    write,
)
from tools.evidence_verifier import tlog

pytestmark = [pytest.mark.django_db, pytest.mark.tampers]


def test_two_witnesses_cosign_and_the_quorum_holds(witnesses):
    write(4)
    out = checkpoint_publish()
    size = ChangeLog.objects.count()
    assert out["checkpoint"] == size
    assert out["witnesses"] == {"witness.example/w1": f"cosigned {size}",
                                "witness.example/w2": f"cosigned {size}"}
    write(3)
    out = checkpoint_publish()
    assert set(out["witnesses"].values()) == {f"cosigned {size + 3}"}
    assert all(w.state()[0]["size"] == size + 3 for w in witnesses)
    # each kept cosignature holds under its witness's key
    cp = Checkpoint.objects.order_by("-id").first()
    text = cp.note[:cp.note.rfind("\n\n") + 1]
    for w in witnesses:
        line = Cosignature.objects.get(checkpoint=cp, witness=w.name).line
        (sig,) = tlog.parse_signature_lines(line)
        tlog.cosignature_check(text, sig, tlog.parse_vkey(w.vkey))
    found = witness_compare(full=True)
    assert found.ok and not found.notes, (found.problems, found.notes)
    # idle: no new checkpoint, the witnesses asked again (nothing to say)
    assert checkpoint_publish()["checkpoint"] is None
    assert Checkpoint.objects.count() == 2


def test_a_witness_down_then_back(witnesses, settings):
    w1, w2 = witnesses
    write(3)
    checkpoint_publish()
    w2.stop()
    write(5)
    out = checkpoint_publish()
    assert out["witnesses"]["witness.example/w1"].startswith("cosigned")
    assert out["witnesses"]["witness.example/w2"].startswith("down")
    found = witness_compare()
    assert found.ok  # nothing lost, only the quorum short
    assert "1 of 2 witnesses cosigned the latest checkpoint" in found.notes[0]
    w2.start()
    out = checkpoint_publish()  # beat's next run: no new rows, w2 caught up
    assert out == {"checkpoint": None, "witnesses": {
        "witness.example/w1": f"cosigned {ChangeLog.objects.count()}",
        "witness.example/w2": f"cosigned {ChangeLog.objects.count()}"}}
    assert not witness_compare().notes


def test_a_cut_tail_is_named_with_the_witnesss_numbers(witnesses, api, manager):
    write(6)
    checkpoint_publish()
    cosigned = ChangeLog.objects.count()
    last = ChangeLog.objects.order_by("-id").first()
    with superuser() as c:
        c.execute("DELETE FROM casino_changelog WHERE id > %s", [last.pk - 2])
    found = witness_compare()
    assert not found.ok
    assert (f"the database holds {cosigned - 2:,} rows; witness witness.example/w1 "
            f"cosigned {cosigned:,} at") in found.problems[0]
    with pytest.raises(CommandError, match=f"the database holds {cosigned - 2:,} rows"):
        call_command("verify_trail", stdout=io.StringIO())
    import json

    from tests.ops.test_health import staff_details

    health = json.loads(staff_details().content)["checks"]["witnesses"]
    assert not health["ok"]
    assert f"witness witness.example/w2 cosigned {cosigned:,} at" in health["message"]
    # the next checkpoint run names it a fork and writes stop
    checkpoint_publish()
    assert stop_reason_event().kind == "fork"
    r = table_created(api, manager)
    assert r.status_code == 503 and r.json()["code"] == "trail_stopped"


def test_a_restored_dump_is_named_by_the_witness(witnesses, api, manager):
    """The whole database as it was at an older checkpoint (its tree,
    checkpoints and cosignatures too): only the witnesses know better."""
    old, lost = cosigned_then_restored(5, 7)
    assert witness_compare(full=True).ok  # the database alone cannot tell
    # verify_trail asks the witnesses (as beat's trail.witnesses does)
    with pytest.raises(CommandError, match=f"witness witness.example/w1 cosigned "
                       f"{lost:,}"):
        call_command("verify_trail", "--ask-witnesses", stdout=io.StringIO())
    stopped_behind(checkpoint_publish(), old, lost)  # and again: still behind
    r = table_created(api, manager)
    assert r.status_code == 503, r.content
    assert f"witness witness.example/w1 cosigned {lost:,}" in r.json()["detail"]
    with pytest.raises(CommandError, match="writes stopped"):
        call_command("verify_trail", stdout=io.StringIO())


def test_the_idle_tick_asks_the_witnesses_at_once_after_a_restore(witnesses):
    """Beat's per-second tick, idle (no row since the restore): it compares
    the database's tree with what the witnesses cosigned, as the shared cache
    (outside the database) remembers it, and asks them at once, instead of
    waiting for trail.witnesses (WITNESS_CHECK_SECONDS)."""
    from casino.checkpoints import checkpoint_tick

    write(4)
    checkpoint_publish()
    old = ChangeLog.objects.count()
    write(5)
    checkpoint_publish()
    lost = ChangeLog.objects.count()
    # all is well: the idle tick asks nobody
    assert checkpoint_tick() == {"checkpoint": None, "witnesses": {}}
    restore_to(old)
    assert stop_reason_event() is None
    out = checkpoint_tick()
    assert out["checkpoint"] is None
    stopped_behind(out, old, lost)
    # the critical flag's row is checkpointed (and refused) once; then the
    # idle ticks ask nobody (no evidence row a second at the witness)
    assert checkpoint_tick()["checkpoint"] == old + 1
    refused = len(witnesses[0].evidence())
    assert checkpoint_tick() == {"checkpoint": None, "witnesses": {}}
    assert len(witnesses[0].evidence()) == refused


def test_a_forged_or_lost_hint_names_nothing(witnesses):
    """The hint only makes the tick ask: a hint larger than anything the
    witnesses cosigned costs one request and stops nothing; a hint lost (the
    cache flushed) leaves the WITNESS_CHECK_SECONDS check."""
    from django.core.cache import cache

    from casino.checkpoints import checkpoint_tick
    from casino.witness import WITNESSED_KEY

    write(3)
    checkpoint_publish()
    size = ChangeLog.objects.count()
    assert cache.get(WITNESSED_KEY) == {"epoch": 1, "size": size}
    cache.set(WITNESSED_KEY, {"epoch": 1, "size": size + 50}, 60)
    out = checkpoint_tick()
    assert set(out["witnesses"].values()) == {f"cosigned {size}"}, out
    assert stop_reason_event() is None
    cache.delete(WITNESSED_KEY)
    assert checkpoint_tick() == {"checkpoint": None, "witnesses": {}}


def test_a_forked_chain_is_refused_by_the_witnesses(witnesses, settings):
    """Restored to an older state, then rewritten: new rows with the app's
    own keys (a stolen TRAIL_KEY and TRAIL_SIGNING_KEY could do no better)
    past the size the witnesses cosigned."""
    old, _ = cosigned_then_restored(4, 3)
    write(9, tag="forged")  # a valid chain, signed and linked, but another one
    out = checkpoint_publish()
    assert out["witnesses"]["witness.example/w1"].startswith("fork from")
    stop = stop_reason_event()
    assert stop.kind == "fork" and "does not extend" in stop.detail
    kept = WitnessEvent.objects.get(pk=stop.pk).request
    assert kept.startswith(f"old {old + 3}\n")  # the refused request, as evidence
    assert witnesses[0].evidence()[-1][0] == 422
    # the restored database holds no cosignature past `old`: the witnesses'
    # refusal is what names it
    found = witness_compare(full=True)
    assert "writes stopped" in found.problems[0]
    assert f"holds a tree of {old + 3} rows" in found.problems[0]


def test_rows_rewritten_under_a_cosigned_checkpoint_are_named(witnesses):
    """The database still holds the cosignature; rows under it rewritten (a
    link changed as a superuser): verify_trail's full comparison names it."""
    cosigned_then_rewritten()
    found = witness_compare(full=True)
    assert any("are not the tree witness witness.example/w1 cosigned" in p
               for p in found.problems), found.problems


def test_a_declared_restore_starts_a_new_epoch_and_the_floor_plays_on(
        witnesses, api, manager, settings):
    old, lost = cosigned_then_restored(5, 6)
    checkpoint_publish()
    assert stop_reason_event().kind == "behind"
    with pytest.raises(CommandError, match="reason"):
        call_command("trail_epoch", "--reason", " ", stdout=io.StringIO())
    out = io.StringIO()
    call_command("trail_epoch", "--reason", "restored the 21:00 dump after a disk "
                 "failure", stdout=out)
    declared = ChangeLog.objects.get(action="casino.trail.epoch_declared")
    assert declared.new["epoch"] == 2
    assert declared.new["witness_held"] == lost
    assert declared.new["rows_lost"] == lost - declared.new["database_rows"] > 0
    assert declared.new["witnesses"]["witness.example/w1"]["size"] == old
    assert stop_reason_event() is None
    assert "Give each witness the new log's key" in out.getvalue()
    # the floor plays on at once
    r = table_created(api, manager)
    assert r.status_code == 201, r.content
    # the regulator adds the new log to its witnesses; they cosign epoch 2,
    # whose first leaf is the declaration
    for w in witnesses:
        w.stop()
        w.logs.append(declared.new["log_key"])
        w.start()
    out = checkpoint_publish()
    size = ChangeLog.objects.filter(id__gte=declared.pk).count()
    assert set(out["witnesses"].values()) == {f"cosigned {size}"}, out
    cp = Checkpoint.objects.order_by("-id").first()
    assert cp.epoch == 2 and cp.note.startswith(settings.TRAIL_LOG_ORIGIN + "/epoch2\n")
    assert TreeNode.objects.get(epoch=2, level=0, index=0).row == declared.pk
    found = witness_compare(full=True)
    assert found.ok, found.problems
    assert any("epoch 2" in n for n in found.notes)
    with pytest.raises(CommandError, match="nothing to declare"):
        call_command("trail_epoch", "--reason", "again", stdout=io.StringIO())
