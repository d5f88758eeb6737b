"""Public-key signatures on anchors (issue 25 item 1): an outsider checks an
anchor with the casino's public key alone, fetched from /trail/keys.json; an
anchor signed by another key, edited, or left unsigned once anchors are
signed is named by verify_trail, by row; a rotated key verifies only what
it signed, within its dates."""

from __future__ import annotations

import base64
import hashlib
import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)
from django.core.management import CommandError, call_command

from casino.anchors import trail_anchor
from casino.trail import trail_verify

ANOTHER = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)


def _raw(public) -> bytes:
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def test_keys_json_is_public_and_an_outsider_checks_an_anchor_with_it(
        played, client, settings):
    anchor = trail_anchor(reason="for the regulator")
    answer = client.get("/trail/keys.json")  # nobody signed in
    assert answer.status_code == 200
    doc = answer.json()
    assert doc["algorithm"] == "Ed25519"
    [key] = doc["keys"]
    assert set(key) == {"id", "public_key_pem", "public_key_b64", "from", "until"}
    raw = base64.b64decode(key["public_key_b64"])
    assert key["id"] == hashlib.sha256(raw).hexdigest()[:16]
    assert "BEGIN PUBLIC KEY" in key["public_key_pem"]
    # the outsider: the file and the documented statement, nothing else
    data = json.loads((settings.TRAIL_ANCHOR_DIR / anchor.file).read_text())
    assert data["signing_key_id"] == key["id"]
    statement = json.dumps(
        {k: data[k] for k in ("row", "link", "hash", "at", "reason")},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    public = Ed25519PublicKey.from_public_bytes(raw)
    public.verify(base64.b64decode(data["signature"]), statement)  # raises if not
    with pytest.raises(Exception):  # noqa: B017,PT011 - InvalidSignature
        public.verify(base64.b64decode(data["signature"]),
                      statement.replace(b"regulator", b"regulatos"))


def test_the_private_key_is_nowhere_the_app_writes(played, settings):
    from casino.models import ChangeLog

    anchor = trail_anchor(reason="interval")
    seed = settings.TRAIL_SIGNING_KEY
    texts = [base64.b64encode(seed).decode(), seed.hex()]
    written = (settings.TRAIL_ANCHOR_DIR / anchor.file).read_text()
    written += json.dumps(list(ChangeLog.objects.values_list("new", "ledger")))
    assert not any(t in written for t in texts)


def _forge(settings, anchor, **change) -> None:
    """Write a copy of `anchor`'s file, changed, as a new anchor file."""
    path = settings.TRAIL_ANCHOR_DIR / anchor.file
    data = {**json.loads(path.read_text()), **change}
    name = f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-row{data['row']}-forged.json"
    (settings.TRAIL_ANCHOR_DIR / name).write_text(json.dumps(data))


def _statement(data: dict) -> bytes:
    return json.dumps({k: data[k] for k in ("row", "link", "hash", "at", "reason")},
                      sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def _fails() -> str:
    with pytest.raises(CommandError) as err:
        call_command("verify_trail", stdout=io.StringIO())
    return str(err.value)


@pytest.mark.tampers
def test_an_anchor_signed_by_another_key_is_named(played, settings):
    anchor = trail_anchor(reason="interval")
    data = json.loads((settings.TRAIL_ANCHOR_DIR / anchor.file).read_text())
    data["reason"] = "written by someone else"
    other_id = hashlib.sha256(_raw(ANOTHER.public_key())).hexdigest()[:16]
    _forge(settings, anchor, reason=data["reason"], signing_key_id=other_id,
           signature=base64.b64encode(ANOTHER.sign(_statement(data))).decode())
    problem = _fails()
    assert f"row {anchor.row}: anchor file" in problem
    assert f"signed with key {other_id}, which is neither TRAIL_SIGNING_KEY" in problem


@pytest.mark.tampers
def test_an_anchor_edited_after_signing_is_named(played, settings):
    anchor = trail_anchor(reason="interval")
    _forge(settings, anchor, reason="edited")
    problem = _fails()
    assert f"row {anchor.row}: anchor file" in problem
    assert "its signature does not verify" in problem


@pytest.mark.tampers
def test_an_unsigned_anchor_once_anchors_are_signed_is_named(played, settings):
    anchor = trail_anchor(reason="interval")
    _forge(settings, anchor, signature=None, signing_key_id=None)
    problem = _fails()
    assert f"row {anchor.row}: anchor file" in problem and "is not signed" in problem


@pytest.mark.tampers
def test_an_anchor_with_another_link_is_named(played, settings):
    from casino.signing import anchor_statement, sign

    anchor = trail_anchor(reason="interval")
    data = json.loads((settings.TRAIL_ANCHOR_DIR / anchor.file).read_text())
    # signed by the casino's key, yet naming a link the chain does not hold
    data["link"] = "ab" * 32
    signature, key = sign(anchor_statement(**{k: data[k] for k in (
        "row", "link", "hash", "at", "reason")}))
    _forge(settings, anchor, link=data["link"], signature=signature,
           signing_key_id=key)
    assert f"two anchors disagree on row {anchor.row}'s link" in _fails()


def test_legacy_unsigned_anchors_still_verify(played, settings):
    """Files written before signatures (no signature, no link) stay valid."""
    from casino.models import ChangeLog

    head = ChangeLog.objects.order_by("-id").first()
    settings.TRAIL_ANCHOR_DIR.mkdir(parents=True, exist_ok=True)
    (settings.TRAIL_ANCHOR_DIR / "20200101T000000000000Z-row1.json").write_text(
        json.dumps({"row": head.pk, "hash": head.hash, "reason": "interval",
                    "at": datetime.now(UTC).isoformat()}))
    check = trail_verify()
    assert check.ok, check.problem
    trail_anchor(reason="signed now")
    check = trail_verify()
    assert check.ok, check.problem
    assert check.anchors == 1  # one row, anchored twice


def _seed_b64(key: Ed25519PrivateKey) -> str:
    return base64.b64encode(key.private_bytes(
        Encoding.Raw, PrivateFormat.Raw, NoEncryption())).decode()


def test_a_rotated_key_verifies_what_it_signed_within_its_dates(
        played, settings, client):
    from casino.signing import old_keys_from_text, public_of

    first = trail_anchor(reason="before the rotation")
    dev = settings.TRAIL_SIGNING_KEY
    dev_b64 = base64.b64encode(public_of(dev)).decode()
    today = datetime.now(UTC).date()
    # rotation: the new key signs, the old one is listed with its dates
    settings.TRAIL_SIGNING_KEY = b"\x05" * 32
    settings.TRAIL_OLD_SIGNING_KEYS = old_keys_from_text(
        f"{dev_b64};2020-01-01;{today + timedelta(days=1)}")
    second = trail_anchor(reason="after the rotation")
    assert first.signing_key_id != second.signing_key_id
    check = trail_verify()
    assert check.ok, check.problem
    keys = client.get("/trail/keys.json").json()["keys"]
    assert [k["id"] for k in keys] == [second.signing_key_id, first.signing_key_id]
    assert keys[1]["until"] == str(today + timedelta(days=1))
    # dates that end before the anchor was signed: refused, by row
    settings.TRAIL_OLD_SIGNING_KEYS = old_keys_from_text(
        f"{dev_b64};2020-01-01;{today - timedelta(days=1)}")
    problem = _fails()
    assert f"row {first.row}: anchor file {first.file}: signed with key " \
        f"{first.signing_key_id} at" in problem and "outside the dates" in problem
    # retired for good: said so
    settings.TRAIL_OLD_SIGNING_KEYS = []
    assert f"signed with key {first.signing_key_id}, which is neither" in _fails()


@pytest.mark.parametrize("form", ["pem", "b64"])
def test_the_key_is_read_as_pem_or_base64_seed(form):
    from casino.signing import seed_from_text

    key = Ed25519PrivateKey.from_private_bytes(b"\x09" * 32)
    text = (key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                              NoEncryption()).decode()
            if form == "pem" else _seed_b64(key))
    assert seed_from_text(text) == b"\x09" * 32


def test_the_command_prints_the_fingerprint_and_makes_a_key(settings):
    from casino.signing import current_public, seed_from_text

    out = io.StringIO()
    call_command("trail_signing_key", stdout=out)
    assert f"current key {current_public().id}" in out.getvalue()
    out = io.StringIO()
    call_command("trail_signing_key", "--new", stdout=out)
    line = out.getvalue().splitlines()[0]
    assert len(seed_from_text(line.removeprefix("TRAIL_SIGNING_KEY="))) == 32
