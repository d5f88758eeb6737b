"""The bundle's checkpoints (`checkpoints.jsonl`, audit/evidence/witnessed.py
builds it): the log rows of the windows are leaves of trees the casino
signed and its witnesses cosigned (issue 37).

1. each checkpoint is a signed note (c2sp.org/signed-note) whose Ed25519
   signature holds under one of the keys given with --public-key, the key
   named by the checkpoint's origin (c2sp.org/tlog-checkpoint);
2. each of its cosignatures (c2sp.org/tlog-cosignature, cosignature/v1)
   is of a witness the bundle lists (manifest `witness_keys`) or given with
   --witness-key, and holds; one of no such witness is named;
3. the checkpoints of one log follow each other with a consistency proof
   that holds (RFC 9162 2.1.4.2): the log only grew between them;
4. for each window's segment (its rows, consecutive leaves from
   `first_index`): the hashes left of it and the window's own rows (leaf =
   SHA-256(0x00 || the row's public link)) and, past its last row, the
   hashes right of it give each checkpoint's root;
5. each window's last row is a leaf of a checkpoint whose root step 4
   recomputed: its link binds every row of the window before it (step 3
   walks them), so no row can change under it. A window whose last row no
   checkpoint holds is a warning, or, with --witness-key, a failure; with
   --witness-key, that checkpoint must be cosigned by --quorum of the keys
   given (default: all). Rows before it in no checkpoint's tree (written
   between a rollback and its declared epoch, casino/epochs.py) are noted.
Cost: one SHA-256 a row plus one a row amortized, O(log n) a checkpoint.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from . import tlog
from .common import Unreadable

PART = "checkpoints.jsonl"
_sha, _fromhex = hashlib.sha256, bytes.fromhex


def _need(value, kind, what: str):
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Unreadable(f"{what}: {kind.__name__} expected")
    return value


def _hashes(value, what: str) -> list[bytes]:
    out = []
    for item in _need(value, list, what):
        try:
            h = tlog.unb64(_need(item, str, what), what)
        except tlog.ProofError as exc:
            raise Unreadable(str(exc)) from exc
        if len(h) != tlog.HASH_SIZE:
            raise Unreadable(f"{what}: 32-byte hashes expected")
        out.append(h)
    return out


@dataclass
class Signed:
    """A checkpoint as carried, once its signatures were checked."""

    origin: str
    size: int
    root: bytes
    signed: bool
    # (name, key ID): the time it states
    cosigners: dict[tuple[str, bytes], int] = field(default_factory=dict)


@dataclass
class Check:
    size: int
    right: list[bytes]
    matched: bool = False


class Segment:
    """A window's rows first_row..last_row as leaves from first_index of the
    log `origin`: fed row by row, checked against its checkpoints."""

    def __init__(self, item: dict, where: str):
        self.window = _need(item.get("window"), int, f"{where}: window")
        self.origin = _need(item.get("origin"), str, f"{where}: origin")
        self.first_row = _need(item.get("first_row"), int, f"{where}: first_row")
        self.last_row = _need(item.get("last_row"), int, f"{where}: last_row")
        self.lo = _need(item.get("first_index"), int, f"{where}: first_index")
        if self.lo < 0 or self.lo >= 2**63:
            raise Unreadable(f"{where}: first_index out of range")
        left = _hashes(item.get("left"), f"{where}: left")
        try:
            self.range = tlog.CompactRange(self.lo, left)
        except tlog.ProofError as exc:
            raise Unreadable(f"{where}: {exc}") from exc
        self.checks = []
        for n, c in enumerate(_need(item.get("checks"), list, f"{where}: checks")):
            what = f"{where}: checks[{n}]"
            _need(c, dict, what)
            size = _need(c.get("size"), int, f"{what}.size")
            if not 0 < size < 2**63:
                raise Unreadable(f"{what}.size out of range")
            self.checks.append(Check(size, _hashes(c.get("right"), f"{what}.right")))
        self.checks.sort(key=lambda c: c.size)
        self.due = [c for c in self.checks if c.size > self.lo]
        self.problems: list[str] = []
        self.closed = False

    def at_size(self, roots: dict) -> None:
        """The tree has as many leaves as the next check's size."""
        while self.due and self.due[0].size == self.range.size:
            self._compare(self.due.pop(0), self.range.root(), roots)

    def close(self, roots: dict) -> None:
        """Its last row was fed: the checks beyond, with the hashes right of
        it; any check not reached is a mismatch."""
        self.closed = True
        hi = self.range.size
        for c in self.due:
            if c.size < hi:
                self.problems.append(f"checkpoint {c.size} of {self.origin}: its tree "
                                     "ends inside the window but was not reached")
                continue
            full = self.range.copy()
            places = tlog.subtrees(hi, c.size)
            if len(places) != len(c.right):
                self._compare(c, b"", roots)
                continue
            for (level, _), h in zip(places, c.right, strict=True):
                full.subtree(level, h)
            self._compare(c, full.root(), roots)
        self.due = []

    def _compare(self, c: Check, root: bytes, roots: dict) -> None:
        cp = roots.get((self.origin, c.size))
        if cp is None:
            self.problems.append(f"log rows {self.first_row}-{self.last_row}: checked "
                                 f"against checkpoint {c.size} of {self.origin}, "
                                 "which the bundle does not carry")
        elif root != cp.root:
            self.problems.append(
                f"checkpoint {c.size} of {self.origin}: its root is not the tree of "
                f"log rows {self.first_row}-{self.last_row} (a row changed, inserted "
                "or removed, or the hashes beside them)")
        else:
            c.matched = True

    def covering(self, roots: dict) -> list[Signed]:
        """The signed checkpoints whose root matched and whose tree holds
        the segment's every row."""
        hi = self.range.size
        return [roots[(self.origin, c.size)] for c in self.checks
                if c.matched and c.size >= hi and roots[(self.origin, c.size)].signed]


