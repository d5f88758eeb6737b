"""A transparency log's arithmetic and formats, with no Django and no state:
what the app (casino/witness.py), the witness (tools/witness/) and the
standalone verifier share, so that the three can never disagree.

- RFC 6962 (section 2.1) / RFC 9162 (section 2.1) Merkle trees over SHA-256:
  leaf hash SHA-256(0x00 || data), node hash SHA-256(0x01 || left || right),
  the empty tree's root SHA-256(""); inclusion and consistency proofs, made
  from any store of complete subtrees (`Nodes`) in O(log n) look-ups, and
  checked as RFC 9162 sections 2.1.3.2 and 2.1.4.2 say.
- c2sp.org/signed-note: a text ending in a newline, an empty line, then
  lines "— <name> base64(key ID || signature)"; Ed25519 (type 0x01) key ID =
  SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4]; verifier keys
  "<name>+<hex key ID>+base64(0x01 || public key)".
- c2sp.org/tlog-checkpoint: origin, tree size, base64 root hash, optional
  extension lines.
- c2sp.org/tlog-cosignature (cosignature/v1, Ed25519, type 0x04): key ID =
  SHA-256(name || 0x0A || 0x04 || public key)[:4]; the signature is the
  8-byte big-endian POSIX time then the 64-byte Ed25519 signature over
  "cosignature/v1\\ntime <t>\\n" followed by the checkpoint's note text.
- c2sp.org/tlog-witness add-checkpoint request bodies: "old <size>", one
  base64 hash per line (at most 63), an empty line, the signed checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()
ALG_ED25519 = 0x01
ALG_COSIGNATURE_V1 = 0x04
DASH = "\u2014"  # the em dash every note signature line starts with
MAX_PROOF = 63  # tlog-witness: at most 63 consistency proof lines
MAX_SIGNATURES = 100


class ProofError(ValueError):
    """A proof, a note or a checkpoint that does not hold, and why."""


# -- RFC 6962 hashing ----------------------------------------------------------

def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two smaller than n (n > 1): RFC 6962's k."""
    return 1 << ((n - 1).bit_length() - 1)


# A store of complete subtrees: get(level, index) is the hash of the subtree
# over leaves [index * 2**level, (index + 1) * 2**level) (level 0: the leaf
# hashes). RFC 6962's proofs only ever need such subtrees and the right edge
# built from them, so any store of them (a list, a table) makes proofs.
Nodes = Callable[[int, int], bytes]


def range_hash(get: Nodes, lo: int, hi: int) -> bytes:
    """MTH of the leaves [lo, hi), lo aligned as RFC 6962's recursion has it:
    O(log n) look-ups."""
    n = hi - lo
    if n <= 0:
        return EMPTY_ROOT
    if n & (n - 1) == 0 and lo % n == 0:
        level = n.bit_length() - 1
        return get(level, lo >> level)
    k = split(n)
    return node_hash(range_hash(get, lo, lo + k), range_hash(get, lo + k, hi))


def root_hash(get: Nodes, size: int) -> bytes:
    return range_hash(get, 0, size)


def inclusion_proof(get: Nodes, index: int, size: int) -> list[bytes]:
    """PATH(index, D[size]) of RFC 6962 section 2.1.1, deepest first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size}")
    path: list[bytes] = []
    lo, hi, m = 0, size, index
    while hi - lo > 1:
        k = split(hi - lo)
        if m < k:
            path.append(range_hash(get, lo + k, hi))
            hi = lo + k
        else:
            path.append(range_hash(get, lo, lo + k))
            lo, m = lo + k, m - k
    return path[::-1]


def consistency_proof(get: Nodes, old: int, new: int) -> list[bytes]:
    """PROOF(old, D[new]) of RFC 6962 section 2.1.2 (empty for old 0 or old
    == new)."""
    if not 0 <= old <= new:
        raise ProofError(f"no consistency proof from {old} to {new}")
    if old == 0 or old == new:
        return []
    path: list[bytes] = []
    lo, hi, m, whole = 0, new, old, True
    while m != hi - lo:
        k = split(hi - lo)
        if m <= k:
            path.append(range_hash(get, lo + k, hi))
            hi = lo + k
        else:
            path.append(range_hash(get, lo, lo + k))
            lo, m, whole = lo + k, m - k, False
    if not whole:
        path.append(range_hash(get, lo, hi))
    return path[::-1]


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes],
                     root: bytes) -> None:
    """RFC 9162 section 2.1.3.2; raises ProofError."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size}")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the inclusion proof is too short")
    if r != root:
        raise ProofError("the inclusion proof does not lead to the root")


