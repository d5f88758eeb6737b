"""One coup proven alone (casino/prove.py, `manage.py prove COUP`): a few
kilobytes that the standalone verifier (tools/verify_evidence.py
coup-proof) checks with the log's and the witnesses' public keys, run as a
program of its own; and every forgery of it refused."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from casino.checkpoints import checkpoint_publish
from casino.merkle import log_vkey
from tools.evidence_verifier import coupproof, tlog

from .conftest import ROOT

pytestmark = pytest.mark.django_db


@pytest.fixture
def proven(played, settings, witness_factory, tmp_path):
    w = witness_factory("witness.example/w1", [log_vkey()])
    settings.WITNESSES = [{"url": w.url, "name": w.name, "vkey": w.vkey}]
    settings.WITNESS_QUORUM = 1
    checkpoint_publish()
    coup = played[1]  # the false draw: a coup with a finding
    out = tmp_path / "coup.json"
    call_command("prove", str(coup.pk), "--out", str(out), stderr=io.StringIO())
    return coup, out, w


def keys(w):
    return [tlog.parse_vkey(log_vkey())], [tlog.parse_vkey(w.vkey)]


def test_the_standalone_verifier_proves_a_coup(proven):
    coup, out, w = proven
    size = out.stat().st_size
    assert size < 4096, size
    proof = json.loads(out.read_text())
    labels = [r["label"] for r in proof["rows"]]
    assert labels.count("tables.coup") == 1 and "tables.finding" in labels
    r = subprocess.run(
        [sys.executable, "tools/verify_evidence.py", "coup-proof", str(out),
         "--log-key", log_vkey(), "--witness-key", w.vkey],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"OK: coup {coup.pk} proven" in r.stdout
    # no witness key given, a quorum of one asked: refused
    r = subprocess.run(
        [sys.executable, "tools/verify_evidence.py", "coup-proof", str(out),
         "--log-key", log_vkey(), "--quorum", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "quorum 1" in r.stderr


def _forge(proof: dict, how: str) -> dict:
    p = copy.deepcopy(proof)
    coup = next(r for r in p["rows"] if r["label"] == "tables.coup")
    if how == "coup":  # the coup's money changed
        coup["row"]["commission"] = "0.00"
    elif how == "finding dropped":
        p["rows"] = [r for r in p["rows"] if r["label"] != "tables.finding"]
    elif how == "log row":  # the log row rewritten, its link kept
        p["log"][0]["row"]["reason"] = "nothing happened"
    elif how == "log row relinked":  # rewritten with its link recomputed
        from tools.evidence_verifier.common import body, sha256_hex

        e = p["log"][0]
        e["row"]["ledger"]["tables.coup"][str(p["coup"])] = "0" * 64
        e["link"] = sha256_hex(body(e["prev_link"], e["row"]))
    elif how == "proof":
        e = p["log"][0]
        e["inclusion"][0] = tlog.b64(bytes(32))
    elif how == "index":
        p["log"][0]["index"] += 1
    elif how == "checkpoint":  # another size, same signature
        lines = p["checkpoint"].split("\n")
        lines[1] = str(int(lines[1]) + 1)
        p["checkpoint"] = "\n".join(lines)
    elif how == "cosignature":
        p["cosignatures"] = []
    elif how == "cosignature time":
        (sig,) = tlog.parse_signature_lines(p["cosignatures"][0])
        raw = bytearray(sig.signature)
        raw[7] ^= 1
        p["cosignatures"] = [tlog.Signature(sig.name, sig.key_id, bytes(raw)).line()]
    return p


FORGERIES = ["coup", "finding dropped", "log row", "log row relinked", "proof",
             "index", "checkpoint", "cosignature", "cosignature time"]


@pytest.mark.parametrize("how", FORGERIES)
def test_every_forgery_is_refused(proven, how):
    _, out, w = proven
    proof = json.loads(out.read_text())
    log_keys, witness_keys = keys(w)
    assert coupproof.check(proof, log_keys, witness_keys, 1) == []
    problems = coupproof.check(_forge(proof, how), log_keys, witness_keys, 1)
    assert problems, how


def test_a_coup_not_yet_checkpointed_is_said(played, deal, shoe):
    from tests.audit.conftest import BANKER_WINS, stake

    checkpoint_publish()
    coup = deal(shoe, BANKER_WINS, [stake("100")])
    with pytest.raises(CommandError, match="not in a checkpoint yet"):
        call_command("prove", str(coup.pk), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no coup 999999"):
        call_command("prove", "999999", stdout=io.StringIO())


def test_the_auditors_api_gives_the_same_proof(proven, api, auditor, croupier,
                                               client):
    coup, out, w = proven
    api.force_authenticate(user=croupier)
    assert api.get(f"/api/v1/coups/{coup.pk}/proof/").status_code == 403
    api.force_authenticate(user=auditor)
    r = api.get(f"/api/v1/coups/{coup.pk}/proof/")
    assert r.status_code == 200
    log_keys, witness_keys = keys(w)
    assert coupproof.check(r.json(), log_keys, witness_keys, 1) == []
    assert api.get("/api/v1/coups/999999/proof/").status_code == 404
    # the latest checkpoint and its cosignature, for anyone
    r = client.get("/trail/checkpoint")
    assert r.status_code == 200 and r["X-Log-Key"] == log_vkey()
    text, _ = tlog.note_open(r.content.decode(), [tlog.parse_vkey(log_vkey())])
    (mine, theirs) = tlog.note_split(r.content.decode())[1]
    assert tlog.cosignature_check(text, theirs, tlog.parse_vkey(w.vkey)) > 0
