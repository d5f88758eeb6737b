"""outside.jsonl: every row the bundle's windows wrote that its ledger part
does not hold (another table's, another day's, a gaming-day close...).

The verifier requires every row a log row of the windows wrote, of every
kind but those no bundle carries (tools/evidence_verifier/complete.py NOT_CARRIED,
kept equal to ours by a test), at the state the latest such write left it:
so a row removed from the bundle is named, whatever its kind, with no list
of kinds to keep up to date. These rows are checked against the log and not
re-settled (their sessions are not the period's).

A row the design updates (the log's entries for it are [before, after])
that was written again after the windows cannot be given as the windows
left it: it is named `"later": true` instead. Rows written once are given
as they are (a row changed since is then named by the verifier).
"""

from __future__ import annotations

import hashlib
import sqlite3
import tempfile
from bisect import bisect_left
from pathlib import Path

from casino.trail import BOUND, entry_after

from .ledger import Keys
from .rows import LABELS, keyed_rows, model_of

NOT_CARRIED = frozenset({
    "auth.user", "auth.group", "auth.user_groups", "auth.group_permissions",
    "auth.user_user_permissions", "casino.apitoken", "tablet.tabletprofile",
    "django_celery_beat.periodictask", "django_celery_beat.crontabschedule",
    "django_celery_beat.intervalschedule", "django_celery_beat.solarschedule",
    "django_celery_beat.clockedschedule",
})
CHUNK = 2000


def _parent_label(label: str) -> str | None:
    """The label of a child row's parent (a stake's coup), None for a row
    keyed by its own id."""
    parent = BOUND.get(label)
    if parent is None:
        return None
    return model_of(label)._meta.get_field(parent).related_model._meta.label_lower


class Written:
    """The rows the windows' log rows write that the ledger part does not
    hold, the latest write of each winning: a SQLite file, not a map in
    memory (a one-table bundle's windows hold the whole floor's rows)."""

    def __init__(self, members: dict[str, Keys]):
        self.members = members
        self.parents = {label: _parent_label(label) for label in LABELS}
        self.holders: dict[str, object] = {}
        self.folder = tempfile.TemporaryDirectory(prefix="evidence-outside-")
        self.file = Path(self.folder.name) / "w.sqlite"
        self.db = sqlite3.connect(self.file, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("CREATE TABLE w (label TEXT, key TEXT, after TEXT, "
                        "updatable INTEGER, rid INTEGER, PRIMARY KEY (label, key)"
                        ") WITHOUT ROWID")
        self.db.execute("BEGIN")
        self.pending: list[tuple] = []

    def _holder(self, label: str):
        """Whether the ledger part holds a row of `label`, by its key: a
        function made once per label (a month's log has 5M entries), or None
        for a label whose rows it never holds."""
        if label in self.holders:
            return self.holders[label]
        held = None
        if label in self.parents:
            parent = self.parents[label]
            keys = self.members.get(parent or label)
            if keys is not None:
                pks, find = keys.pks, bisect_left

                def held(key: str) -> bool:
                    pk = key.partition("#")[0] if parent else key
                    if not pk.isdigit():
                        return False
                    pk = int(pk)
                    i = find(pks, pk)
                    return i < len(pks) and pks[i] == pk
        self.holders[label] = held
        return held

    def add(self, ledger: dict | None, rid: int) -> None:
        """Log row `rid`'s `ledger` (rows in any order: the latest wins)."""
        if not ledger:
            return
        pending = self.pending
        for label, entries in ledger.items():
            if label in NOT_CARRIED or not isinstance(entries, dict):
                continue
            held = self._holder(label)
            for key, entry in entries.items():
                if held is None or not held(key):
                    pending.append((label, key, entry_after(entry),
                                    type(entry) is list, rid))
        if len(pending) >= 20000:
            self._flush()

    def commit(self) -> None:
        """Everything written to the file, for another process to merge."""
        self._flush()
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")

    def merge(self, other: Path) -> None:
        """Another Written's entries (another process's, committed), the
        latest write of each row winning as in `_flush`."""
        self._flush()
        self.db.execute("COMMIT")  # ATTACH is refused inside a transaction
        self.db.execute("ATTACH DATABASE ? AS other", (str(other),))
        self.db.execute("BEGIN")
        self.db.execute(
            "INSERT INTO w SELECT label, key, after, updatable, rid FROM other.w "
            "WHERE true ON CONFLICT (label, key) DO UPDATE SET after = CASE WHEN "
            "excluded.rid >= rid THEN excluded.after ELSE after END, "
            "rid = max(rid, excluded.rid), "
            "updatable = max(updatable, excluded.updatable)")
        self.db.execute("COMMIT")
        self.db.execute("DETACH DATABASE other")
        self.db.execute("BEGIN")

    def _flush(self) -> None:
        # a later write of the same row (by the log's order, whatever the
        # order given) replaces the earlier (but the row stays updatable
        # once any write said so)
        self.db.executemany(
            "INSERT INTO w VALUES (?, ?, ?, ?, ?) ON CONFLICT (label, key) DO "
            "UPDATE SET after = CASE WHEN excluded.rid >= rid THEN excluded.after "
            "ELSE after END, rid = max(rid, excluded.rid), "
            "updatable = max(updatable, excluded.updatable)", self.pending)
        self.pending = []

    def write(self, part) -> int:
        """The part's lines, by label then key; the number of lines."""
        self._flush()
        labels = [r[0] for r in self.db.execute(
            "SELECT DISTINCT label FROM w ORDER BY label")]
        n = 0
        for label in labels:
            try:
                model = model_of(label)
            except LookupError:  # a kind no longer in the schema: missing
                continue
            wanted = self.db.execute(
                "SELECT key, after, updatable FROM w WHERE label = ? AND after "
                "IS NOT NULL ORDER BY key", (label,)).fetchall()
            for lo in range(0, len(wanted), CHUNK):
                n += self._chunk(part, label, model, wanted[lo:lo + CHUNK])
        return n

    def _chunk(self, part, label: str, model, wanted: list[tuple]) -> int:
        parent = BOUND.get(label)
        if parent:
            ids = {int(k.partition("#")[0]) for k, _, _ in wanted}
            qs = model._base_manager.filter(**{f"{parent}__in": ids})
        else:
            qs = model._base_manager.filter(pk__in=[int(k) for k, _, _ in wanted])
        found = {key: (pk, row) for key, pk, row in keyed_rows(label, qs)}
        n = 0
        for key, after, updatable in wanted:
            pk, row = found.get(key, (None, None))
            fresh = row is not None and hashlib.sha256(
                row.encode("utf-8")).hexdigest() == after
            if updatable and not fresh:
                part.write(f'{{"key":"{key}","label":"{label}","later":true}}\n'
                           .encode())
            elif row is not None:
                part.write(f'{{"id":{pk},"key":"{key}","label":"{label}",'
                           f'"row":{row}}}\n'.encode())
            else:
                continue  # gone: the verifier names it
            n += 1
        return n

    def close(self) -> None:
        self.db.close()
        self.folder.cleanup()