def verify_consistency(old: int, new: int, proof: Sequence[bytes],
                       old_root: bytes, new_root: bytes) -> None:
    """RFC 9162 section 2.1.4.2; raises ProofError."""
    if not 0 <= old <= new:
        raise ProofError(f"a tree of {new} cannot extend one of {old}")
    if old == new:
        if proof:
            raise ProofError("a proof between equal sizes must be empty")
        if old_root != new_root:
            raise ProofError("two different roots for the same size (a fork)")
        return
    if old == 0:
        if proof:
            raise ProofError("a proof from the empty tree must be empty")
        return
    if not proof:
        raise ProofError("the consistency proof is empty")
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is too long")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the consistency proof is too short")
    if fr != old_root:
        raise ProofError("the older tree is not a prefix of the newer one (a fork)")
    if sr != new_root:
        raise ProofError("the consistency proof does not lead to the new root")


def subtrees(lo: int, hi: int) -> list[tuple[int, int]]:
    """The complete subtrees (level, index) that cover the leaves [lo, hi),
    left to right, each as large as its position allows: a compact range.
    subtrees(0, n) is the tree of n leaves' right edge (one per bit of n)."""
    out = []
    while lo < hi:
        level = (lo & -lo).bit_length() - 1 if lo else (hi - lo).bit_length() - 1
        while lo + (1 << level) > hi:
            level -= 1
        out.append((level, lo >> level))
        lo += 1 << level
    return out


class CompactRange:
    """The tree of the leaves [0, size) as its right edge (the hashes of
    subtrees(0, size), left to right): leaves and complete subtrees appended
    at its end, its root at any moment. What recomputes a checkpoint's root
    from a window of leaves with the hashes of the subtrees left of it (and
    right of it, up to the checkpoint's size): O(1) hashes a leaf
    (amortized), O(log n) a root."""

    def __init__(self, size: int = 0, edge: Sequence[bytes] = ()):
        if size < 0 or len(edge) != size.bit_count() or any(
                len(h) != HASH_SIZE for h in edge):
            raise ProofError(f"a tree of {size} leaves has {size.bit_count()} "
                             f"subtrees on its right edge, not {len(edge)}")
        self.size, self.edge = size, list(edge)

    def copy(self) -> CompactRange:
        return CompactRange(self.size, self.edge)

    def leaf(self, h: bytes) -> None:
        """Append a leaf hash."""
        n, edge, sha = self.size, self.edge, hashlib.sha256
        self.size = n + 1
        while n & 1:
            h = sha(b"\x01" + edge.pop() + h).digest()
            n >>= 1
        edge.append(h)

    def subtree(self, level: int, h: bytes) -> None:
        """Append the hash of a complete subtree of 2**level leaves, which
        must start at a multiple of its size."""
        if level < 0 or self.size % (1 << level) or len(h) != HASH_SIZE:
            raise ProofError(f"a subtree of 2**{level} leaves cannot follow "
                             f"{self.size} leaves")
        n = self.size >> level
        self.size += 1 << level
        while n & 1:
            h = node_hash(self.edge.pop(), h)
            n >>= 1
        self.edge.append(h)

    def root(self) -> bytes:
        if not self.edge:
            return EMPTY_ROOT
        h = self.edge[-1]
        for left in reversed(self.edge[:-1]):
            h = node_hash(left, h)
        return h


class MemoryTree:
    """Every complete subtree of a list of leaf hashes, level by level: the
    verify and bench side's store (the app's is a table, casino/witness.py)."""

    def __init__(self, leaves: Sequence[bytes] = ()):
        self.levels: list[list[bytes]] = [[]]
        for leaf in leaves:
            self.append(leaf)

    @property
    def size(self) -> int:
        return len(self.levels[0])

    def append(self, leaf: bytes) -> None:
        level, h = 0, leaf
        while True:
            if len(self.levels) == level:
                self.levels.append([])
            row = self.levels[level]
            row.append(h)
            if len(row) % 2:
                return
            h = node_hash(row[-2], h)
            level += 1

    def get(self, level: int, index: int) -> bytes:
        return self.levels[level][index]

    def root(self, size: int | None = None) -> bytes:
        return root_hash(self.get, self.size if size is None else size)


