"""Files written once: an anchor, a timestamp token beside it. Below both
casino/anchors.py and casino/timestamps.py, which use it."""

from __future__ import annotations

import os
from pathlib import Path


def file_create(path: Path, data: bytes) -> None:
    """Create `path` exclusively (never overwritten), read-only, flushed to
    disk with its directory entry."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    dirfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)
    finally:
        os.close(dirfd)
