"""Trusted timestamps (RFC 3161) of every anchor (issue 25 item 2).

With `TRAIL_TSA_URL` set, every anchor's statement (casino/signing.py
`anchor_statement`: row, link, hash, at, reason) is sent to that time-stamp
authority: a TimeStampReq with the message imprint SHA-256(statement), certReq
true and a random nonce, POSTed as `application/timestamp-query`. The answer
is checked before it is kept (status granted, the nonce, the imprint, and the
authority's signature up to `TRAIL_TSA_CA_FILE`, with the critical
timeStamping extended key usage), with `rfc3161-client`. A token proves that
the statement, and so the chain's head it names, existed at the token's
time, to anyone who trusts the authority, even if the casino's host is later
compromised whole.

Where the token is kept:
- in the database: `casino.TimestampToken` (append-only), the base64 of the
  DER TimeStampToken, with its anchor (`casino.AnchorRecord`, append-only:
  every anchor, token or not);
- beside the anchor file: `<anchor file>.tsr`, the DER TimeStampResp
  (`SEQUENCE { status SEQUENCE { 0 }, timeStampToken }`, as the authority
  sends it; `response_of_token` rebuilds it from a token), so that
  `openssl ts -verify -in <file>.tsr -data <statement file> -CAfile <ca>`
  checks it; and, when the authority answered while the anchor was written,
  in the anchor file's own `tsa_token` (base64 DER TimeStampToken).

An authority that does not answer stops nothing: the anchor is written and
kept without its token (`tsa_token` null), and beat asks again every
`TRAIL_TSA_RETRY_MINUTES` (`trail.timestamps_retry`) until it answers; the
trail page shows the age of the oldest anchor still without one. A
later token is of the same statement: it proves the head existed by then.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from .tsa_der import sorted_response, sorted_sets, token_of_response

log = logging.getLogger("casino.timestamps")

CONTENT_TYPE = "application/timestamp-query"
REPLY_TYPE = "application/timestamp-reply"


class TimestampError(Exception):
    """The authority did not answer, or its answer does not hold."""


@dataclass(frozen=True)
class Stamp:
    token: bytes  # DER TimeStampToken
    response: bytes  # DER TimeStampResp
    gen_time: datetime
    serial: int

    @property
    def token_b64(self) -> str:
        return base64.b64encode(self.token).decode()


def enabled() -> bool:
    return bool(settings.TRAIL_TSA_URL)


def _certificates() -> list:
    """The authority's CA certificate(s), PEM: the first a root, any others
    intermediates."""
    import cryptography.x509

    pem = Path(settings.TRAIL_TSA_CA_FILE).read_bytes()
    return cryptography.x509.load_pem_x509_certificates(pem)


def _verifier(builder):
    certs = _certificates()
    builder = builder.add_root_certificate(certs[0])
    for cert in certs[1:]:
        builder = builder.add_intermediate_certificate(cert)
    return builder.build()


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def response_of_token(token: bytes) -> bytes:
    """The DER TimeStampResp (status granted) around a DER TimeStampToken:
    what rfc3161-client and `openssl ts -verify -in` read."""
    body = bytes.fromhex("3003020100") + token
    return b"\x30" + _der_length(len(body)) + body


def ask(statement: bytes, *, timeout: float | None = None) -> Stamp:
    """Time-stamp `statement` now; TimestampError when the authority does not
    answer or its answer does not hold."""
    from rfc3161_client import (
        HashAlgorithm,
        TimestampRequestBuilder,
        VerificationError,
        VerifierBuilder,
        decode_timestamp_response,
    )

    request = TimestampRequestBuilder(
        data=statement, hash_algorithm=HashAlgorithm.SHA256, nonce=True,
        cert_req=True).build()
    http = urllib.request.Request(
        settings.TRAIL_TSA_URL, data=request.as_bytes(), method="POST",
        headers={"Content-Type": CONTENT_TYPE, "Accept": REPLY_TYPE})
    try:
        with urllib.request.urlopen(
                http, timeout=timeout or settings.TRAIL_TSA_TIMEOUT) as answer:
            data = answer.read(1 << 20)
    except (OSError, urllib.error.URLError) as exc:  # refused, timed out, 5xx
        raise TimestampError(f"the authority did not answer: {exc}") from exc
    try:
        # read in DER order (casino/tsa_der.py); the authority's bytes are kept
        response = decode_timestamp_response(sorted_response(data))
        _verifier(VerifierBuilder.from_request(request)).verify_message(
            response, statement)
        token = token_of_response(data)
    except (ValueError, VerificationError) as exc:
        raise TimestampError(f"the authority's answer does not hold: {exc}") from exc
    info = response.tst_info
    return Stamp(token, data, info.gen_time, info.serial_number)


def token_check(token_b64: str, statement: bytes) -> str:
    """'' when the token (base64 DER TimeStampToken) time-stamps `statement`
    (its imprint) and, with TRAIL_TSA_CA_FILE set, carries the authority's
    valid signature; else what is wrong."""
    from rfc3161_client import (
        VerificationError,
        VerifierBuilder,
        decode_timestamp_response,
    )

    try:
        response = decode_timestamp_response(response_of_token(
            sorted_sets(base64.b64decode(token_b64, validate=True))))
    except ValueError as exc:
        return f"its timestamp token does not read as one ({exc})"
    imprint = response.tst_info.message_imprint.message
    if imprint != hashlib.sha256(statement).digest():
        return (f"its timestamp token is for another digest ({imprint.hex()[:16]}"
                "..., not the SHA-256 of the anchor's statement)")
    if settings.TRAIL_TSA_CA_FILE:
        try:
            _verifier(VerifierBuilder()).verify_message(response, statement)
        except (ValueError, VerificationError) as exc:
            return f"its timestamp token does not verify ({exc})"
    return ""


# -- the anchors' tokens ---------------------------------------------------------

def tsr_path(anchor_file: str) -> Path:
    return Path(settings.TRAIL_ANCHOR_DIR) / f"{anchor_file}.tsr"


def ask_now(statement: bytes) -> Stamp | None:
    """While an anchor is written: the token, or None (no authority set, or
    it did not answer: the retry asks again)."""
    if not enabled():
        return None
    try:
        return ask(statement)
    except TimestampError as exc:
        log.warning("anchor kept without its trusted timestamp (asked again "
                    "every %s minutes): %s", settings.TRAIL_TSA_RETRY_MINUTES, exc)
        return None


def token_keep(record, stamp: Stamp):
    """Keep a token received for `record` (casino.AnchorRecord): its row,
    and the response beside the anchor file (never overwritten)."""
    from .models import TimestampToken
    from .writeonce import file_create

    path = tsr_path(record.file)
    if not path.exists():
        try:
            file_create(path, stamp.response)
        except FileExistsError:
            pass
        except OSError as exc:  # the row still keeps it
            log.error("could not write %s: %s", path, exc)
    return TimestampToken.objects.create(
        anchor=record, token=stamp.token_b64, gen_time=stamp.gen_time,
        serial=str(stamp.serial), authority=settings.TRAIL_TSA_URL[:500],
        received_at=timezone.now())


def record_statement(record) -> bytes:
    from .signing import anchor_statement, at_text

    return anchor_statement(row=record.row, link=record.link, hash=record.hash,
                            at=at_text(record.at), reason=record.reason)


def pending():
    """Anchors still without a token, oldest first."""
    from .models import AnchorRecord

    return AnchorRecord.objects.filter(tokens__isnull=True).order_by("at", "id")


def pending_oldest():
    """The oldest anchor still without a token (None: none, or no authority
    set): for the trail page and the health checks."""
    return pending().first() if enabled() else None


def timestamps_retry(*, limit: int = 200) -> dict:
    """Ask again for every anchor still without a token, oldest first; stop
    at the first that the authority does not answer (it is down: the next
    run asks again). Idempotent: an anchor given a token is not asked again."""
    if not enabled():
        return {"asked": 0, "received": 0, "left": 0}
    asked = received = 0
    for record in list(pending()[:limit]):
        asked += 1
        try:
            stamp = ask(record_statement(record))
        except TimestampError as exc:
            log.warning("trusted timestamp of anchor %s (row %s) still missing: %s",
                        record.pk, record.row, exc)
            break
        token_keep(record, stamp)
        received += 1
    return {"asked": asked, "received": received, "left": pending().count()}


def tokens_check(found) -> list[tuple[int, str]]:
    """Every token kept, against the statement of its anchor: the database's
    (each TimestampToken) and the files' (`tsa_token`, `<file>.tsr`).
    (row, problem)."""
    from .models import TimestampToken

    problems = []
    tokens = TimestampToken.objects.select_related("anchor").order_by("id")
    for token in tokens.iterator(chunk_size=500):
        wrong = token_check(token.token, record_statement(token.anchor))
        if wrong:
            problems.append((token.anchor.row, (
                f"row {token.anchor.row}: the anchor of {token.anchor.file} "
                f"(timestamp {token.pk}): {wrong}")))
    for anchor in found:
        kept = [anchor.tsa_token] if anchor.tsa_token else []
        path = tsr_path(anchor.file)
        if path.exists():
            kept.append(_token_of_response(path.read_bytes()))
        for token in kept:
            wrong = token_check(token, anchor.statement()) if token else (
                "its .tsr file does not read as a timestamp response")
            if wrong:
                problems.append((anchor.row,
                                 f"row {anchor.row}: anchor file {anchor.file}: "
                                 f"{wrong}"))
    return problems


def _token_of_response(data: bytes) -> str:
    from rfc3161_client import decode_timestamp_response

    try:
        decode_timestamp_response(sorted_response(data))  # it reads as one
        return base64.b64encode(token_of_response(data)).decode()
    except ValueError:
        return ""
