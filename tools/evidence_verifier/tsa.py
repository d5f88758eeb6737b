"""RFC 3161 time-stamp tokens: a small DER walk and the checks of a token."""

from __future__ import annotations

import base64
import hashlib

# -- RFC 3161 ------------------------------------------------------------------

def _tsa_check(token_b64: str, message: bytes, cert, what: str) -> str | None:
    """What is checked of a time-stamp token (RFC 3161, a CMS SignedData),
    with `cryptography`'s DER reader for the certificate and a small DER
    walk for the token:
    - the TSTInfo's messageImprint is SHA-256 and equals SHA-256(statement);
    - the signer's signed attributes hold a messageDigest equal to the
      digest of the encapsulated TSTInfo (by the signer's digest algorithm);
    - the signature over the signed attributes (re-encoded as a SET, RFC
      5652 5.4) verifies with the public key of `--tsa-cert` (RSA PKCS#1
      v1.5 or ECDSA).
    Not checked: the TSA certificate's own chain and revocation (check it
    once, yourself, against the authority's published root), the ESSCertID
    attribute, and the policy OID."""
    try:
        der = base64.b64decode(token_b64, validate=True)
        info, tst, attrs_der, digest_alg, signature, message_digest = _cms(der)
    except (ValueError, IndexError, KeyError) as exc:
        return f"{what}: its time-stamp token cannot be read ({exc})"
    algorithm, imprint = _imprint(tst)
    if algorithm != _SHA256 or imprint != hashlib.sha256(message).digest():
        return (f"{what}: its time-stamp token is for another digest (the token "
                "does not time-stamp this statement)")
    if message_digest != hashlib.new(_HASHES.get(digest_alg, "sha256"), info
                                     ).digest():
        return f"{what}: its time-stamp token's content does not match its signature"
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

    algo = {"sha256": hashes.SHA256(), "sha384": hashes.SHA384(),
            "sha512": hashes.SHA512(), "sha1": hashes.SHA1()}[
        _HASHES.get(digest_alg, "sha256")]
    key = cert.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, attrs_der, padding.PKCS1v15(), algo)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, attrs_der, ec.ECDSA(algo))
        else:
            return f"{what}: the TSA certificate's key type is not supported"
    except InvalidSignature:
        return (f"{what}: its time-stamp token is not signed by the TSA "
                "certificate given")
    return None


_SHA256 = "2.16.840.1.101.3.4.2.1"
_HASHES = {_SHA256: "sha256", "2.16.840.1.101.3.4.2.2": "sha384",
           "2.16.840.1.101.3.4.2.3": "sha512", "1.3.14.3.2.26": "sha1"}
_MESSAGE_DIGEST = "1.2.840.113549.1.9.4"


def _tlv(data: bytes, pos: int) -> tuple[int, int, int, int]:
    """(tag, start of content, end of content, end of element) at pos."""
    tag = data[pos]
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    return tag, pos, pos + length, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    out, pos = [], start
    while pos < end:
        tag, s, e, nxt = _tlv(data, pos)
        out.append((tag, pos, s, e))
        pos = nxt
    return out


def _oid(body: bytes) -> str:
    first = body[0]
    parts, value = [first // 40, first % 40], 0
    for b in body[1:]:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _cms(der: bytes):
    """(TSTInfo DER, TSTInfo, signed attributes as a SET, digest OID,
    signature, messageDigest) of a TimeStampToken."""
    _, s, e, _ = _tlv(der, 0)                      # ContentInfo
    kids = _children(der, s, e)
    _, _, s, e = kids[1]                            # [0] explicit
    _, s, e, _ = _tlv(der, s)                       # SignedData
    sd = _children(der, s, e)
    encap = sd[2]                                   # EncapsulatedContentInfo
    ec_kids = _children(der, encap[2], encap[3])
    _, _, s, e = ec_kids[1]                         # [0] explicit
    _, s, e, _ = _tlv(der, s)                       # OCTET STRING
    info = der[s:e]
    signer_infos = sd[-1]
    _, _, s, e = _children(der, signer_infos[2], signer_infos[3])[0]
    si = _children(der, s, e)
    digest_alg = _oid(der[_children(der, si[2][2], si[2][3])[0][2]:
                          _children(der, si[2][2], si[2][3])[0][3]])
    attrs = si[3]
    if der[attrs[1]] != 0xA0:
        raise ValueError("no signed attributes")
    attrs_der = b"\x31" + der[attrs[1] + 1:attrs[3]]
    message_digest = b""
    for _, _, a_s, a_e in _children(der, attrs[2], attrs[3]):
        a = _children(der, a_s, a_e)
        if _oid(der[a[0][2]:a[0][3]]) == _MESSAGE_DIGEST:
            _, v_s, v_e, _ = _tlv(der, a[1][2])
            message_digest = der[v_s:v_e]
    signature_el = si[5]
    signature = der[signature_el[2]:signature_el[3]]
    return info, info, attrs_der, digest_alg, signature, message_digest


def _imprint(tst: bytes) -> tuple[str, bytes]:
    _, s, e, _ = _tlv(tst, 0)
    kids = _children(tst, s, e)
    _, _, s, e = kids[2]                            # messageImprint
    alg, digest = _children(tst, s, e)
    oid_el = _children(tst, alg[2], alg[3])[0]
    return _oid(tst[oid_el[2]:oid_el[3]]), tst[digest[2]:digest[3]]
