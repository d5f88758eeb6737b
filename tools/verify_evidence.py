#!/usr/bin/env python3
"""Check a casino's evidence bundle without the casino: no Django, no
database, no secret. Standard library plus `cryptography`.

    python tools/verify_evidence.py BUNDLE.zip --public-key casino.pem \
        [--public-key old.pem ...] [--tsa-cert tsa.pem] [--engine DIR] [--json]

Exit 0: every check held; the period's commission per table and gaming day
is printed. Exit 1: the first differences found, each naming the row. Exit 2:
the bundle cannot be read at all (not a bundle, a part missing).

What it checks, in order:
1. the manifest's digest of every part (the file as delivered);
2. every anchor statement's Ed25519 signature, against the keys given
   (`--public-key`, PEM or the raw 32-byte key in hex or base64), and, with
   `--tsa-cert`, its RFC 3161 token: the token's message imprint is the
   SHA-256 of the statement, and its CMS SignedData signature verifies
   with the TSA certificate's key (see `_tsa_check` for exactly what);
3. the change log: within each window, every row's public link is the
   SHA-256 of its content and the row before's link, from the window's seed
   to its last row, which must be the signed anchor's row and link;
4. every ledger row: its SHA-256 (the canonical JSON of `row`) is the digest
   the latest log row naming it recorded; and every row a log row of the
   windows wrote is there, of every kind (evidence_complete.py: the kinds
   no bundle carries, and why, are listed there), at the state the latest
   of them left it. What the log names is indexed on disk as step 3
   walks it (a temporary SQLite file, `Named`), so memory stays flat
   whatever the period's size (~50 MB for a month of 40 tables);
5. every coup settled again from its cards, stakes and the house rules
   version it names, with the project's rules engine (`tables/chemmy`,
   imported from this checkout by path, or `--engine DIR`), carrying the
   bank along its banker turn: totals, outcome, choices, coverage, garage,
   commission, bank after, each stake's covered/declined/payout, findings,
   cards left, gaming day; then each turn's, shoe's and count's totals;
6. the commission report: its stamp's signature; that the stamp names the
   anchor closing the bundle, its period and its tables (a report of
   another head of the log is not this bundle's); its rows' digest; and
   every table and gaming day's coups, wins, covered and commission against
   the re-settled coups.

The bundle (a ZIP; parts are UTF-8 JSON, one object per line):
- `manifest.json`: format "chemmy-evidence/1", the period, the tables, the
  casino's time zone, `labels`, `fields` (per model, every digested field:
  {"default": v} when a row at v leaves it out, {"kept": true} otherwise),
  `windows` ([{first, last, seed_row, seed}]: log rows first..last, seed the
  link of the row before), `public_keys` (for information: trust only the
  key you were given), `parts` ({name: {sha256, bytes, lines}}).
- `ledger.jsonl`: {"label", "key", "id", "row"}; `row` is exactly the dict
  the trail digests (sorted keys, no spaces, non-ASCII kept). Order: the
  tableau versions, tables and house rules, then session by session (the
  session, its shoes and their findings and releases, its banker turns, its
  coups in dealing order each followed by its stakes and findings, its
  cagnotte counts and attestations), then the flag decisions.
- `context.jsonl`: the flags the decisions are about (not bound: a flag's
  state is its decisions').
- `outside.jsonl`: every other row the windows' log rows wrote, as
  `ledger.jsonl` gives rows ({"label", "key", "id", "row"}), or {"label",
  "key", "later": true} for a row the design updates, of no session of the
  period, written again after the windows (evidence_complete.py).
- `log.jsonl`: the change-log rows of each window, in id order.
- `anchors.jsonl`: one signed anchor per window, closing it, as the casino
  took it (casino/anchors.py: signed then, not when the bundle was built):
  the statement {row, link, hash, at, reason} (`at` in UTC,
  "YYYY-MM-DDTHH:MM:SS.ffffffZ"), `signature` (base64 Ed25519 over the
  statement's canonical JSON), `signing_key_id` (the first 16 hex digits of
  the SHA-256 of the raw public key), `tsa_token` (base64 DER RFC 3161
  TimeStampToken over the same statement: the one given when the anchor
  was taken, else the earliest given later; null when the authority had not
  answered yet).
- `report.json`: {"stamp", "rows"}: the commission per table and gaming day
  as the casino's reports read it; the stamp (the rows' SHA-256, the total,
  the closing anchor) carries `signing_key_id` and `signature`, the Ed25519
  signature over the canonical JSON of every stamp field but `signature`,
  as every report's stamp is signed (casino/signing.py).

Needs Python 3.11+ (its sqlite3 has RETURNING, SQLite 3.35+) and
`cryptography`.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import sys
import zipfile
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

FORMAT = "chemmy-evidence/1"
GENESIS = "0" * 64
PARTS = ("ledger.jsonl", "context.jsonl", "log.jsonl", "anchors.jsonl",
         "report.json", "outside.jsonl")
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


def _sibling(name: str):
    """A module of this folder, by path (the verifier is run as a file)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"verify_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


