"""Reading a bundle with limits, so that no file, however made, costs more
than a stated amount of memory (docs/evidence.md):

- the ZIP's central directory is at most 64 KiB (a bundle has eight
  members, seven before checkpoints.jsonl), checked from its end record
  before `zipfile` reads it;
- its members are exactly the format's, each once: any other name (`../x`,
  an absolute path, a second `ledger.jsonl`) is refused, never extracted;
- stored or deflated, not encrypted; a member is read as a stream, never
  whole, and stops at its stated size (a "zip bomb" costs time, not
  memory); `manifest.json` at most 16 MiB, `report.json` 32 MiB, each JSON
  Lines part 64 GiB, and every line at most 8 MiB.
Whatever goes wrong is `Unreadable` (exit 2), naming the member and line.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

from .common import OPTIONAL_PARTS, PARTS, Unreadable, loads

MANIFEST = "manifest.json"
MAX_DIRECTORY = 64 << 10
MAX_LINE = 8 << 20
MAX_MEMBER = {MANIFEST: 16 << 20, "report.json": 32 << 20}
MAX_PART = 64 << 30
BLOCK = 1 << 20


def _directory_size(path: Path) -> int:
    """The central directory's size, as `zipfile` will read it: from the
    end record (the ZIP64 one when a locator precedes it)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - 22 - 0xFFFF))
        tail = f.read()
    at = len(tail) - 22
    if tail[at:at + 4] != b"PK\x05\x06" or tail[-2:] != b"\0\0":
        at = tail.rfind(b"PK\x05\x06")  # after a comment
    if at < 0 or len(tail) < at + 22:
        raise Unreadable(f"{path}: not a ZIP file (no end record)")
    cd_size = struct.unpack_from("<I", tail, at + 12)[0]
    locator = at - 20
    if locator >= 0 and tail[locator:locator + 4] == b"PK\x06\x07":
        offset = struct.unpack_from("<Q", tail, locator + 8)[0]
        with path.open("rb") as f:
            f.seek(offset)
            record = f.read(56)
        if len(record) == 56 and record[:4] == b"PK\x06\x06":
            cd_size = struct.unpack_from("<Q", record, 40)[0]
    return cd_size