# -- signed notes (c2sp.org/signed-note) ---------------------------------------

def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
        raise ProofError(f"{what}: not base64") from exc


def public_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw,
                            serialization.PublicFormat.Raw)


def key_id(name: str, alg: int, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + bytes([alg]) + public).digest()[:4]


def _check_name(name: str) -> None:
    if not name or any(c.isspace() or c == "+" for c in name):
        raise ProofError(f"key name {name!r}: empty, or holds a space or a plus")


def vkey(name: str, public: bytes, alg: int = ALG_ED25519) -> str:
    """A verifier key as signed-note writes it."""
    _check_name(name)
    return f"{name}+{key_id(name, alg, public).hex()}+{b64(bytes([alg]) + public)}"


@dataclass(frozen=True)
class Verifier:
    name: str
    alg: int
    public: bytes

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.alg, self.public)


def parse_vkey(text: str) -> Verifier:
    """A verifier key "<name>+<hex key ID>+base64(type || public key)"."""
    parts = text.strip().split("+", 2)  # base64 may hold a plus
    if len(parts) != 3:
        raise ProofError("a verifier key is name+keyid+key")
    name, hex_id, material = parts
    _check_name(name)
    raw = unb64(material, "verifier key")
    if len(raw) != 33 or raw[0] not in (ALG_ED25519, ALG_COSIGNATURE_V1):
        raise ProofError("verifier key: an Ed25519 key (type 0x01 or 0x04) expected")
    v = Verifier(name, raw[0], raw[1:])
    if len(hex_id) != 8 or hex_id != v.key_id.hex():
        raise ProofError(f"verifier key {name}: its key ID does not match the key")
    return v


def _check_text(text: str) -> None:
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise ProofError("a note holds a control character")


def note_text_check(text: str) -> None:
    if not text.endswith("\n"):
        raise ProofError("a note's text must end with a newline")
    _check_text(text)


def sign_line(name: str, kid: bytes, signature: bytes) -> str:
    return f"{DASH} {name} {b64(kid + signature)}\n"


def note_sign(text: str, name: str, private: Ed25519PrivateKey) -> str:
    """The Ed25519 (type 0x01) signature line of `text`."""
    note_text_check(text)
    _check_name(name)
    kid = key_id(name, ALG_ED25519, public_raw(private.public_key()))
    return sign_line(name, kid, private.sign(text.encode("utf-8")))


@dataclass(frozen=True)
class Signature:
    name: str
    key_id: bytes
    signature: bytes  # after the key ID

    def line(self) -> str:
        return sign_line(self.name, self.key_id, self.signature)


def note_split(note: str) -> tuple[str, list[Signature]]:
    """(text, signatures) of a signed note; the text ends at the last empty
    line."""
    _check_text(note)
    if not note.endswith("\n"):
        raise ProofError("a signed note must end with a newline")
    cut = note.rfind("\n\n")
    if cut < 0:
        raise ProofError("a signed note has no empty line before its signatures")
    text, block = note[:cut + 1], note[cut + 2:]
    sigs = parse_signature_lines(block)
    if not sigs:
        raise ProofError("a signed note has no signature")
    return text, sigs


def parse_signature_lines(block: str) -> list[Signature]:
    sigs = []
    for line in block.splitlines():
        if not line.startswith(DASH + " "):
            raise ProofError("a signature line must start with an em dash and a space")
        parts = line[2:].split(" ")
        if len(parts) != 2:
            raise ProofError("a signature line is: em dash, name, signature")
        name, encoded = parts
        _check_name(name)
        raw = unb64(encoded, f"signature of {name}")
        if len(raw) < 5:
            raise ProofError(f"signature of {name}: too short")
        sigs.append(Signature(name, raw[:4], raw[4:]))
        if len(sigs) > MAX_SIGNATURES:
            raise ProofError("too many signatures")
    return sigs