complete = _sibling("evidence_complete")  # completeness, the report's place


# -- the rules engine, by path -------------------------------------------------

def load_engine(folder: Path | None = None):
    """The project's rules engine (tables/chemmy: standard library only),
    loaded as a package of its own from this checkout, not vendored: the
    regulator runs the very code the casino runs, and can read and pin it
    (its files' digest is printed)."""
    folder = folder or Path(__file__).resolve().parent.parent / "tables" / "chemmy"
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


# -- what the log names -----------------------------------------------------------

class Named:
    """Every ledger row the log windows name, with the digest the latest of
    them recorded: an index on disk (SQLite, standard library) rather than a
    map in memory, so that a month's 3M rows take a few MB of memory, not a
    few GB. Each row of the bundle is looked up once and marked seen; what
    the log names and the bundle should hold but does not is what is left
    unseen (evidence_complete.py)."""

    SCHEMA = """
        CREATE TABLE named (label TEXT, key TEXT, digest TEXT, rid INTEGER,
                            parent INTEGER, seen INTEGER DEFAULT 0,
                            PRIMARY KEY (label, key)) WITHOUT ROWID;
    """

    def __init__(self):
        import sqlite3
        import tempfile

        self.folder = tempfile.TemporaryDirectory(prefix="verify-evidence-")
        self.db = sqlite3.connect(Path(self.folder.name) / "named.sqlite",
                                  isolation_level=None)
        for pragma in ("journal_mode = OFF", "synchronous = OFF",
                       "cache_size = -65536", "temp_store = FILE"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.executescript(self.SCHEMA)
        self.db.execute("BEGIN")
        self.pending: list[tuple] = []

    def add(self, label: str, key: str, digest, rid: int, parent) -> None:
        self.pending.append((label, key, digest, rid, parent))
        if len(self.pending) >= 20000:
            self.flush()

    def flush(self) -> None:
        # in log order: a later row naming the same key replaces the earlier
        self.db.executemany("INSERT OR REPLACE INTO named (label, key, digest, "
                            "rid, parent) VALUES (?, ?, ?, ?, ?)", self.pending)
        self.pending = []

    def take(self, rows: list[tuple[str, str]]) -> dict[tuple, tuple]:
        """(label, key) -> (digest, rid, times seen) of the latest log row
        naming each row (absent: none names it); marks them seen. One
        statement for a batch of rows, each distinct."""
        by_label: dict[str, list[str]] = {}
        for label, key in rows:
            by_label.setdefault(label, []).append(key)
        out = {}
        for label, keys in by_label.items():
            # label = ? AND key IN (...): a lookup in the primary key per key
            # (a row-value IN over VALUES would scan the whole index)
            found = self.db.execute(
                "UPDATE named SET seen = seen + 1 WHERE label = ? AND key IN "
                f"({','.join('?' * len(keys))}) RETURNING key, digest, rid, seen",
                [label, *keys]).fetchall()
            out.update({(label, key): rest for key, *rest in found})
        return out

    def size(self) -> tuple[int, int]:
        """(rows the log names, bytes of the index: on disk, but for the
        64 MB SQLite may keep of it in memory)."""
        n = self.db.execute("SELECT count(*) FROM named").fetchone()[0]
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        return n, pages * self.db.execute("PRAGMA page_size").fetchone()[0]

    def close(self) -> None:
        self.db.close()
        self.folder.cleanup()


# -- the verification ------------------------------------------------------------

class Problems(list):
    """Every difference, the records' own first (a part, a signature, a
    link, a row edited or missing), then what re-settlement derives from
    them (a removed coup shifts every later coup's cards left)."""

    def __init__(self):
        super().__init__()
        self.derived: list[str] = []

    def add(self, text: str) -> None:
        self.append(text)

    def add_derived(self, text: str) -> None:
        self.derived.append(text)

    def all(self) -> list[str]:
        return [*self, *self.derived]

    def __bool__(self) -> bool:
        return bool(len(self) or self.derived)


def name_of(label: str, key: str) -> str:
    return f"{label.split('.')[1]} {key}"


class Verifier:
    def __init__(self, bundle: Path, keys: dict, tsa_cert=None, engine=None):
        self.path, self.keys, self.tsa_cert = bundle, keys, tsa_cert
        self.engine, self.engine_digest = engine or load_engine()
        self.problems = Problems()
        self.named = Named()
        self.complete = complete.Completeness(self.named)
        self.to_bind: list[tuple[str, str, str]] = []
        self.sums: dict[tuple, dict] = {}
        self.counts = Counter()
        self.notes: list[str] = []

    # .. reading ..
    def open(self) -> None:
        try:
            self.zip = zipfile.ZipFile(self.path)
            self.manifest = json.loads(self.zip.read("manifest.json"))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise Unreadable(f"{self.path}: not an evidence bundle ({exc})") from exc
        if self.manifest.get("format") != FORMAT:
            raise Unreadable(f"{self.path}: format {self.manifest.get('format')!r}, "
                             f"this program reads {FORMAT}")
        self.fields = self.manifest["fields"]
        self.tz = ZoneInfo(self.manifest["time_zone"])
        self.from_day = date.fromisoformat(self.manifest["period"]["from"])
        self.to_day = date.fromisoformat(self.manifest["period"]["to"])
        self.tables = set(self.manifest.get("tables") or [])

    def lines(self, name: str):
        import io

        with self.zip.open(name) as f, io.BufferedReader(f, 1 << 20) as lines:
            for n, raw in enumerate(lines, 1):
                try:
                    yield loads(raw.decode("utf-8"))
                except ValueError as exc:
                    raise Unreadable(f"{name} line {n}: not JSON ({exc})") from exc

    def full(self, label: str, row: dict) -> dict:
        """A row with the fields it leaves at their default put back."""
        out = dict(row)
        for name, spec in self.fields[label].items():
            if name not in out and "default" in spec:
                out[name] = spec["default"]
        return out

    # 1. the parts
    def check_parts(self) -> None:
        parts = self.manifest.get("parts", {})
        for name in PARTS:
            if name not in parts:
                raise Unreadable(f"manifest: no part {name}")
            digest, size = hashlib.sha256(), 0
            try:
                with self.zip.open(name) as f:
                    for block in iter(lambda f=f: f.read(1 << 20), b""):
                        digest.update(block)
                        size += len(block)
            except KeyError as exc:
                raise Unreadable(f"the bundle has no part {name}") from exc
            if digest.hexdigest() != parts[name]["sha256"] or size != parts[name][
                    "bytes"]:
                self.problems.add(f"part {name}: its SHA-256 is not the manifest's "
                                  "(the file was changed after it was built)")

    # 2. anchors
    def check_anchors(self) -> list[dict]:
        anchors = list(self.lines("anchors.jsonl"))
        for a in anchors:
            what = f"anchor of row {a.get('row')}"
            problem = signature_check(self.keys, statement_bytes(a),
                                      a.get("signature"), a.get("signing_key_id"),
                                      what)
            if problem:
                self.problems.add(problem)
            if self.tsa_cert is None:
                continue
            if not a.get("tsa_token"):
                self.problems.add(f"{what}: no time-stamp token (the authority "
                                  "had not answered when the bundle was built)")
                continue
            problem = _tsa_check(a["tsa_token"], statement_bytes(a), self.tsa_cert,
                                 what)
            if problem:
                self.problems.add(problem)
        if self.tsa_cert is None:
            self.notes.append("time-stamp tokens not checked (no --tsa-cert)")
        return anchors

    # 3. the log
    def check_log(self, anchors: list[dict]) -> None:
        windows = self.manifest["windows"]
        if len(anchors) != len(windows):
            self.problems.add(f"{len(windows)} log windows but {len(anchors)} "
                              "anchors closing them")
            return
        rows = self.lines("log.jsonl")
        for window, anchor in zip(windows, anchors, strict=True):
            prev, last_id, n = window["seed"], None, 0
            expected_first = window["first"]
            for r in rows:
                n += 1
                rid = r["id"]
                if last_id is None and rid != expected_first:
                    self.problems.add(f"log window {expected_first}-{window['last']}"
                                      f": starts at row {rid}")
                if last_id is not None and rid <= last_id:
                    self.problems.add(f"log row {rid}: out of order after {last_id}")
                link = sha256_hex(body(prev, r))
                if link != r.get("link"):
                    self.problems.add(
                        f"log row {rid} ({r.get('action')}): its link does not "
                        "match its content and the row before it (the row was "
                        "changed, or a row before it removed or inserted)")
                    return
                for label, entries in (r.get("ledger") or {}).items():
                    if not complete.required(label):
                        continue
                    parent = None
                    if label == "tables.coup" and isinstance(r.get("new"), dict):
                        parent = r["new"].get("shoe")
                    for k, digest in entries.items():
                        self.complete.entry(label, k, digest)
                        if type(digest) is list:
                            digest = digest[1]
                        if label in CHILD_LABELS:
                            parent = int(k.partition("#")[0])
                        self.named.add(label, k, digest, rid, parent)
                prev, last_id = link, rid
                if rid == window["last"]:
                    break
            if last_id != window["last"] or last_id != anchor.get("row"):
                self.problems.add(
                    f"log window {expected_first}-{window['last']}: ends at row "
                    f"{last_id}, its anchor names row {anchor.get('row')} (rows "
                    "were removed from the end)")
            elif prev != anchor.get("link"):
                self.problems.add(
                    f"log row {last_id}: its link is not the signed anchor's "
                    "(the log was rewritten up to the anchor)")
            self.counts["log rows"] += n
        self.named.flush()

    # 4 and 5. the ledger, session by session
    def check_ledger(self) -> None:
        self.globals: dict[str, dict] = {}
        session = None
        for item in self.lines("ledger.jsonl"):
            label, key, row = item["label"], item["key"], item["row"]
            self.complete.ledger_line(label, key)
            self.bound(label, key, row, item.get("id"))
            full = self.full(label, row)
            full["_id"], full["_key"] = item.get("id"), key
            if label in ("tables.tableauversion", "tables.table",
                         "tables.houserules"):
                self.globals.setdefault(label, {})[key] = full
            elif label == "tables.tablesession":
                if session is not None:
                    session.finish()
                session = SessionWalk(self, full)
            elif label in ("tables.shoe", "tables.bankerturn", "tables.coup",
                           "tables.stake", "tables.finding",
                           "audit.cagnottecount", "tables.shoefinding",
                           "tables.shoerelease", "audit.cagnotteattestation"):
                if session is None:
                    self.problems.add(f"{name_of(label, key)}: outside any session")
                    continue
                session.take(label, full)
            self.counts[label] += 1
        if session is not None:
            session.finish()
        self.complete.outside(self, self.lines(complete.PART))
        self.check_bound()
        self.complete.leftovers(self)

    BATCH = 500

    def bound(self, label: str, key: str, row: dict, pk) -> None:
        """Queue the row's check against the log (`check_bound`, by batch)."""
        self.to_bind.append((label, key, sha256_hex(dumps(row).encode("utf-8"))))
        if len(self.to_bind) >= self.BATCH:
            self.check_bound()

    def check_bound(self) -> None:
        batch, self.to_bind = self.to_bind, []
        distinct = list(dict.fromkeys((label, key) for label, key, _ in batch))
        found = self.named.take(distinct) if distinct else {}
        seen_here: set = set()
        for label, key, digest in batch:
            what = name_of(label, key)
            mine = found.get((label, key))
            if (label, key) in seen_here or (mine and mine[2] > 1):
                self.problems.add(f"{what}: in the bundle more than once")
            elif mine is None:
                self.problems.add(f"{what}: no log row in the bundle wrote it "
                                  "(inserted behind the application's back)")
            elif mine[0] is None:
                self.problems.add(f"{what}: log row {mine[1]} deleted it, yet it "
                                  "is in the bundle")
            elif digest != mine[0]:
                self.problems.add(f"{what}: differs from what log row {mine[1]} "
                                  "recorded (the row was edited)")
            seen_here.add((label, key))

    # 6. the report
    def check_report(self) -> dict:
        data = json.loads(self.zip.read("report.json"))
        stamp, rows = data.get("stamp", {}), data.get("rows", [])
        complete.report_belongs(self, stamp, self.anchors)
        problem = signature_check(self.keys, stamp_bytes(stamp),
                                  stamp.get("signature"), stamp.get("signing_key_id"),
                                  "the report's stamp")
        if problem:
            self.problems.add(problem)
        if sha256_hex(dumps(rows).encode("utf-8")) != stamp.get("rows_sha256"):
            self.problems.add("the report's rows: their SHA-256 is not the one its "
                              "signed stamp states (a row was changed)")
        stated = {(r["table_id"], r["gaming_day"]): r for r in rows}
        for cell in sorted(set(stated) | set(self.sums), key=str):
            got = self.sums.get(cell)
            row = stated.get(cell)
            table, day = cell
            where = f"table {table} ({row['table'] if row else '?'}), gaming day {day}"
            if row is None:
                self.problems.add(f"report: {where} is missing; the coups re-settle "
                                  f"to commission {got['commission']}")
                continue
            got = got or {"coups": 0, "banker_wins": 0, "punter_wins": 0,
                          "ties": 0, "covered": ZERO, "commission": ZERO}
            for name in ("coups", "banker_wins", "punter_wins", "ties"):
                if int(row[name]) != got[name]:
                    self.problems.add(f"report: {where}: {name} {row[name]}, the "
                                      f"bundle's coups give {got[name]}")
            for name in ("covered", "commission"):
                if Decimal(row[name]) != got[name]:
                    self.problems.add(f"report: {where}: {name} {row[name]}, "
                                      f"re-settled {got[name]:.2f}")
        total = sum((Decimal(r["commission"]) for r in rows), ZERO)
        if f"{total:.2f}" != (stamp.get("total") or {}).get("commission"):
            self.problems.add(f"report: its rows add up to {total:.2f}, its stamp "
                              f"states {(stamp.get('total') or {}).get('commission')}")
        return data

    def in_period(self, table_id, day: str) -> bool:
        d = date.fromisoformat(day)
        return (self.from_day <= d <= self.to_day
                and (not self.tables or table_id in self.tables))

    def run(self) -> int:
        self.open()
        self.check_parts()
        anchors = self.anchors = self.check_anchors()
        self.check_log(anchors)
        try:
            self.check_ledger()
            n, size = self.named.size()
            self.notes.append(
                f"the log names {n} ledger rows: indexed in a temporary file of "
                f"{size / 1e6:.1f} MB (at most 64 MB of it in memory)")
        finally:
            self.named.close()
        self.report = self.check_report()
        return 1 if self.problems else 0


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
    return None if value is None else Decimal(str(value))


COUP_MONEY = ("bank_before", "covered", "garage", "commission", "bank_after")


class SessionWalk:
    """One session, coup by coup, as audit/ledger_check/walk.py walks it."""

    def __init__(self, v: Verifier, session: dict):
        self.v, self.session = v, session
        self.shoes: dict[int, dict] = {}
        self.turns: dict[int, dict] = {}
        self.state: dict[int, dict] = {}
        self.shoe_runs: dict[int, dict] = {}
        self.counts: list[dict] = []
        self.group: list[dict] = []  # revisions of one (shoe, seq)
        self.current: dict | None = None
        self.stored = self.resettled = ZERO
        self.name = f"session {session['_id']}"

    def take(self, label: str, row: dict) -> None:
        pk = row["_id"]
        if label == "tables.shoe":
            self.shoes[pk] = row
            self.shoe_runs[pk] = {"dealt": 0, "seen": Counter(), "seqs": []}
        elif label == "tables.bankerturn":
            self.turns[pk] = row
            self.state[pk] = {"bank": dec(row["opening_bank"]), "coups": 0,
                              "garage": ZERO, "commission": ZERO, "last": None,
                              "suivi": None, "tied": None}
        elif label == "tables.coup":
            self.flush_if_new(row)
            row["_stakes"], row["_findings"] = [], []
            self.group.append(row)
        elif label == "tables.stake":
            self.group[-1]["_stakes"].append(row) if self.group else None
        elif label == "tables.finding":
            self.group[-1]["_findings"].append(row) if self.group else None
        elif label == "audit.cagnottecount":
            self.counts.append(row)

    def flush_if_new(self, row: dict) -> None:
        if self.group and (self.group[-1]["shoe_id"], self.group[-1]["seq"]) != (
                row["shoe_id"], row["seq"]):
            self.flush()

    def flush(self) -> None:
        if self.group:
            revisions = [c["revision"] for c in self.group]
            if revisions != list(range(1, len(revisions) + 1)):
                self.v.problems.add_derived(
                    f"coup {self.group[-1]['_key']} (shoe {self.group[-1]['shoe_id']}"
                    f", seq {self.group[-1]['seq']}): revisions {revisions}, "
                    "expected 1 to n")
            if len(self.group) > 1:
                self.v.complete.settled(self.v, self.group)
            self.coup(self.group[-1])
        self.group = []

    def coup(self, c: dict) -> None:
        v, ch = self.v, self.v.engine
        shoe = self.shoes.get(c["shoe_id"])
        subject = f"coup {c['_key']} (shoe {c['shoe_id']}, seq {c['seq']}, rev " \
                  f"{c['revision']})"

        def add(what: str) -> None:
            v.problems.add_derived(f"{subject}: {what}")

        rules = v.globals.get("tables.houserules", {}).get(str(c["rules_id"]))
        turn = self.turns.get(c["turn_id"])
        if shoe is None or rules is None or turn is None:
            add("its " + ("shoe" if shoe is None else "house rules" if rules is None
                          else "banker turn") + " is not in the bundle")
            return
        table = v.globals.get("tables.table", {}).get(str(rules["table_id"]))
        tableau_row = v.globals.get("tables.tableauversion", {}).get(
            str(rules["tableau_id"]))
        if table is None or tableau_row is None:
            add("its table or tableau version is not in the bundle")
            return
        if rules["table_id"] != self.session["table_id"]:
            add(f"house rules of table {rules['table_id']}, session of table "
                f"{self.session['table_id']}")
        tableau = tableau_row.get("_engine")
        if tableau is None:  # parsed once per version
            tableau = tableau_row["_engine"] = ch.Tableau.from_dict(
                {"version": tableau_row["version"], "rows": tableau_row["rows"]})
        if c["tableau_version"] != tableau.version:
            add(f"tableau_version {c['tableau_version']}, its house rules' is "
                f"{tableau.version}")
        local = parse_time(c["created_at"]).astimezone(v.tz)
        day = (local - timedelta(hours=rules["gaming_day_cutoff"])).date()
        if c["gaming_day"] != day.isoformat():
            add(f"gaming_day {c['gaming_day']}, recorded at {c['created_at']} it "
                f"is {day}")
        if c["banker_seat"] != turn["seat"]:
            add(f"banker_seat {c['banker_seat']}, its turn's seat is {turn['seat']}")
        state, run = self.state[c["turn_id"]], self.shoe_runs[c["shoe_id"]]
        carried = state["bank"]
        bank = carried if carried is not None and carried > 0 else dec(
            c["bank_before"])
        try:
            values, stakes, codes, suivi, tied = self.resettle(
                c, rules, tableau, table["seats"], bank, shoe, run)
        except (ch.CoupError, ValueError, TypeError, KeyError) as exc:
            add(f"refused by the rules ({exc})")
            values = None
        if values is not None:
            for name, expected in values.items():
                stored = c.get(name)
                if name in COUP_MONEY or name == "declared_bank":
                    stored = dec(stored)
                if stored != expected:
                    add(f"{name} stored {stored}, re-settled {expected}")
            rows = sorted(c["_stakes"], key=lambda s: s["position"])
            if [s["position"] for s in rows] != list(range(len(stakes))):
                add(f"stakes at positions {[s['position'] for s in rows]}, the "
                    f"coup has {len(stakes)}")
            for s, (covered, declined, payout) in zip(rows, stakes, strict=False):
                who = f"seat {s['seat']}" if s.get("seat") is not None else s.get(
                    "standing")
                for name, expected in (("covered", covered), ("declined", declined),
                                       ("payout", payout)):
                    if dec(s[name]) != expected:
                        add(f"stake {s['position']} ({who}) {name} stored "
                            f"{s[name]}, re-settled {expected}")
            stored_codes = sorted((f["code"], f.get("side") or "")
                                  for f in c["_findings"])
            if stored_codes != codes:
                add(f"findings stored {stored_codes or 'none'}, re-derived "
                    f"{codes or 'none'}")
        else:
            values = {n: dec(c[n]) for n in COUP_MONEY}
            values["outcome"] = c["outcome"]
            suivi = tied = None
        cards = list(c["punter_cards"]) + list(c["banker_cards"])
        run["dealt"] += len(cards)
        run["seen"].update(cards)
        run["seqs"].append(c["seq"])
        state.update(bank=values["bank_after"], last=values["outcome"],
                     suivi=suivi, tied=tied)
        state["coups"] += 1
        state["garage"] += values["garage"]
        state["commission"] += values["commission"]
        self.stored += dec(c["commission"])
        self.resettled += values["commission"]
        v.counts["coups re-settled"] += 1
        if v.in_period(rules["table_id"], c["gaming_day"]):
            cell = v.sums.setdefault((rules["table_id"], c["gaming_day"]), {
                "coups": 0, "banker_wins": 0, "punter_wins": 0, "ties": 0,
                "covered": ZERO, "commission": ZERO})
            cell["coups"] += 1
            outcome = {"banker": "banker_wins", "punter": "punter_wins",
                       "tie": "ties"}.get(values["outcome"])
            if outcome:
                cell[outcome] += 1
            cell["covered"] += values["covered"]
            cell["commission"] += values["commission"]

    def resettle(self, c, rules, tableau, seats, bank, shoe, run):
        ch = self.v.engine
        verdict = ch.evaluate(c["punter_cards"], c["banker_cards"], tableau=tableau)
        stakes = sorted(c["_stakes"], key=lambda s: s["position"])
        inputs = [ch.StakeIn(amount=dec(s["amount"]), seat=s.get("seat"),
                             standing=s.get("standing") or None,
                             announcement=ch.Announcement(s["announcement"]))
                  for s in stakes]
        called = next((s.seat for s in inputs
                       if s.announcement is ch.Announcement.SUIVI), None)
        coverage = ch.cover_stakes(
            inputs, bank=bank, banker_seat=c["banker_seat"], seats=seats,
            minimum_banco=dec(rules["minimum_banco"]), suivi_seat=called,
            cover=rules["cover_rule"], maximum_bank=dec(rules["maximum_bank"]))
        settlement = ch.settle(
            verdict.outcome, coverage,
            commission_rate=dec(rules["commission_rate"]),
            commission_unit=dec(rules["commission_unit"]),
            rounding=ch.rounding_mode(rules["commission_rounding"]))
        cards = list(verdict.punter) + list(verdict.banker)
        prescriptions = ch.Prescriptions(
            punter_five=rules["punter_five"],
            banker=rules.get("banker_prescriptions") or {})
        findings = [*verdict.findings,
                    *ch.house_findings(verdict, prescriptions)] + ch.shoe_findings(
            decks=shoe["decks"], burned=shoe["burned"], dealt_before=run["dealt"],
            seen={k: run["seen"][k] for k in set(cards) if k in run["seen"]},
            new_cards=cards)
        if c.get("declared_bank") is not None:
            mismatch = ch.bank_mismatch_finding(declared=dec(c["declared_bank"]),
                                                carried=bank)
            if mismatch is not None:
                findings.append(mismatch)
        lost = settlement.turn_ends
        values = {
            "punter_cards": list(verdict.punter), "banker_cards": list(verdict.banker),
            "punter_total": verdict.punter_total,
            "banker_total": verdict.banker_total,
            "outcome": verdict.outcome.value, "natural": verdict.natural or "",
            "punter_choice": verdict.punter_choice or "",
            "banker_choice": verdict.banker_choice or "",
            "punter_seat": coverage.punter_seat,
            "punter_standing": coverage.punter_standing or "",
            "bank_before": settlement.bank_before, "covered": settlement.covered,
            "garage": settlement.garage, "commission": settlement.commission,
            "bank_after": settlement.bank_after,
            "cards_left_before": 52 * shoe["decks"] - shoe["burned"] - run["dealt"],
            "next_banker_seat": (c["banker_seat"] % seats + 1) if lost else None,
            "finding_count": len(findings),
        }
        holder = (coverage.stakes[coverage.punter_index]
                  if coverage.punter_index is not None else None)
        suivi = None
        if (settlement.outcome is ch.Outcome.BANKER and holder is not None
                and holder.stake.announcement in (ch.Announcement.BANCO_SOLO,
                                                  ch.Announcement.SUIVI)):
            suivi = holder.stake.seat
        tied = None
        if rules["tie_rule"] == "stay" and settlement.outcome is ch.Outcome.TIE:
            tied = [[s.stake.seat, s.stake.standing or "", f"{s.covered:.2f}"]
                    for s in coverage.stakes if s.covered > 0] or None
        stakes_out = [(s.covered, s.declined, p)
                      for s, p in zip(coverage.stakes, settlement.payouts,
                                      strict=True)]
        codes = sorted((f.code, f.side or "") for f in findings)
        return values, stakes_out, codes, suivi, tied

    def finish(self) -> None:
        self.flush()
        v = self.v
        for pk, turn in sorted(self.turns.items()):
            st = self.state[pk]
            subject = f"banker turn {pk} ({self.name}, number {turn['number']})"
            bank = st["bank"] if st["coups"] else dec(turn["opening_bank"])
            expected = {"bank": bank, "coups": st["coups"],
                        "garage_total": st["garage"],
                        "commission_total": st["commission"]}
            if turn.get("closed_at") is not None:
                lost = st["last"] == "punter"
                expected["closing_amount"] = st["garage"] if lost else (
                    bank + st["garage"])
            for name, value in expected.items():
                stored = turn.get(name)
                stored = stored if name == "coups" else dec(stored)
                if stored != value:
                    v.problems.add_derived(f"{subject}: {name} stored {stored}, "
                                   f"re-computed {value}")
        for pk, shoe in sorted(self.shoes.items()):
            run = self.shoe_runs[pk]
            subject = f"shoe {pk} ({self.name}, number {shoe['number']})"
            top = max(run["seqs"], default=0)
            if run["seqs"] != list(range(1, top + 1)):
                missing = sorted(set(range(1, top + 1)) - set(run["seqs"]))
                v.problems.add_derived(f"{subject}: coups {missing} missing from the "
                               "bundle (seqs not contiguous)")
            if shoe["next_seq"] != top + 1:
                v.problems.add_derived(f"{subject}: next_seq {shoe['next_seq']}, the "
                               f"bundle's coups end at seq {top}")
            if shoe["dealt"] != run["dealt"]:
                v.problems.add_derived(f"{subject}: dealt {shoe['dealt']}, re-computed "
                               f"{run['dealt']}")
            if dict(shoe["card_counts"] or {}) != dict(run["seen"]):
                v.problems.add_derived(
                    f"{subject}: card_counts differ from its coups' cards")
        if self.stored != self.resettled:
            v.problems.add_derived(f"{self.name}: cagnotte (commission over its coups) "
                           f"stored {self.stored}, re-settled {self.resettled}")
        for count in self.counts:
            if dec(count["variance"]) != dec(count["counted"]) - dec(
                    count["computed"]):
                v.problems.add_derived(f"cagnotte count {count['_id']} ({self.name}): "
                               "variance is not counted - computed")


# -- the program ---------------------------------------------------------------

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bundle", type=Path)
    p.add_argument("--public-key", type=Path, action="append", required=True,
                   help="the casino's Ed25519 public key (PEM, or 32 bytes in hex "
                   "or base64); repeat for keys retired by a rotation")
    p.add_argument("--tsa-cert", type=Path,
                   help="the time-stamping authority's certificate (PEM or DER)")
    p.add_argument("--engine", type=Path, help="a reviewed copy of tables/chemmy")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        keys = dict(load_public_key(k) for k in args.public_key)
        cert = None
        if args.tsa_cert:
            from cryptography import x509

            data = args.tsa_cert.read_bytes()
            cert = (x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data
                    else x509.load_der_x509_certificate(data))
        engine = load_engine(args.engine) if args.engine else None
        v = Verifier(args.bundle, keys, cert, engine)
        code = v.run()
    except Unreadable as exc:
        print(f"UNREADABLE: {exc}", file=sys.stderr)
        return 2
    commission = [
        {"table_id": t, "gaming_day": d, "coups": s["coups"],
         "commission": f"{s['commission']:.2f}"}
        for (t, d), s in sorted(v.sums.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    ]
    names = {r["table_id"]: r["table"] for r in v.report.get("rows", [])}
    if args.json:
        print(dumps({"ok": code == 0, "problems": v.problems.all()[:MAX_PROBLEMS],
                     "counts": dict(v.counts), "commission": commission,
                     "engine_sha256": v.engine_digest, "notes": v.notes}))
        return code
    print(f"Bundle {args.bundle.name}: gaming days {v.from_day} to {v.to_day}")
    print(f"Rules engine: {v.engine_digest[:16]} (SHA-256 of tables/chemmy/*.py)")
    for name, n in sorted(v.counts.items()):
        print(f"  {name}: {n}")
    print("Commission per table and gaming day (re-settled from the cards):")
    total = ZERO
    for c in commission:
        total += Decimal(c["commission"])
        print(f"  {names.get(c['table_id'], c['table_id'])}  {c['gaming_day']}  "
              f"{c['coups']:>7} coups  {c['commission']:>14}")
    print(f"  total {total:.2f}")
    for note in v.notes:
        print(f"Note: {note}")
    if code:
        problems = v.problems.all()
        print(f"FAILED: {len(problems)} problem(s)", file=sys.stderr)
        for problem in problems[:MAX_PROBLEMS]:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print("OK: signatures, links, ledger rows, re-settlement and the report agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