class WindowFeed:
    """One window's rows as the log walk gives them (verifier.py walk_log):
    each row's link to the segment it belongs to."""

    def __init__(self, segments: list[Segment], roots: dict):
        self.segments = sorted(segments, key=lambda s: s.first_row)
        self.roots = roots
        self.at = 0
        self.cur: Segment | None = None
        self.next_start = self.segments[0].first_row if self.segments else None
        self.gaps: list[list[int]] = []  # runs of rows in no segment (the first)
        self.gap: list[int] | None = None
        self.tail: Segment | None = None  # the segment of the last row fed
        self.ended = False

    def row(self, rid: int, link: str) -> None:
        seg = self.cur
        if rid == self.next_start:
            seg = self.cur = self.tail = self.segments[self.at]
            self.gap = None
            self.at += 1
            self.next_start = (self.segments[self.at].first_row
                               if self.at < len(self.segments) else None)
        if seg is None:
            self.tail = None
            if self.gap is not None:
                self.gap[1] = rid
            elif len(self.gaps) < 3:
                self.gap = [rid, rid]
                self.gaps.append(self.gap)
            return
        # CompactRange.leaf, inline: this runs once a row
        rng = seg.range
        h = _sha(b"\x00" + _fromhex(link)).digest()
        n = rng.size
        rng.size = n + 1
        edge = rng.edge
        while n & 1:
            h = _sha(b"\x01" + edge.pop() + h).digest()
            n >>= 1
        edge.append(h)
        if seg.due and seg.due[0].size == rng.size:
            seg.at_size(self.roots)
        if rid == seg.last_row:
            seg.close(self.roots)
            self.cur = None

    def end(self) -> None:
        self.ended = True