def _ed25519_ok(public: bytes, signature: bytes, message: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def note_open(note: str, verifiers: Sequence[Verifier]) -> tuple[str, list[str]]:
    """The note's text if a known Ed25519 (0x01) key signed it: (text, names
    of the keys whose signatures hold). Unknown signatures are ignored; a
    known one that does not hold refuses the note."""
    text, sigs = note_split(note)
    known = {(v.name, v.key_id): v for v in verifiers if v.alg == ALG_ED25519}
    good = []
    for sig in sigs:
        v = known.get((sig.name, sig.key_id))
        if v is None:
            continue
        if not _ed25519_ok(v.public, sig.signature, text.encode("utf-8")):
            raise ProofError(f"the signature of {sig.name} does not hold")
        good.append(sig.name)
    if not good:
        raise ProofError("no signature of a known key")
    return text, good


# -- checkpoints (c2sp.org/tlog-checkpoint) --------------------------------------

@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        lines = [self.origin, str(self.size), b64(self.root), *self.extensions]
        return "\n".join(lines) + "\n"


def _decimal(text: str, what: str) -> int:
    if not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        raise ProofError(f"{what}: a decimal with no leading zero expected")
    if len(text) > 19:
        raise ProofError(f"{what}: too large")
    return int(text)


def checkpoint_parse(text: str) -> Checkpoint:
    note_text_check(text)
    lines = text[:-1].split("\n")
    if len(lines) < 3 or any(not line for line in lines):
        raise ProofError("a checkpoint is at least three non-empty lines")
    origin = lines[0]
    size = _decimal(lines[1], "checkpoint size")
    root = unb64(lines[2], "checkpoint root")
    if len(root) != HASH_SIZE:
        raise ProofError("checkpoint root: 32 bytes expected")
    return Checkpoint(origin, size, root, tuple(lines[3:]))


# -- cosignatures (c2sp.org/tlog-cosignature, cosignature/v1) -------------------

def cosigned_message(text: str, timestamp: int) -> bytes:
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


def cosign(text: str, name: str, private: Ed25519PrivateKey, timestamp: int) -> str:
    """A cosignature/v1 line over a checkpoint's note text."""
    note_text_check(text)
    _check_name(name)
    if not 0 <= timestamp < 2**63:
        raise ProofError("cosignature time out of range")
    kid = key_id(name, ALG_COSIGNATURE_V1, public_raw(private.public_key()))
    sig = private.sign(cosigned_message(text, timestamp))
    return sign_line(name, kid, struct.pack(">Q", timestamp) + sig)


def cosignature_check(text: str, sig: Signature, verifier: Verifier) -> int:
    """The time a cosignature/v1 signature line states, once it holds."""
    if verifier.alg != ALG_COSIGNATURE_V1:
        raise ProofError(f"{verifier.name}: not a cosignature/v1 key")
    if (sig.name, sig.key_id) != (verifier.name, verifier.key_id):
        raise ProofError(f"the cosignature is not from {verifier.name}")
    if len(sig.signature) != 8 + 64:
        raise ProofError(f"cosignature of {sig.name}: 72 bytes expected")
    (timestamp,) = struct.unpack(">Q", sig.signature[:8])
    if timestamp >= 2**63:
        raise ProofError(f"cosignature of {sig.name}: time out of range")
    if not _ed25519_ok(verifier.public, sig.signature[8:],
                       cosigned_message(text, timestamp)):
        raise ProofError(f"the cosignature of {sig.name} does not hold")
    return timestamp


# -- tlog-witness requests ---------------------------------------------------------

def add_checkpoint_body(old: int, proof: Sequence[bytes], note: str) -> bytes:
    if len(proof) > MAX_PROOF:
        raise ProofError("more than 63 consistency proof lines")
    lines = [f"old {old}", *(b64(h) for h in proof), ""]
    return ("\n".join(lines) + "\n" + note).encode("utf-8")


def add_checkpoint_parse(body: bytes) -> tuple[int, list[bytes], str]:
    """(old size, proof, signed checkpoint) of an add-checkpoint body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProofError("the request is not UTF-8") from exc
    head, sep, note = text.partition("\n\n")
    if not sep:
        raise ProofError("no empty line after the consistency proof")
    lines = head.split("\n")
    if not lines[0].startswith("old "):
        raise ProofError("the first line must be 'old <size>'")
    old = _decimal(lines[0][4:], "old size")
    if len(lines) - 1 > MAX_PROOF:
        raise ProofError("more than 63 consistency proof lines")
    proof = []
    for line in lines[1:]:
        h = unb64(line, "consistency proof line")
        if len(h) != HASH_SIZE:
            raise ProofError("a consistency proof line must hold 32 bytes")
        proof.append(h)
    return old, proof, note
