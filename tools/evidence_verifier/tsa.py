"""RFC 3161 time-stamp tokens: what is checked of one, against the
certificates given with `--tsa-cert` (the authority's root, or its own
certificate; a PEM file may hold several, each trusted).

- the token reads as a CMS SignedData holding a TSTInfo (der.py: bounded,
  any order of a SET OF's elements);
- the TSTInfo's messageImprint is SHA-256 and equals SHA-256(statement);
- the signer's signed attributes hold a messageDigest equal to the digest
  of the encapsulated TSTInfo (by the signer's digest algorithm);
- the signer's certificate (named by the SignerInfo: issuer and serial, or
  subject key identifier) is found in the token or among those given; the
  signature over the signed attributes (re-encoded as a SET, RFC 5652 5.4)
  verifies with its key (RSA PKCS#1 v1.5 or ECDSA); when the attributes
  carry an ESSCertID (v1 or v2, RFC 2634 / 5035), its hash is that
  certificate's;
- that certificate has the timeStamping extended key usage, critical, and
  was valid at the token's genTime;
- it is one of those given, or it chains up to one: each link's signature
  verifies with the next one's key (`verify_directly_issued_by`), each
  issuer below the one given is a CA (basicConstraints) taken from the
  token's own certificates, all valid at genTime, at most 8 links.
Not checked: revocation (CRL, OCSP), name constraints and policies, the
TSA's policy OID.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from . import der
from .der import OCTETS, SEQUENCE, SET, DerError

SHA256 = "2.16.840.1.101.3.4.2.1"
HASHES = {SHA256: "sha256", "2.16.840.1.101.3.4.2.2": "sha384",
          "2.16.840.1.101.3.4.2.3": "sha512", "1.3.14.3.2.26": "sha1"}
MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
SIGNING_CERTIFICATE = "1.2.840.113549.1.9.16.2.12"      # ESSCertID, SHA-1
SIGNING_CERTIFICATE_V2 = "1.2.840.113549.1.9.16.2.47"   # ESSCertIDv2
MAX_CHAIN = 8


@dataclass
class Token:
    tst_info: bytes = b""
    imprint_algorithm: str = ""
    imprint: bytes = b""
    gen_time: datetime | None = None
    certificates: list[bytes] = field(default_factory=list)
    sid_issuer: bytes | None = None  # the signer: issuer Name (DER) and serial
    sid_serial: int | None = None
    sid_key_id: bytes | None = None  # or its subject key identifier
    digest_algorithm: str = SHA256
    signed_attributes: bytes = b""   # as a SET: what the signature is over
    signature: bytes = b""
    message_digest: bytes = b""
    cert_hashes: list[tuple[str, bytes]] = field(default_factory=list)


def parse(data: bytes) -> Token:
    """A DER TimeStampToken's parts (DerError when it is not one)."""
    t = Token()
    content_info = der.read(data)
    if content_info.end != len(data):
        raise DerError("bytes after the token")
    signed = content_info.expect(SEQUENCE).first(0xA0).inner().expect(SEQUENCE)
    parts = signed.children()
    encap = parts[2].expect(SEQUENCE).children()
    t.tst_info = encap[1].expect(0xA0).inner().expect(OCTETS).content
    info = der.read(t.tst_info).expect(SEQUENCE).children()
    algorithm, digest = info[2].expect(SEQUENCE).children()
    t.imprint_algorithm = der.oid(algorithm.children()[0])
    t.imprint = digest.expect(OCTETS).content
    t.gen_time = der.generalized_time(info[4])
    for part in parts[3:-1]:
        if part.tag == 0xA0:  # certificates, in any order
            t.certificates = [c.raw for c in part.children() if c.tag == SEQUENCE]
    infos = parts[-1].expect(SET).children()
    if len(infos) != 1:
        raise DerError(f"{len(infos)} signers, one expected")
    _signer(t, infos[0].expect(SEQUENCE).children())
    return t


def _signer(t: Token, si: list[der.Node]) -> None:
    sid = si[1]
    if sid.tag == SEQUENCE:
        issuer, serial = sid.children()
        t.sid_issuer, t.sid_serial = issuer.expect(SEQUENCE).raw, der.integer(serial)
    elif sid.tag == 0x80:
        t.sid_key_id = sid.content
    else:
        raise DerError("a signer identifier of an unknown kind")
    t.digest_algorithm = der.oid(si[2].expect(SEQUENCE).children()[0])
    attrs = si[3].expect(0xA0)
    t.signed_attributes = b"\x31" + attrs.raw[1:]
    t.signature = si[5].expect(OCTETS).content
    for attr in attrs.children():
        kind, values = attr.expect(SEQUENCE).children()
        name = der.oid(kind)
        value = values.expect(SET).children()[0]
        if name == MESSAGE_DIGEST:
            t.message_digest = value.expect(OCTETS).content
        elif name in (SIGNING_CERTIFICATE, SIGNING_CERTIFICATE_V2):
            first = value.expect(SEQUENCE).children()[0].children()[0].children()
            algorithm = "sha1" if name == SIGNING_CERTIFICATE else "sha256"
            if first[0].tag == SEQUENCE:  # v2 with its hash algorithm stated
                algorithm = HASHES.get(der.oid(first[0].children()[0]), "?")
                first = first[1:]
            t.cert_hashes.append((algorithm, first[0].expect(OCTETS).content))


def _issuer_serial(cert: bytes) -> tuple[bytes, int]:
    tbs = der.read(cert).children()[0].children()
    if tbs[0].tag == 0xA0:  # [0] version
        tbs = tbs[1:]
    return tbs[2].raw, der.integer(tbs[0])


