"""A deterministic ZIP: the same parts give the same bytes.

Every entry has a fixed time (1980-01-01, ZIP's first), fixed permissions
and the same compression level (LEVEL), and the parts go in a fixed order, so two
builds of one period over the same records are byte-identical (with the
same zlib). Each part's SHA-256 is taken while it is written."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import IO

EPOCH = (1980, 1, 1, 0, 0, 0)
# deflate level 3: at a month's 2.5 GB of JSON, twice as fast as level 6 for
# a file 12 % larger (bench/bench_evidence.py)
LEVEL = 3


BLOCK = 1 << 20  # lines are gathered into blocks: one compress call per MB


class Part:
    """One entry being written: lines in, digest and size kept."""

    def __init__(self, stream: IO[bytes]):
        self.stream, self.sha, self.bytes, self.lines = stream, hashlib.sha256(), 0, 0
        self.pending: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> None:
        self.pending.append(data)
        self.size += len(data)
        if self.size >= BLOCK:
            self.flush()

    def flush(self) -> None:
        data = b"".join(self.pending)
        self.pending, self.size = [], 0
        self.sha.update(data)
        self.bytes += len(data)
        self.lines += data.count(b"\n")
        self.stream.write(data)

    def summary(self) -> dict:
        return {"sha256": self.sha.hexdigest(), "bytes": self.bytes,
                "lines": self.lines}


class Bundle:
    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED,
                                   compresslevel=LEVEL, allowZip64=True)
        self.parts: dict[str, dict] = {}

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(name, date_time=EPOCH)
        info.compress_type = zipfile.ZIP_DEFLATED
        # an entry opened from a ZipInfo takes its level from it, not from the
        # ZipFile (the attribute is named so from Python 3.13)
        setattr(info, "compress_level" if hasattr(info, "compress_level")
                else "_compresslevel", LEVEL)
        info.create_system = 3
        info.external_attr = 0o644 << 16
        return info

    def part(self, name: str):
        """A context manager: `with bundle.part(name) as p: p.write(...)`."""
        bundle = self

        class _Ctx:
            def __enter__(self):
                self.raw = bundle.zip.open(bundle._info(name), "w", force_zip64=True)
                self.part = Part(self.raw)
                return self.part

            def __exit__(self, *exc):
                self.part.flush()
                self.raw.close()
                bundle.parts[name] = self.part.summary()
                return False

        return _Ctx()

    def adopt(self, other: Path, parts: dict[str, dict]) -> None:
        """Members of another ZIP written by this class (another process's:
        build.py `_Beside`), added as they are: their compressed bytes
        copied, not compressed again. The entry is the one `part` writes for
        the same lines (the same local header, data and directory record),
        so a bundle is the same bytes whichever process wrote a part.
        zipfile has no call for this: the writer's own steps are taken
        (as ZipFile._open_to_write and _ZipWriteFile.close do)."""
        import shutil

        zf = self.zip
        with zipfile.ZipFile(other) as source, other.open("rb") as raw:
            for name, summary in parts.items():
                theirs = source.getinfo(name)
                raw.seek(theirs.header_offset)
                header = raw.read(30)
                skip = int.from_bytes(header[26:28], "little") + int.from_bytes(
                    header[28:30], "little")
                raw.seek(theirs.header_offset + 30 + skip)
                info = self._info(name)
                info.flag_bits = theirs.flag_bits
                info.CRC, info.compress_size, info.file_size = (
                    theirs.CRC, theirs.compress_size, theirs.file_size)
                info.extract_version = theirs.extract_version
                info.create_version = theirs.create_version
                zf.fp.seek(zf.start_dir)
                info.header_offset = zf.fp.tell()
                zf.fp.write(info.FileHeader(True))  # as force_zip64 writes it
                shutil.copyfileobj(_Slice(raw, theirs.compress_size), zf.fp,
                                   BLOCK)
                zf.start_dir = zf.fp.tell()
                zf.filelist.append(info)
                zf.NameToInfo[name] = info
                zf._didModify = True
                self.parts[name] = summary

    def close(self) -> None:
        self.zip.close()


class _Slice:
    """`size` bytes of a file, from where it stands."""

    def __init__(self, f, size: int):
        self.f, self.left = f, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data
