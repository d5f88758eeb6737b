"""The signed side of a bundle: the anchors as the trail took them, and the
report's stamp signed by the casino's key.

Anchors (casino/anchors.py) are signed when they are taken, over their
statement (casino/signing.py `anchor_statement`: row, link, hash, at,
reason), and carry the authority's RFC 3161 token of that statement when it
answered then; a token it gave later is in the database (casino/timestamps.py).
The bundle copies them as they are kept: nothing is signed at build time but
the report's stamp (`casino.signing.stamp_sign`, the
reports' own signer).
"""

from __future__ import annotations

from casino.anchors import Anchor, anchors_list, trail_anchor
from casino.signing import at_text, keys_document, stamp_sign


def _item(anchor: Anchor) -> dict:
    """An anchor as anchors.jsonl gives it: its statement's fields, its
    signature and key id, its time-stamp token (base64 DER, or null)."""
    return {"row": anchor.row, "link": anchor.link, "hash": anchor.hash,
            "at": at_text(anchor.at), "reason": anchor.reason,
            "signature": anchor.signature,
            "signing_key_id": anchor.signing_key_id,
            "tsa_token": anchor.tsa_token or _later_token(anchor) or None}


def _later_token(anchor: Anchor) -> str:
    """The token the authority gave after the anchor was written (it was
    down then: casino/timestamps.py asks again), as the trail keeps it
    (casino.TimestampToken, checked on receipt); the earliest, if several.
    '' while it has none."""
    from casino.models import TimestampToken

    return (TimestampToken.objects.filter(anchor__file=anchor.file)
            .order_by("gen_time", "id").values_list("token", flat=True).first()
            or "")


def signed_anchors() -> list[Anchor]:
    """The anchors on file an outsider can check: signed, with the row's
    public link; by row, then time."""
    return sorted((a for a in anchors_list() if a.signature and a.link),
                  key=lambda a: (a.row, a.at))


class Anchors:
    """The signed anchors, read once per build (the folder is listed once,
    not once per window)."""

    def __init__(self):
        self.found = signed_anchors()

    def covering(self, row: int) -> dict | None:
        """The first signed anchor at or after log row `row` (the earliest
        taken of that row); with none yet, one is taken now (the chain's
        head), signed as every anchor is."""
        for anchor in self.found:
            if anchor.row >= row:
                return _item(anchor)
        taken = trail_anchor(reason="evidence bundle")
        if taken is None or taken.row < row:
            return None
        self.found.append(taken)
        return _item(taken)


def public_keys() -> list[dict]:
    """The keys of /trail/keys.json (for information: a regulator trusts
    the key he was given, not the bundle's)."""
    return [{"id": k["id"], "public_key_b64": k["public_key_b64"],
             "from": k["from"], "until": k["until"]}
            for k in keys_document()["keys"]]


def stamp_signed(stamp: dict) -> dict:
    """The report's stamp with `signing_key_id` and `signature` (the
    reports' signer, casino/signing.py: Ed25519 over the canonical JSON of
    every field but the signature; deterministic, so the same bytes)."""
    return stamp_sign(stamp)
