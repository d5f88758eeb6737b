"""A small, bounded DER reader: just what a time-stamp token needs (CMS
SignedData, TSTInfo, a certificate's issuer and serial). Every length is
checked against its parent, so a truncated or forged token is a DerError,
never an IndexError or a read past the end. SET OF elements are read in
whatever order they come (authorities do not all sort them as DER wants).
(casino/tsa_der.py has its twin for the app: this program imports nothing
of the casino's.)"""

from __future__ import annotations

from datetime import UTC, datetime


class DerError(ValueError):
    """Not the DER this reader expects."""


SEQUENCE, SET, INTEGER, OCTETS, OID, GENERALIZED_TIME = (
    0x30, 0x31, 0x02, 0x04, 0x06, 0x18)


class Node:
    """One element: its tag, and where its header and content lie."""

    __slots__ = ("data", "tag", "head", "start", "end")

    def __init__(self, data: bytes, tag: int, head: int, start: int, end: int):
        self.data, self.tag, self.head, self.start, self.end = (
            data, tag, head, start, end)

    @property
    def content(self) -> bytes:
        return self.data[self.start:self.end]

    @property
    def raw(self) -> bytes:
        """The element whole, header and all."""
        return self.data[self.head:self.end]

    def children(self) -> list[Node]:
        out, pos = [], self.start
        while pos < self.end:
            node = read(self.data, pos, self.end)
            out.append(node)
            pos = node.end
        return out

    def first(self, tag: int) -> Node:
        """The only child (the first) of `tag`; DerError if none."""
        for child in self.children():
            if child.tag == tag:
                return child
        raise DerError(f"no element of tag {tag:#x}")

    def inner(self) -> Node:
        """The one element inside an EXPLICIT tag or an OCTET STRING."""
        return read(self.data, self.start, self.end)

    def expect(self, tag: int) -> Node:
        if self.tag != tag:
            raise DerError(f"tag {self.tag:#x} where {tag:#x} was expected")
        return self


def read(data: bytes, pos: int = 0, end: int | None = None) -> Node:
    """The element at pos (not past end)."""
    end = len(data) if end is None else end
    if pos + 2 > end:
        raise DerError("truncated")
    tag, first = data[pos], data[pos + 1]
    if tag & 0x1F == 0x1F:
        raise DerError("a multi-byte tag")
    start = pos + 2
    if first & 0x80:
        n = first & 0x7F
        if not 0 < n <= 4 or start + n > end:  # 0x80: BER's indefinite length
            raise DerError("a length DER does not allow")
        length = int.from_bytes(data[start:start + n], "big")
        start += n
    else:
        length = first
    if start + length > end:
        raise DerError("an element runs past its parent")
    return Node(data, tag, pos, start, start + length)


def oid(node: Node) -> str:
    body = node.expect(OID).content
    if not body:
        raise DerError("an empty OID")
    parts, value = [min(body[0] // 40, 2), 0], 0
    parts[1] = body[0] - 40 * parts[0]
    for b in body[1:]:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def integer(node: Node) -> int:
    return int.from_bytes(node.expect(INTEGER).content, "big", signed=True)


def generalized_time(node: Node) -> datetime:
    """YYYYMMDDHHMMSS[.f...]Z, as RFC 3161 writes genTime."""
    text = node.expect(GENERALIZED_TIME).content.decode("ascii")
    if not text.endswith("Z") or len(text) < 15:
        raise DerError(f"a time {text!r} not in UTC")
    whole, _, fraction = text[:-1].partition(".")
    at = datetime.strptime(whole, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    if fraction:
        at = at.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    return at
