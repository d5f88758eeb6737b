"""What the log names: an index on disk."""

from __future__ import annotations

from pathlib import Path

# -- what the log names -----------------------------------------------------------

class Named:
    """Every ledger row the log windows name, with the digest the latest of
    them recorded: an index on disk (SQLite, standard library) rather than a
    map in memory, so that a month's 3M rows take a few MB of memory, not a
    few GB. Each row of the bundle is looked up once and marked seen; what
    the log names and the bundle should hold but does not is what is left
    unseen (complete.py)."""

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
        self.pending.clear()  # the same list: the log walk holds it

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
