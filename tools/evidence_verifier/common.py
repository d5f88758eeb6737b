"""What every part of the verifier shares: the canonical JSON, digests,
the problems found, the rules engine loaded by path, keys and signatures."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

FORMAT = "chemmy-evidence/1"
GENESIS = "0" * 64
PARTS = ("ledger.jsonl", "context.jsonl", "log.jsonl", "anchors.jsonl",
         "report.json", "outside.jsonl")
# a part a bundle of an earlier release does not have (read as empty)
OPTIONAL_PARTS = ("checkpoints.jsonl",)
MAX_PROBLEMS = 50
CHILD_LABELS = ("tables.stake", "tables.finding")  # keyed "coup#position"
ZERO = Decimal("0.00")


class Unreadable(Exception):
    """The bundle cannot be checked at all (exit 2)."""


# the canonical JSON the casino digests and signs (one encoder, reused)
dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"),
                         ensure_ascii=False).encode
loads = json.JSONDecoder().decode


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- the rules engine, by path -------------------------------------------------

def load_engine(folder: Path | None = None):
    """The project's rules engine (tables/chemmy: standard library only),
    loaded as a package of its own from this checkout, not vendored: the
    regulator runs the very code the casino runs, and can read and pin it
    (its files' digest is printed)."""
    folder = folder or Path(__file__).resolve().parents[2] / "tables" / "chemmy"
    init = folder / "__init__.py"
    if not init.is_file():
        raise Unreadable(f"no rules engine at {folder} (--engine DIR)")
    spec = importlib.util.spec_from_file_location(
        "chemmy_engine", init, submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["chemmy_engine"] = module
    spec.loader.exec_module(module)
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return module, digest.hexdigest()


# -- keys and signatures ---------------------------------------------------------

def key_id(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def load_public_key(path: Path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = path.read_bytes()
    if b"-----BEGIN" in data:
        key = serialization.load_pem_public_key(data)
        if not isinstance(key, Ed25519PublicKey):
            raise Unreadable(f"{path}: not an Ed25519 public key")
    else:
        text = data.strip().decode("ascii", "replace")
        try:
            raw = bytes.fromhex(text) if len(text) == 64 else base64.b64decode(text)
        except ValueError as exc:
            raise Unreadable(f"{path}: not a key ({exc})") from exc
        if len(raw) != 32:
            raise Unreadable(f"{path}: an Ed25519 public key is 32 bytes")
        key = Ed25519PublicKey.from_public_bytes(raw)
    raw = key.public_bytes(serialization.Encoding.Raw,
                           serialization.PublicFormat.Raw)
    return key_id(raw), key


def statement_bytes(anchor: dict) -> bytes:
    return dumps({k: anchor[k] for k in ("row", "link", "hash", "at", "reason")}
                 ).encode("utf-8")


def signature_check(keys: dict, message: bytes, signature: str | None,
                    kid: str | None, what: str) -> str | None:
    from cryptography.exceptions import InvalidSignature

    key = keys.get(kid or "")
    if key is None:
        return (f"{what}: signed with key {kid or '(none)'}, which is not a key "
                f"given with --public-key ({', '.join(sorted(keys))})")
    try:
        key.verify(base64.b64decode(signature or "", validate=True), message)
    except (InvalidSignature, ValueError):
        return f"{what}: its signature does not verify with key {kid}"
    return None


# -- the verification ------------------------------------------------------------

class Problems(list):
    """Every difference, the records' own first (a part, a signature, a
    link, a row edited or missing), then what re-settlement derives from
    them (a removed coup shifts every later coup's cards left). The first
    KEPT of each are kept, the rest only counted: a bundle of a million
    forged rows costs no more memory than one of a thousand."""

    KEPT = 1000

    def __init__(self):
        super().__init__()
        self.derived: list[str] = []
        self.dropped = 0

    def add(self, text: str) -> None:
        if len(self) < self.KEPT:
            self.append(text)
        else:
            self.dropped += 1

    def add_derived(self, text: str) -> None:
        if len(self.derived) < self.KEPT:
            self.derived.append(text)
        else:
            self.dropped += 1

    def all(self) -> list[str]:
        return [*self, *self.derived]

    def total(self) -> int:
        return len(self) + len(self.derived) + self.dropped

    def __bool__(self) -> bool:
        return bool(len(self) or self.derived)


def name_of(label: str, key: str) -> str:
    return f"{label.split('.')[1]} {key}"


def stamp_bytes(stamp: dict) -> bytes:
    """What a stamp's signature is over (casino/signing.py stamp_statement):
    its canonical JSON without "signature" ("signing_key_id" is in it)."""
    return dumps({k: v for k, v in stamp.items() if k != "signature"}
                 ).encode("utf-8")


def when(at) -> str:
    return at


def body(prev_link: str, r: dict) -> bytes:
    """casino/trail.py _body: the row's canonical content with the previous
    link in place of prev_hash."""
    items = [prev_link, r["at"], r.get("user_id"), r.get("device") or "",
             r.get("action"), r.get("object_type") or "", r.get("object_id") or "",
             r.get("reason") or "", r.get("old"), r.get("new")]
    if r.get("ledger"):
        items.append(r["ledger"])
    return dumps(items).encode("utf-8")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def dec(value) -> Decimal | None:
    if type(value) is str:  # as the bundle writes money
        return Decimal(value)
    return None if value is None else Decimal(str(value))


COUP_MONEY = ("bank_before", "covered", "garage", "commission", "bank_after")
