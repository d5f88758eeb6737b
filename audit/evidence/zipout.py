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

    def close(self) -> None:
        self.zip.close()
