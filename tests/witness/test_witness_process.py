"""tools/witness as a real process (its own port, its own SQLite file): it
cosigns a growing log, refuses a smaller or forked tree as the tlog-witness
spec says, keeps the refused request, and keeps its state across a
restart. No database of the app's."""

from __future__ import annotations

from tools.evidence_verifier import tlog

from .conftest import Log, post


def _cosigned(w, note: str, answer: str) -> int:
    text = note[:note.rfind("\n\n") + 1]
    (sig,) = tlog.parse_signature_lines(answer)
    return tlog.cosignature_check(text, sig, tlog.parse_vkey(w.vkey))


def test_cosigns_a_growing_log_and_refuses_a_fork(witness_factory):
    log = Log()
    w = witness_factory("witness.example/w1", [log.vkey])
    log.add(5)
    status, _, answer = post(w.url, tlog.add_checkpoint_body(0, [], log.note()))
    assert status == 200, answer
    assert _cosigned(w, log.note(), answer) > 1_700_000_000
    # grows with a consistency proof from 5
    log.add(8)
    proof = tlog.consistency_proof(log.tree.get, 5, 13)
    status, _, answer = post(w.url, tlog.add_checkpoint_body(5, proof, log.note()))
    assert status == 200, answer
    assert w.state()[0]["size"] == 13
    # the same checkpoint again: cosigned again (old == size, same root)
    assert post(w.url, tlog.add_checkpoint_body(13, [], log.note()))[0] == 200
    # a stale old size: 409 with the size it holds, as text/x.tlog.size
    status, ctype, text = post(w.url, tlog.add_checkpoint_body(5, proof, log.note()))
    assert (status, ctype, text) == (409, "text/x.tlog.size", "13\n")
    # a fork: the first 13 leaves rewritten, grown to 20
    forked = Log(log.origin)
    forked.key = log.key  # a stolen key
    forked.add(20, tag=b"forged")
    proof = tlog.consistency_proof(forked.tree.get, 13, 20)
    status, _, text = post(w.url, tlog.add_checkpoint_body(13, proof, forked.note()))
    assert status == 422, text
    # the same size, another root: 409
    status, _, text = post(w.url, tlog.add_checkpoint_body(13, [], forked.note(13)))
    assert status == 409
    # a smaller tree (a restored dump) is never cosigned
    status, _, text = post(w.url, tlog.add_checkpoint_body(13, [], log.note(10)))
    assert status == 400
    status, _, text = post(w.url, tlog.add_checkpoint_body(0, [], log.note(10)))
    assert (status, text) == (409, "13\n")
    assert w.state()[0]["size"] == 13
    kept = w.evidence()
    assert [k[0] for k in kept] == [409, 422, 409, 409]
    assert forked.note() in kept[1][2].decode()


def test_refuses_unknown_logs_and_bad_signatures(witness_factory):
    log, other = Log(), Log("other.example/log")
    w = witness_factory("witness.example/w2", [log.vkey])
    log.add(3)
    other.add(3)
    assert post(w.url, tlog.add_checkpoint_body(0, [], other.note()))[0] == 404
    thief = Log(log.origin)  # the log's name, another key
    thief.add(3)
    assert post(w.url, tlog.add_checkpoint_body(0, [], thief.note()))[0] == 403
    assert post(w.url, b"old 0\n\nnot a note")[0] == 400
    assert post(w.url, b"old x\n\n" + log.note().encode())[0] == 400
    assert w.state() == []
    assert w.evidence() == []  # unsigned junk is not evidence of anything


def test_state_survives_a_restart(witness_factory):
    log = Log()
    w = witness_factory("witness.example/w3", [log.vkey])
    log.add(7)
    assert post(w.url, tlog.add_checkpoint_body(0, [], log.note()))[0] == 200
    w.stop()
    w.start()
    status, _, text = post(w.url, tlog.add_checkpoint_body(0, [], log.note(3)))
    assert (status, text) == (409, "7\n")
