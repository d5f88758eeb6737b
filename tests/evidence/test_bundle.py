"""The evidence bundle and its standalone verifier (issue 25 items 4-5):
a bundle verifies, and each forgery a casino could try is named."""

from __future__ import annotations

import base64
import json
import zipfile

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.evidence.build import evidence_build
from casino.signing import key_id
from tables.models import Coup
from tables.simulation import simulate

from .conftest import rewrite, statement


@pytest.fixture
def period(db, croupier, signing_key):
    simulate(user=croupier, tables=2, shoes=1, seed=11)
    days = sorted(set(Coup.objects.values_list("gaming_day", flat=True)))
    return days[0], days[-1]


@pytest.fixture
def bundle(period, tmp_path):
    path = tmp_path / "bundle.zip"
    evidence_build(from_day=period[0], to_day=period[1], path=path)
    return path


@pytest.fixture
def check(verify, signing_key):
    def run(path, *extra):
        done = verify(path, "--public-key", str(signing_key), *extra)
        return done.returncode, done.stdout + done.stderr

    return run


def _coup(lines, seq=5):
    """A coup line in the middle of a shoe (and its stakes' lines)."""
    coup = next(x for x in lines if x["label"] == "tables.coup"
                and x["row"]["seq"] == seq)
    stakes = [x for x in lines if x["label"] == "tables.stake"
              and x["key"].startswith(coup["key"] + "#")]
    return coup, stakes


def test_a_bundle_verifies(bundle, check):
    code, out = check(bundle)
    assert code == 0, out
    assert "OK:" in out
    assert f"coups re-settled: {Coup.objects.count()}" in out
    for coup in Coup.objects.values("commission"):
        assert coup["commission"] is not None
    total = sum(c.commission for c in Coup.objects.all())
    assert f"total {total:.2f}" in out


def test_same_period_same_bytes(period, bundle, tmp_path):
    again = tmp_path / "again.zip"
    evidence_build(from_day=period[0], to_day=period[1], path=again)
    assert again.read_bytes() == bundle.read_bytes()


def test_a_part_changed_without_its_digest(bundle, tmp_path, check):
    with zipfile.ZipFile(bundle) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    parts["report.json"] = parts["report.json"].replace(b'"coups":', b'"coups": ')
    out = tmp_path / "x.zip"
    with zipfile.ZipFile(out, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    code, text = check(out)
    assert code == 1
    assert "part report.json: its SHA-256 is not the manifest's" in text


def test_a_coups_card(bundle, tmp_path, check):
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        coup, _ = _coup(lines)
        cards = coup["row"]["punter_cards"]
        cards[0] = "9S" if cards[0] != "9S" else "8S"
        edit.key = coup["key"]
        return lines

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"coup {edit.key}: differs from what log row" in text


def test_a_stake(bundle, tmp_path, check):
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        _, stakes = _coup(lines)
        stakes[0]["row"]["amount"] = "99999.00"
        edit.key = stakes[0]["key"]
        return lines

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"stake {edit.key}: differs from what log row" in text


def test_a_commission(bundle, tmp_path, check):
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        coup = next(x for x in lines if x["label"] == "tables.coup"
                    and x["row"].get("commission", "0.00") != "0.00")
        coup["row"]["commission"] = "0.00"
        edit.key, edit.was = coup["key"], coup
        return lines

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"coup {edit.key}: differs from what log row" in text
    assert "commission stored 0.00, re-settled" in text


def test_a_log_row(bundle, tmp_path, check):
    def edit(name, lines):
        if name != "log.jsonl":
            return None
        row = next(x for x in lines if x["action"] == "tables.coup.recorded")
        row["new"]["commission"] = "123.45"
        edit.id = row["id"]
        return lines

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"log row {edit.id} (tables.coup.recorded): its link does not match" in text


@pytest.mark.parametrize("what", ["coup", "stake"])
def test_a_removed_row(bundle, tmp_path, check, what):
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        coup, stakes = _coup(lines)
        gone = [coup, *stakes] if what == "coup" else stakes[:1]
        edit.key = gone[0]["key"]
        return [x for x in lines if x not in gone]

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"{what} {edit.key}" in text
    assert "missing from the bundle" in text


def test_an_anchor_signed_by_another_key(bundle, tmp_path, check):
    other = Ed25519PrivateKey.generate()
    raw = other.public_key().public_bytes_raw()

    def edit(name, lines):
        if name != "anchors.jsonl":
            return None
        lines[0]["signature"] = base64.b64encode(
            other.sign(statement(lines[0]))).decode()
        lines[0]["signing_key_id"] = key_id(raw)
        edit.row = lines[0]["row"]
        return lines

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert (f"anchor of row {edit.row}: signed with key {key_id(raw)}, which is "
            "not a key given") in text


def test_an_anchor_signature_under_our_key_id(bundle, tmp_path, check):
    other = Ed25519PrivateKey.generate()

    def edit(name, lines):
        if name != "anchors.jsonl":
            return None
        lines[0]["signature"] = base64.b64encode(
            other.sign(statement(lines[0]))).decode()
        edit.row = lines[0]["row"]
        return lines

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"anchor of row {edit.row}: its signature does not verify" in text


def test_a_report_total_changed(bundle, tmp_path, check):
    def edit(name, lines):
        if name != "report.json":
            return None
        report = lines[0]
        row = report["rows"][0]
        row["commission"] = "1.00"
        edit.row = row
        return [report]

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert "the report's rows: their SHA-256 is not the one its signed stamp" in text
    assert (f"report: table {edit.row['table_id']} ({edit.row['table']}), gaming "
            f"day {edit.row['gaming_day']}: commission 1.00, re-settled") in text


def test_a_report_restamped_by_the_casino_without_the_key(bundle, tmp_path, check):
    """The forger fixes the stamp's digest and total too: its signature fails."""
    import hashlib

    def edit(name, lines):
        if name != "report.json":
            return None
        report = lines[0]
        report["rows"][0]["commission"] = "1.00"
        report["stamp"]["rows_sha256"] = hashlib.sha256(json.dumps(
            report["rows"], sort_keys=True, separators=(",", ":"),
            ensure_ascii=False).encode()).hexdigest()
        return [report]

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert "the report's stamp: its signature does not verify" in text


def test_a_row_given_twice(bundle, tmp_path, check):
    """A stake copied (the log names it once): named, not counted twice."""
    def edit(name, lines):
        if name != "ledger.jsonl":
            return None
        _, stakes = _coup(lines)
        edit.key = stakes[0]["key"]
        at = lines.index(stakes[0])
        return lines[:at + 1] + [stakes[0]] + lines[at + 1:]

    code, text = check(rewrite(bundle, tmp_path / "x.zip", edit))
    assert code == 1
    assert f"stake {edit.key}: in the bundle more than once" in text
