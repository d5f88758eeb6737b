"""Put an RFC 3161 answer's certificates in DER order before rfc3161-client
reads it.

A time-stamp authority that includes its certificate chain in its tokens
(OpenSSL's `certs =`, as most public authorities do) writes the SignedData's
`certificates` SET OF in the order it holds them, not sorted as DER wants;
OpenSSL and the regulator's verifier read either, rfc3161-client's strict
parser refuses the token ("InvalidSetOrdering"). Those sets are outside
what the authority signs (its signature covers the signed attributes, which
name the TSTInfo's digest and the signing certificate's hash), so sorting
them changes nothing a check relies on: the bytes kept are the authority's,
the sorted copy is only what rfc3161-client is given to read.
"""

from __future__ import annotations


class DerError(ValueError):
    """Not the DER this reader expects."""


def _tlv(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the element at pos."""
    if pos + 2 > end:
        raise DerError("truncated")
    tag, first = data[pos], data[pos + 1]
    pos += 2
    if first & 0x80:
        n = first & 0x7F
        if not 0 < n <= 4 or pos + n > end:
            raise DerError("a length DER does not allow")
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    else:
        length = first
    if pos + length > end:
        raise DerError("an element runs past its parent")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, start of element, start of content, end) of each child."""
    out, pos = [], start
    while pos < end:
        tag, s, e = _tlv(data, pos, end)
        out.append((tag, pos, s, e))
        pos = e
    return out


def _signed_data(data: bytes, start: int, end: int) -> tuple[int, int]:
    """The SignedData's content span inside a ContentInfo at [start, end)."""
    _, s, e = _tlv(data, start, end)           # ContentInfo
    kids = _children(data, s, e)
    if len(kids) < 2 or kids[1][0] != 0xA0:
        raise DerError("not a CMS ContentInfo")
    _, s, e = _tlv(data, kids[1][2], kids[1][3])  # SignedData
    return s, e


def sorted_sets(token: bytes) -> bytes:
    """A DER TimeStampToken (ContentInfo) with its `certificates` [0] and
    `crls` [1] sets sorted by encoding (X.690 11.6): the same length, so
    only those bytes move."""
    out = bytearray(token)
    s, e = _signed_data(token, 0, len(token))
    for tag, _, cs, ce in _children(token, s, e):
        if tag in (0xA0, 0xA1):
            items = [token[h:ee] for _, h, _, ee in _children(token, cs, ce)]
            out[cs:ce] = b"".join(sorted(items))
    return bytes(out)


def token_of_response(response: bytes) -> bytes:
    """The TimeStampToken's bytes of a DER TimeStampResp, as sent."""
    _, s, e = _tlv(response, 0, len(response))
    kids = _children(response, s, e)
    if len(kids) != 2:
        raise DerError("a TimeStampResp without its token")
    return response[kids[1][1]:kids[1][3]]


def sorted_response(response: bytes) -> bytes:
    """A DER TimeStampResp whose token's sets are sorted (`sorted_sets`)."""
    _, s, e = _tlv(response, 0, len(response))
    _, head, _, end = _children(response, s, e)[-1]
    return response[:head] + sorted_sets(response[head:end]) + response[end:]