def open_bundle(path: Path) -> zipfile.ZipFile:
    try:
        if _directory_size(path) > MAX_DIRECTORY:
            raise Unreadable(f"{path}: its ZIP directory is larger than "
                             f"{MAX_DIRECTORY >> 10} KiB (a bundle has "
                             f"{len(PARTS) + len(OPTIONAL_PARTS) + 1} members at most)")
        bundle = zipfile.ZipFile(path)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise Unreadable(f"{path}: not an evidence bundle ({exc})") from exc
    names = [info.filename for info in bundle.infolist()]
    for name in names:
        if name not in (MANIFEST, *PARTS, *OPTIONAL_PARTS):
            raise Unreadable(f"{path}: member {name[:200]!r} is not a part of the "
                             "format (nothing is extracted)")
        if names.count(name) > 1:
            raise Unreadable(f"{path}: member {name} is there more than once")
    for info in bundle.infolist():
        if info.flag_bits & 1 or info.compress_type not in (
                zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise Unreadable(f"{info.filename}: encrypted, or compressed other "
                             "than by deflate")
        cap = MAX_MEMBER.get(info.filename, MAX_PART)
        if info.file_size > cap:
            raise Unreadable(f"{info.filename}: {info.file_size} bytes, more than "
                             f"this verifier reads ({cap} bytes)")
    return bundle


def blocks(bundle: zipfile.ZipFile, name: str):
    """The member's bytes, a block at a time, counted against its cap."""
    cap, seen = MAX_MEMBER.get(name, MAX_PART), 0
    try:
        with bundle.open(name) as f:
            while block := f.read(BLOCK):
                seen += len(block)
                if seen > cap:
                    raise Unreadable(f"{name}: more than {cap} bytes")
                yield block
    except KeyError as exc:
        raise Unreadable(f"the bundle has no part {name}") from exc
    except (OSError, EOFError, zipfile.BadZipFile, ValueError, zlib.error) as exc:
        # a CRC that does not match, a deflate stream cut or corrupted
        raise Unreadable(f"{name}: cannot be decompressed ({exc})") from exc


def json_member(bundle: zipfile.ZipFile, name: str):
    """A JSON member (the manifest, the report), read whole within its cap."""
    data = b"".join(blocks(bundle, name))
    try:
        return loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{name}: not JSON ({str(exc)[:200]})") from exc


class Tally:
    """A part's SHA-256 and size, taken as it is read for its checks (one
    pass over it, not two)."""

    def __init__(self):
        import hashlib

        self.sha, self.bytes = hashlib.sha256(), 0

    def update(self, block: bytes) -> None:
        self.sha.update(block)
        self.bytes += len(block)


def raw_lines(bundle: zipfile.ZipFile, name: str, tally: Tally | None = None):
    """(line number, bytes) of a JSON Lines member; a line longer than
    MAX_LINE is refused as soon as it is (its bytes are never all held)."""
    rest, n = b"", 0
    for block in blocks(bundle, name):
        if tally is not None:
            tally.update(block)
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        for raw in lines:
            n += 1
            if len(raw) > MAX_LINE:
                raise _too_long(name, n)
            yield n, raw
        if len(rest) > MAX_LINE:
            raise _too_long(name, n + 1)
    if rest:
        yield n + 1, rest


def parse(raw: bytes, where: str):
    """A line's JSON (Unreadable, naming where, when it is not JSON)."""
    try:
        return loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{where}: not JSON ({str(exc)[:200]})") from exc


def _too_long(name: str, n: int) -> Unreadable:
    return Unreadable(f"{name} line {n}: longer than {MAX_LINE >> 20} MiB")


def _need(value, kind, what: str):
    """value, when it is of `kind` (a bool is not an int here)."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = {dict: "an object", list: "a list", str: "a string", int: "an integer"}
        raise Unreadable(f"manifest: {what} is missing or not {names[kind]}")
    return value


def manifest_check(m) -> None:
    """Every field of the manifest the verifier reads, of the type it reads
    it as (a bundle that says otherwise is unreadable, exit 2)."""
    from datetime import date
    from zoneinfo import ZoneInfo

    _need(m, dict, "the manifest")
    for label, spec in _need(m.get("fields"), dict, "fields").items():
        for name, field in _need(spec, dict, f"fields.{label}").items():
            _need(field, dict, f"fields.{label}.{name}")
    period = _need(m.get("period"), dict, "period")
    for end in ("from", "to"):
        try:
            date.fromisoformat(_need(period.get(end), str, f"period.{end}"))
        except ValueError as exc:
            raise Unreadable(f"manifest: period.{end} is not a date") from exc
    try:
        ZoneInfo(_need(m.get("time_zone"), str, "time_zone"))
    except (ValueError, OSError, LookupError) as exc:  # unknown, or a path
        raise Unreadable(f"manifest: time_zone {m['time_zone'][:100]!r} is not a "
                         "time zone") from exc
    for n, table in enumerate(_need(m.get("tables") or [], list, "tables")):
        _need(table, int, f"tables[{n}]")
    for n, window in enumerate(_need(m.get("windows"), list, "windows")):
        _need(window, dict, f"windows[{n}]")
        for key, kind in (("first", int), ("last", int), ("seed", str)):
            _need(window.get(key), kind, f"windows[{n}].{key}")
    for n, label in enumerate(_need(m.get("labels"), list, "labels")):
        _need(label, str, f"labels[{n}]")
    for n, key in enumerate(_need(m.get("witness_keys", []), list,
                                  "witness_keys")):
        _need(key, str, f"witness_keys[{n}]")
    parts = _need(m.get("parts"), dict, "parts")
    for name in (*PARTS, *(p for p in OPTIONAL_PARTS if p in parts)):
        part = _need(parts.get(name), dict, f"parts.{name}")
        _need(part.get("sha256"), str, f"parts.{name}.sha256")
        _need(part.get("bytes"), int, f"parts.{name}.bytes")