def _is_signer(t: Token, cert, raw: bytes) -> bool:
    if t.sid_key_id is not None:
        from cryptography import x509

        try:
            ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        except x509.ExtensionNotFound:
            return False
        return ski.value.digest == t.sid_key_id
    return _issuer_serial(raw) == (t.sid_issuer, t.sid_serial)


def _tsa_check(token_b64: str, message: bytes, cert, what: str) -> str | None:
    """None when the token time-stamps `message` and holds against `cert`
    (a certificate, or a list of them: the trusted ones); else the problem.
    What is checked: this module's docstring."""
    from cryptography import x509

    anchors = list(cert) if isinstance(cert, list | tuple) else [cert]
    try:
        t = parse(base64.b64decode(token_b64, validate=True))
        carried = [(x509.load_der_x509_certificate(c), c) for c in t.certificates]
    except (ValueError, IndexError) as exc:
        return f"{what}: its time-stamp token cannot be read ({exc})"
    if t.imprint_algorithm != SHA256 or t.imprint != hashlib.sha256(
            message).digest():
        return (f"{what}: its time-stamp token is for another digest (the token "
                "does not time-stamp this statement)")
    algorithm = HASHES.get(t.digest_algorithm)
    if algorithm is None:
        return f"{what}: its time-stamp token's digest algorithm is not supported"
    if t.message_digest != hashlib.new(algorithm, t.tst_info).digest():
        return f"{what}: its time-stamp token's content does not match its signature"
    given = [(a, a.public_bytes(_der_encoding())) for a in anchors]
    try:
        signer = next(((c, raw) for c, raw in carried + given
                       if _is_signer(t, c, raw)), None)
    except (ValueError, IndexError) as exc:
        return f"{what}: its time-stamp token's certificates cannot be read ({exc})"
    if signer is None:
        return (f"{what}: its time-stamp token is not signed by the TSA "
                "certificate given (its signer's certificate is neither in the "
                "token nor given)")
    problem = (_signature(t, signer[0], algorithm) or _cert_hash(t, signer[1])
               or _leaf(signer[0], t.gen_time)
               or _chain(signer, carried, given, t.gen_time))
    return f"{what}: {problem}" if problem else None


def _der_encoding():
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.DER


def _signature(t: Token, cert, algorithm: str) -> str | None:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

    algo = {"sha256": hashes.SHA256(), "sha384": hashes.SHA384(),
            "sha512": hashes.SHA512(), "sha1": hashes.SHA1()}[algorithm]
    key = cert.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(t.signature, t.signed_attributes, padding.PKCS1v15(), algo)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(t.signature, t.signed_attributes, ec.ECDSA(algo))
        else:
            return "the TSA certificate's key type is not supported"
    except InvalidSignature:
        return ("its time-stamp token is not signed by the TSA certificate given "
                "(the signature does not verify with its signer's key)")
    return None


def _cert_hash(t: Token, raw: bytes) -> str | None:
    for algorithm, digest in t.cert_hashes[:1]:
        if algorithm not in ("sha1", "sha256", "sha384", "sha512") or (
                hashlib.new(algorithm, raw).digest() != digest):
            return ("its time-stamp token's signing-certificate attribute does "
                    "not name the certificate that signed it")
    return None


def _valid_at(cert, at: datetime) -> bool:
    before = getattr(cert, "not_valid_before_utc", None)
    after = getattr(cert, "not_valid_after_utc", None)
    if before is None:  # cryptography before 42: naive UTC
        before = cert.not_valid_before.replace(tzinfo=at.tzinfo)
        after = cert.not_valid_after.replace(tzinfo=at.tzinfo)
    return before <= at <= after


def _leaf(cert, at: datetime) -> str | None:
    from cryptography import x509

    try:
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    except x509.ExtensionNotFound:
        usage = None
    if (usage is None or not usage.critical
            or x509.ExtendedKeyUsageOID.TIME_STAMPING not in usage.value):
        return ("its time-stamp token's signer certificate is not a time-stamping "
                "one (extended key usage timeStamping, critical)")
    if not _valid_at(cert, at):
        return (f"its time-stamp token's signer certificate was not valid at the "
                f"token's time ({at:%Y-%m-%d %H:%M:%S}Z)")
    return None


def _issued(child, parent) -> bool:
    try:
        child.verify_directly_issued_by(parent)
    except Exception:  # noqa: BLE001 - another name, key or signature: not it
        return False
    return True


def _is_ca(cert) -> bool:
    from cryptography import x509

    try:
        return cert.extensions.get_extension_for_class(
            x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


def _chain(signer, carried, given, at: datetime) -> str | None:
    """None when the signer is a certificate given or chains up to one
    through the token's CA certificates."""
    trusted = {raw for _, raw in given}
    current, raw = signer
    for _ in range(MAX_CHAIN):
        if raw in trusted:
            return None
        anchor = next((a for a, r in given if r != raw and _is_ca(a)
                       and _issued(current, a)), None)
        if anchor is not None:
            if not _valid_at(anchor, at):
                return ("its time-stamp token's chain ends at a certificate given "
                        "that was not valid at the token's time")
            return None
        up = next(((c, r) for c, r in carried if r != raw and _is_ca(c)
                   and _valid_at(c, at) and _issued(current, c)), None)
        if up is None:
            break
        current, raw = up
    return ("its time-stamp token is not signed by the TSA certificate given "
            f"(its signer, {signer[0].subject.rfc4514_string()}, does not chain "
            "up to a certificate given)")