class Witnessed:
    def __init__(self, public_keys: list[bytes], listed: list[str],
                 required: list[tlog.Verifier], quorum: int | None):
        self.public_keys = public_keys
        try:
            self.listed = [tlog.parse_vkey(k) for k in listed]
        except tlog.ProofError as exc:
            raise Unreadable(f"manifest: witness_keys: {exc}") from exc
        self.required = required
        self.quorum = len(required) if quorum is None else quorum
        self.roots: dict[tuple[str, int], Signed] = {}
        self.last: dict[str, Signed] = {}
        self.segments: dict[int, list[Segment]] = {}
        self.feeds: dict[int, WindowFeed] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.carried = True

    # reading
    def read(self, lines, where) -> None:
        for item in lines:
            here = where()
            _need(item, dict, here)
            kind = item.get("kind")
            if kind == "checkpoint":
                self.checkpoint(item, here)
            elif kind == "segment":
                seg = Segment(item, here)
                self.segments.setdefault(seg.window, []).append(seg)
            else:
                raise Unreadable(f"{here}: kind {str(kind)[:40]!r} is neither "
                                 "'checkpoint' nor 'segment'")

    def _log_verifiers(self, origin: str) -> list[tlog.Verifier]:
        return [tlog.Verifier(origin, tlog.ALG_ED25519, raw)
                for raw in self.public_keys]

    def checkpoint(self, item: dict, where: str) -> None:
        note = _need(item.get("note"), str, f"{where}: note")
        try:
            text, _ = tlog.note_split(note)
            cp = tlog.checkpoint_parse(text)
        except tlog.ProofError as exc:
            raise Unreadable(f"{where}: not a signed checkpoint ({exc})") from exc
        what = f"checkpoint {cp.size} of {cp.origin}"
        signed = True
        try:
            tlog.note_open(note, self._log_verifiers(cp.origin))
        except tlog.ProofError as exc:
            signed = False
            self.problems.append(f"{what}: not signed by a key given with "
                                 f"--public-key ({exc})")
        found = Signed(cp.origin, cp.size, cp.root, signed)
        keys = {(k.name, k.key_id): k for k in (*self.listed, *self.required)}
        for line in _need(item.get("cosignatures"), list, f"{where}: cosignatures"):
            try:
                sigs = tlog.parse_signature_lines(_need(line, str, where))
            except tlog.ProofError as exc:
                raise Unreadable(f"{where}: a cosignature: {exc}") from exc
            for sig in sigs:
                key = keys.get((sig.name, sig.key_id))
                if key is None:
                    self.problems.append(
                        f"{what}: a cosignature by {sig.name} (key ID "
                        f"{sig.key_id.hex()}) of no witness the bundle lists or "
                        "--witness-key gives")
                    continue
                try:
                    found.cosigners[(key.name, key.key_id)] = (
                        tlog.cosignature_check(text, sig, key))
                except tlog.ProofError as exc:
                    self.problems.append(f"{what}: {exc}")
        proof = _hashes(item.get("consistency"), f"{where}: consistency")
        before = self.last.get(cp.origin)
        if before is not None:
            try:
                tlog.verify_consistency(before.size, cp.size, proof, before.root,
                                        cp.root)
            except tlog.ProofError as exc:
                self.problems.append(f"{what}: the consistency proof from "
                                     f"{before.size} does not hold ({exc})")
        elif proof:
            self.problems.append(f"{what}: a consistency proof from no checkpoint")
        if (cp.origin, cp.size) in self.roots:
            self.problems.append(f"{what}: carried twice")
        self.roots[(cp.origin, cp.size)] = found
        self.last[cp.origin] = found

    # the walk
    def window(self, n: int) -> WindowFeed:
        feed = self.feeds[n] = WindowFeed(self.segments.get(n, []), self.roots)
        return feed

    # the verdict
    def finish(self, windows: list[dict]) -> tuple[list[str], list[str]]:
        """(problems, notes): checkpoints and segments, then coverage."""
        problems, notes = list(self.problems), list(self.notes)
        known = set(range(len(windows)))
        for n in sorted(set(self.segments) - known):
            problems.append(f"checkpoints.jsonl: a segment of window {n}, which the "
                            "manifest does not have")
        uncovered, quorum_short, cosigners = [], [], set()
        for n, window in enumerate(windows):
            feed = self.feeds.get(n)
            if feed is None or not feed.ended:
                continue  # the walk stopped before it (a link named already)
            span = f"log window {window['first']}-{window['last']}"
            for seg in feed.segments:
                problems += seg.problems
                if not seg.closed:
                    problems.append(
                        f"{span}: ends before row {seg.last_row}, the last of the "
                        f"leaves its checkpoints were made with (rows removed)")
            tail = feed.tail
            covering = tail.covering(self.roots) if tail and tail.closed else []
            if not covering:
                # the window's last row binds every row before it (the links):
                # it is the one that must be in a checkpoint's tree
                uncovered.append(f"{span}: its last row, {window['last']}, is in no "
                                 "checkpoint the bundle carries")
                continue
            best = max(covering, key=lambda c: self._cosigned(c))
            cosigners.update(name for name, _ in best.cosigners)
            if self.required and self._cosigned(best) < self.quorum:
                names = sorted(k.name for k in self.required
                               if (k.name, k.key_id) in best.cosigners)
                quorum_short.append(
                    f"{span}: the checkpoint covering it ({best.size} of "
                    f"{best.origin}) is cosigned by {len(names)} of the witnesses "
                    f"given ({', '.join(names) or 'none'}); quorum {self.quorum}")
            loose = [f"{a}-{b}" for a, b in feed.gaps] + [
                f"{seg.first_row}-{seg.last_row}" for seg in feed.segments
                if seg is not tail and seg.closed and not seg.covering(self.roots)]
            if loose:
                notes.append(f"{span}: rows {', '.join(loose)} are in no checkpoint's "
                             "tree the bundle carries (as rows written between a "
                             "rollback and its declared epoch are not); the links "
                             f"bind them to row {window['last']}, which is")
        problems += quorum_short
        if uncovered:
            why = ("no witness configured, or the bundle was built before the next "
                   "checkpoint: build it again")
            if not self.carried:
                why = "the bundle carries no checkpoints.jsonl"
            if self.required:
                problems += [f"{u} ({why})" for u in uncovered]
            else:
                notes += [f"WARNING: {u} ({why}); with --witness-key this fails"
                          for u in uncovered]
        elif windows and not problems:
            notes.append(
                f"checkpoints: the last row of each of the {len(windows)} window(s) "
                f"(and through the links every row before it) is a leaf of "
                f"{len(self.roots)} checkpoint(s) signed by the log's key, "
                f"consistent with each other; cosigned by "
                f"{', '.join(sorted(cosigners)) or 'no witness'}"
                + ("" if self.required else " (checked against the witness keys "
                   "the bundle lists: pass --witness-key to require your own)"))
        return problems, notes

    def _cosigned(self, cp: Signed) -> int:
        if self.required:
            return sum(1 for k in self.required
                       if (k.name, k.key_id) in cp.cosigners)
        return len(cp.cosigners)
