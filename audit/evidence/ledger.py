"""ledger.jsonl, streamed: one query per kind of row for the whole period,
each ordered by session, read in step (a merge on the session id), so a
month of 40 tables is ~15 queries, not 15 per session, and no more than one
session's rows are held at a time.

Order of the part (the verifier walks it so, one session at a time): the
tableau versions, tables and house rules; then session by session: the
session, its shoes, the shoes' findings and releases, its banker turns, its
coups in dealing order (shoe number, seq, revision) each followed by its
stakes and findings, its cagnotte counts and their attestations; the flag
decisions last.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator

from .rows import LABELS, keyed_rows

GLOBAL = ("tables.tableauversion", "tables.table", "tables.houserules")
# label -> its session, then the order within it (children: by parent, then
# pk, which is how their keys number them)
BY_SESSION = {
    "tables.tablesession": ("pk",),
    "tables.shoe": ("session_id", "pk"),
    "tables.shoefinding": ("shoe__session_id", "pk"),
    "tables.shoerelease": ("shoe__session_id", "pk"),
    "tables.bankerturn": ("session_id", "pk"),
    "tables.coup": ("shoe__session_id", "shoe__number", "seq", "revision", "pk"),
    "tables.stake": ("coup__shoe__session_id", "coup_id", "pk"),
    "tables.finding": ("coup__shoe__session_id", "coup_id", "pk"),
    "audit.cagnottecount": ("session_id", "pk"),
    "audit.cagnotteattestation": ("count__session_id", "pk"),
}
BEFORE_COUPS = ("tables.shoe", "tables.shoefinding", "tables.shoerelease",
                "tables.bankerturn")
AFTER_COUPS = ("audit.cagnottecount", "audit.cagnotteattestation")
CHILDREN = ("tables.stake", "tables.finding")


class Keys:
    """The pks of one kind of row in the bundle, compact (8 bytes each,
    sorted once): what the log scan asks "is this row in the bundle?"."""

    def __init__(self):
        self.pks = array("q")

    def add(self, pk: int) -> None:
        self.pks.append(pk)

    def freeze(self) -> Keys:
        self.pks = array("q", sorted(self.pks))
        return self

    def __contains__(self, pk: int) -> bool:
        i = bisect_left(self.pks, pk)
        return i < len(self.pks) and self.pks[i] == pk

    def __len__(self) -> int:
        return len(self.pks)

    def __iter__(self):
        return iter(self.pks)


class _Stream:
    """One label's rows, ordered by session: `take(sid)` gives that
    session's (key, pk, content), in order."""

    def __init__(self, rows: Iterator):
        self.rows, self.head = rows, next(rows, None)

    def take(self, sid: int) -> list:
        out = []
        while self.head is not None and self.head[0] <= sid:
            if self.head[0] == sid:
                out.append(self.head[1:])
            self.head = next(self.rows, None)
        return out


def _line(label: str, key: str, pk: int, row_json: str) -> bytes:
    # the canonical JSON of {"id", "key", "label", "row"} (keys sorted), put
    # together here: label and key are plain ASCII, the row encoded once
    return (f'{{"id":{pk},"key":"{key}","label":"{label}","row":{row_json}}}\n'
            ).encode()


def write_ledger(part, querysets: dict, sessions: list[int], step) -> dict:
    """Write the part; returns the pks written per (non-child) label, for
    the log scan (build._writers). `step(n)` counts rows for progress."""
    members = {label: Keys() for label in LABELS if label not in CHILDREN}

    def emit(label, rows) -> None:
        keys = members.get(label)
        for key, pk, row_json in rows:
            if keys is not None:
                keys.add(pk)
            part.write(_line(label, key, pk, row_json))
        step(len(rows))

    for label in GLOBAL:
        emit(label, list(keyed_rows(label, querysets[label])))
    streams = {
        label: _Stream(keyed_rows(label, querysets[label], order=order,
                                  session=order[0]))
        for label, order in BY_SESSION.items()
    }
    for sid in sessions:
        emit("tables.tablesession", streams["tables.tablesession"].take(sid))
        for label in BEFORE_COUPS:
            emit(label, streams[label].take(sid))
        children = {label: _by_parent(streams[label].take(sid))
                    for label in CHILDREN}
        for coup in streams["tables.coup"].take(sid):
            emit("tables.coup", [coup])
            for label in CHILDREN:
                emit(label, children[label].get(coup[1], ()))
        for label in AFTER_COUPS:
            emit(label, streams[label].take(sid))
    emit("audit.flagevent", list(keyed_rows("audit.flagevent",
                                            querysets["audit.flagevent"])))
    return {label: keys.freeze() for label, keys in members.items()}


def _by_parent(rows: list) -> dict[int, list]:
    out: dict[int, list] = {}
    for item in rows:
        out.setdefault(int(item[0].partition("#")[0]), []).append(item)
    return out
