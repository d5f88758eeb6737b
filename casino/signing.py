"""Public-key signatures on anchors and report stamps (issue 25 item 1).

The trail's HMAC proves the log to whoever holds TRAIL_KEY; an Ed25519
signature proves an anchor (the chain's head, casino/anchors.py) and a
report's stamp to anyone holding the casino's *public* key, which is served
at `/trail/keys.json` and printed on every report. Nothing here needs the
database.

Keys
----
- `TRAIL_SIGNING_KEY`: the private key, from the environment only (never in
  the database): a PEM (PKCS#8 "BEGIN PRIVATE KEY") or the standard base64 of
  the raw 32-byte seed; or `TRAIL_SIGNING_KEY_FILE`, a file holding either.
  Without it, with DEBUG on (a laptop, the tests), a dev key derived from
  TRAIL_KEY; with DEBUG off the app refuses to start.
  `manage.py trail_signing_key --new` makes one and prints its key id.
- `TRAIL_SIGNING_KEY_FROM`: optional, the date (ISO 8601) the current key
  started signing (shown as its "from").
- `TRAIL_OLD_SIGNING_KEYS`: keys retired by a rotation, with the dates they
  signed: comma-separated `PUBLIC;FROM;UNTIL`, PUBLIC the standard base64 of
  the raw 32-byte public key, FROM and UNTIL ISO 8601 dates or UTC times
  (either may be empty: open). They only verify what they signed, within
  their dates. Rotation: put the current key's public half here with its
  dates, set TRAIL_SIGNING_KEY to the new one, on every node.

Key id (the fingerprint printed on reports): the first 16 hex characters of
SHA-256 over the raw 32-byte public key: `sha256(raw).hexdigest()[:16]`.

Signature: the standard base64 (with padding) of the 64-byte Ed25519
signature over the statement's bytes.

What is signed
--------------
An anchor (`anchor_statement`):

    json.dumps({"row": id, "link": link, "hash": hmac_hash,
                "at": "YYYY-MM-DDTHH:MM:SS.ffffffZ", "reason": reason},
               sort_keys=True, separators=(",", ":"),
               ensure_ascii=False).encode("utf-8")

`row` an integer, `link` and `hash` the anchored change-log row's public
link and HMAC (64 hex characters each), `at` the anchor's time in UTC with
microseconds and a final Z, exactly as the anchor file's "at".

A report stamp (`stamp_statement`): the stamp as stored on the report job
(ReportJob.stamp) and printed on the report, every field but "signature":
title, period, gaming_day_note, group_by, house_rules, software_version,
generated_at, generated_by, trail_anchor, trail_anchor_link, data_position
(when the report has one) and signing_key_id, serialised the same way
(`json.dumps(stamp_without_signature, sort_keys=True, separators=(",", ":"),
ensure_ascii=False).encode("utf-8")`). Every value is JSON text, integers,
lists or objects (no floats), so the bytes are the same read back from the
database.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

ALGORITHM = "Ed25519"
KEYS_URL = "/trail/keys.json"


class SigningKeyError(ValueError):
    pass


# -- reading keys (settings.py calls these: no Django here) ---------------------

def seed_from_text(text: str) -> bytes:
    """The 32-byte private seed from a PEM (PKCS#8) or a base64 raw seed."""
    text = text.strip()
    if "-----BEGIN" in text:
        try:
            key = serialization.load_pem_private_key(text.encode(), password=None)
        except (ValueError, TypeError) as exc:
            raise SigningKeyError(f"not a PEM private key ({exc})") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError("the PEM key is not an Ed25519 key")
        return key.private_bytes(serialization.Encoding.Raw,
                                 serialization.PrivateFormat.Raw,
                                 serialization.NoEncryption())
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SigningKeyError("neither a PEM key nor base64") from exc
    if len(raw) != 32:
        raise SigningKeyError(
            f"base64 of the raw 32-byte Ed25519 seed expected, got {len(raw)} bytes")
    return raw


def dev_seed(trail_key: str) -> bytes:
    """The key DEBUG uses when no TRAIL_SIGNING_KEY is set: derived from
    TRAIL_KEY (itself a dev key then), never for production."""
    return hashlib.sha256(b"chemmy-trail-signing-dev-key\0" + trail_key.encode()
                          ).digest()


def when_text(text: str) -> str:
    """An ISO date or time as given, checked (empty: open)."""
    text = text.strip()
    if not text:
        return ""
    try:
        if len(text) == 10:
            date.fromisoformat(text)
        else:
            parsed = datetime.fromisoformat(text)
            if parsed.tzinfo is None:
                raise SigningKeyError(f"{text!r}: a time needs its zone (Z)")
    except ValueError as exc:
        raise SigningKeyError(f"{text!r} is not an ISO 8601 date or time") from exc
    return text


def old_keys_from_text(text: str) -> list[dict]:
    """TRAIL_OLD_SIGNING_KEYS: [{"public": raw bytes, "from": str, "until":
    str}] from `PUBLIC;FROM;UNTIL,...`."""
    out = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        parts = entry.split(";")
        if len(parts) != 3:
            raise SigningKeyError(f"{entry[:20]}...: expected PUBLIC;FROM;UNTIL")
        try:
            raw = base64.b64decode(parts[0].strip(), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SigningKeyError(f"{parts[0][:20]}: not base64") from exc
        if len(raw) != 32:
            raise SigningKeyError(f"{parts[0][:20]}: not a raw 32-byte public key")
        out.append({"public": raw, "from": when_text(parts[1]),
                    "until": when_text(parts[2])})
    return out


def public_of(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_raw: bytes) -> str:
    """The fingerprint that names a key: sha256(raw public key)[:16] hex."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


def public_pem(public_raw: bytes) -> str:
    return Ed25519PublicKey.from_public_bytes(public_raw).public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


# -- statements -----------------------------------------------------------------

def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def at_text(at: datetime) -> str:
    """A time as statements and anchor files give it."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def anchor_statement(*, row: int, link: str, hash: str, at: str,  # noqa: A002
                     reason: str) -> bytes:
    """What an anchor's signature and timestamp are over (module docstring);
    `at` as at_text gives it."""
    return canonical({"row": row, "link": link, "hash": hash, "at": at,
                      "reason": reason})


def stamp_statement(stamp: dict) -> bytes:
    """What a report stamp's signature is over: every field but "signature"."""
    return canonical({k: v for k, v in stamp.items() if k != "signature"})


# -- the keys in force (Django settings) ------------------------------------------

@dataclass(frozen=True)
class PublicKey:
    raw: bytes
    start: str  # "from": ISO date or time, "" open
    until: str  # "" open (the current key)

    @property
    def id(self) -> str:
        return key_id(self.raw)

    def to_dict(self) -> dict:
        return {"id": self.id, "public_key_pem": public_pem(self.raw),
                "public_key_b64": base64.b64encode(self.raw).decode(),
                "from": self.start or None, "until": self.until or None}

    def covers(self, when: datetime) -> bool:
        """Whether `when` falls within the dates this key signed."""
        return ((not self.start or _bound(self.start, when, end=False) <= when)
                and (not self.until or when <= _bound(self.until, when, end=True)))


def _bound(text: str, like: datetime, *, end: bool) -> datetime:
    if len(text) == 10:  # a date: the whole day, in UTC
        day = date.fromisoformat(text)
        clock = (23, 59, 59, 999999) if end else (0, 0, 0, 0)
        return datetime(day.year, day.month, day.day, *clock, tzinfo=UTC)
    return datetime.fromisoformat(text)


def _seed() -> bytes:
    from django.conf import settings

    return settings.TRAIL_SIGNING_KEY


def current_public() -> PublicKey:
    from django.conf import settings

    return PublicKey(public_of(_seed()), settings.TRAIL_SIGNING_KEY_FROM, "")


def public_keys() -> list[PublicKey]:
    """Every key that may have signed: the current one first, then the
    retired ones of TRAIL_OLD_SIGNING_KEYS."""
    from django.conf import settings

    return [current_public()] + [
        PublicKey(k["public"], k["from"], k["until"])
        for k in settings.TRAIL_OLD_SIGNING_KEYS
    ]


def keys_document() -> dict:
    """What /trail/keys.json serves."""
    return {"algorithm": ALGORITHM, "keys": [k.to_dict() for k in public_keys()]}


def sign(statement: bytes) -> tuple[str, str]:
    """(signature base64, key id) of the current key over `statement`."""
    private = Ed25519PrivateKey.from_private_bytes(_seed())
    signature = private.sign(statement)
    return base64.b64encode(signature).decode(), key_id(public_of(_seed()))


def verify(statement: bytes, signature: str, signing_key_id: str,
           when: datetime | None = None) -> str:
    """'' when `signature` is a valid signature of `statement` by the key
    named, which signed at `when` (within its dates); else what is wrong."""
    keys = {k.id: k for k in public_keys()}
    key = keys.get(signing_key_id or "")
    if key is None:
        return (f"signed with key {signing_key_id or '(none)'}, which is neither "
                "TRAIL_SIGNING_KEY nor in TRAIL_OLD_SIGNING_KEYS")
    try:
        raw = base64.b64decode(signature or "", validate=True)
        Ed25519PublicKey.from_public_bytes(key.raw).verify(raw, statement)
    except (binascii.Error, ValueError, InvalidSignature):
        return f"its signature does not verify with key {key.id}"
    if when is not None and not key.covers(when):
        return (f"signed with key {key.id} at {at_text(when)}, outside the dates "
                f"that key signed ({key.start or '...'} to {key.until or '...'})")
    return ""


def stamp_sign(stamp: dict) -> dict:
    """The stamp with its signing_key_id and signature (module docstring)."""
    out = {k: v for k, v in stamp.items() if k not in ("signature",)}
    out["signing_key_id"] = current_public().id
    out["signature"], kid = sign(stamp_statement(out))
    assert kid == out["signing_key_id"]
    return out


def stamp_verify(stamp: dict) -> str:
    """'' when the stamp's signature holds; else what is wrong."""
    if not stamp.get("signature"):
        return "the stamp is not signed"
    return verify(stamp_statement(stamp), stamp["signature"],
                  stamp.get("signing_key_id", ""))
