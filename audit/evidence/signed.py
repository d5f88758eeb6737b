"""What the bundle needs from the trail's public-key side (issue 25 items
1-3): the signed anchors with their links and time-stamp tokens, the
casino's public keys, and a signature on the report's stamp.

Statement of an anchor: the canonical JSON of {"row", "link", "hash", "at",
"reason"} (sorted keys, no spaces, non-ASCII kept), signed with Ed25519;
`key_id` is the first 16 hex digits of the SHA-256 of the raw public key.
"""

from __future__ import annotations

import base64
import hashlib
import json

from casino.trail import _dumps


def statement(anchor: dict) -> bytes:
    return json.dumps({k: anchor[k] for k in ("row", "link", "hash", "at", "reason")},
                      sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def _private_key():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from django.conf import settings

    text = getattr(settings, "TRAIL_SIGNING_KEY", "") or ""
    if not text:
        import os

        text = os.environ.get("TRAIL_SIGNING_KEY", "")
    if not text:
        return None
    if "BEGIN" in text:
        return serialization.load_pem_private_key(text.encode(), password=None)
    return Ed25519PrivateKey.from_private_bytes(base64.b64decode(text))


def _raw_public(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(serialization.Encoding.Raw,
                            serialization.PublicFormat.Raw)


def key_id(raw_public: bytes) -> str:
    return hashlib.sha256(raw_public).hexdigest()[:16]


def sign(data: bytes) -> dict:
    key = _private_key()
    if key is None:
        raise LookupError("TRAIL_SIGNING_KEY is not set: nothing can be signed")
    return {"signature": base64.b64encode(key.sign(data)).decode("ascii"),
            "key_id": key_id(_raw_public(key.public_key()))}


def public_keys() -> list[dict]:
    key = _private_key()
    if key is None:
        return []
    raw = _raw_public(key.public_key())
    return [{"key_id": key_id(raw),
             "public_key": base64.b64encode(raw).decode("ascii")}]


def sign_stamp(stamp: dict) -> dict:
    return sign(_dumps(stamp).encode("utf-8"))


def has_link_column() -> bool:
    from casino.models import ChangeLog

    return any(f.name == "link" for f in ChangeLog._meta.concrete_fields)


def links(upto: int) -> dict[int, str]:
    """Interim, until the change log keeps its public link (issue 25 item 3):
    every row's link up to row `upto`, computed from the first row."""
    from casino.models import ChangeLog
    from casino.trail import FIELDS, GENESIS, _body, iter_rows

    out, prev = {}, GENESIS
    names = [f for f in FIELDS if f not in ("id", "prev_hash", "hash", "key_id")]
    for r in iter_rows(ChangeLog.objects.filter(id__lte=upto)):
        prev = hashlib.sha256(_body(prev_hash=prev, **{k: r[k] for k in names})
                              ).hexdigest()
        out[r["id"]] = prev
    return out


def _link(row: int) -> str:
    from casino.models import ChangeLog

    if not has_link_column():
        return links(row)[row]
    return ChangeLog.objects.filter(pk=row).values_list("link", flat=True).get()


def anchors() -> list[dict]:
    """Every anchor on file with its statement signed, by row then time."""
    from casino.anchors import anchors_list
    from casino.trail import _when

    out = []
    for a in anchors_list():
        item = {"row": a.row, "link": _link(a.row), "hash": a.hash,
                "at": _when(a.at), "reason": a.reason}
        item.update(sign(statement(item)))
        item["tsa_token"] = None
        out.append(item)
    return sorted(out, key=lambda a: (a["row"], a["at"]))


def anchor_covering(row: int) -> dict | None:
    """The first signed anchor at or after log row `row`; with none yet, one
    is taken now (the chain's head)."""
    found = [a for a in anchors() if a["row"] >= row]
    if not found:
        from casino.anchors import trail_anchor

        trail_anchor(reason="evidence bundle")
        found = [a for a in anchors() if a["row"] >= row]
    return found[0] if found else None
