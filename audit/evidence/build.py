"""Build a period's evidence bundle (`manage.py evidence`, the reports
page's download): one ZIP of JSON Lines parts and a manifest with their
SHA-256 digests. The format is described in tools/verify_evidence.py, the
program that checks it, and in docs/evidence.md.

How the log segment is chosen. Each ledger row in the bundle must be matched
to the latest change-log row naming it, inside a run of log rows ("a
window") that ends at a signed anchor, so that the links can be walked from
the window's first row to an anchored head. The main window starts at the
row that opened the period's first session (everything of a session is
written after it) and ends at the first signed anchor at or after the
latest log row naming any of the bundle's rows (a correction or a decision
made after the period moves it on; with no such anchor yet, one is taken).
Rows written before the main window (the tables, their house-rules and
tableau versions) each get a window of their own, from their writer to the
next signed anchor; windows that meet are merged.

Same records, same anchors: same bytes (zipout.py). The only state a build
adds is the closing anchor when none covers the period yet, and a second
build then finds it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Min, Sum

from casino.chain_check import chain_checked
from casino.models import ChangeLog, Seal
from casino.trail import GENESIS, _dumps, _when
from tables.models import Table, TableDayRollup

from . import signed, witnessed
from .ledger import CHILDREN, Keys, write_ledger
from .outside import Written
from .rows import _ENCODE, LABELS, fields_of, keyed_rows
from .select import Selection, period_select
from .zipout import Bundle

FORMAT = "chemmy-evidence/1"
CHUNK = 5000
LOG_FIELDS = ("id", "at", "user_id", "device", "action", "object_type",
              "object_id", "reason", "old", "new", "ledger", "link", "hash",
              "key_id")
# Rows that may be older than the period's first session: found through the
# trail's index (casino.Seal) when the main window does not name them.
OLDER = ("tables.tableauversion", "tables.table", "tables.houserules")


class EvidenceError(Exception):
    pass


def _line(obj) -> bytes:
    # casino.trail._dumps's JSON, its encoder made once (not once a row)
    return _ENCODE(obj).encode("utf-8") + b"\n"


class _Progress:
    def __init__(self, callback: Callable[[int, int], None] | None):
        self.callback, self.done, self.expected, self.due = callback, 0, 0, CHUNK

    def step(self, n: int = 1) -> None:
        self.done += n
        if self.callback and self.done >= self.due:
            self.due = self.done + CHUNK
            self.callback(self.done, self.expected)

    def end(self) -> None:
        if self.callback:
            self.callback(self.done, self.expected)


def evidence_build(*, from_day: date, to_day: date, table_ids=None, path: Path,
                   progress: Callable[[int, int], None] | None = None) -> dict:
    """Write the bundle to `path`; returns the manifest."""
    sel = period_select(from_day=from_day, to_day=to_day, table_ids=table_ids)
    querysets = sel.querysets()
    prog = _Progress(progress)
    prog.expected = sum(querysets[label].count() for label in LABELS)
    bundle = Bundle(path)
    beside = None
    try:
        with bundle.part("ledger.jsonl") as part, _snapshot() as snapshot:
            # the log's segment and parts, in a process of their own meanwhile
            beside = _Beside.start(sel, querysets, snapshot, path)
            members = write_ledger(part, querysets, sel.sessions, prog.step)
            if beside is not None:
                span = beside.imported()  # the snapshot outlives its import
        if beside is not None:
            beside.share(members, span)  # the log rows it has not reached yet
        with bundle.part("context.jsonl") as part:
            for _key, pk, row in keyed_rows("audit.flag", querysets["audit.flag"]):
                part.write(f'{{"id":{pk},"label":"audit.flag","row":{row}}}\n'
                           .encode())
        if beside is not None:
            windows, anchors, parts = beside.result()
            logged = parts["log.jsonl"]["lines"]
            prog.expected += logged
            bundle.adopt(beside.path, parts)
            prog.step(logged)
        else:
            windows, anchors = _windows(sel, members)
            prog.expected += sum(_count(w) for w in windows)
            _log_parts(bundle, windows, members, prog)
        with bundle.part("anchors.jsonl") as part:
            for anchor in anchors:
                part.write(_line(anchor))
        with bundle.part(witnessed.PART) as part:
            for item in witnessed.checkpoint_lines(windows):
                part.write(_line(item))
        report = _report(sel, anchors[-1] if anchors else None)
        with bundle.part("report.json") as part:
            part.write(_line(report))
        manifest = {
            "format": FORMAT,
            "period": {"from": from_day.isoformat(), "to": to_day.isoformat()},
            "tables": sel.table_ids,
            "time_zone": settings.TIME_ZONE,
            "labels": list(LABELS),
            "fields": {label: fields_of(label) for label in LABELS},
            "windows": windows,
            "public_keys": signed.public_keys(),
            "witness_keys": witnessed.witness_keys(),
            "parts": dict(bundle.parts),
        }
        with bundle.part("manifest.json") as part:
            part.write(_dumps(manifest).encode("utf-8") + b"\n")
    finally:
        bundle.close()
        if beside is not None:
            beside.close()
    prog.end()
    return manifest


def _log_parts(bundle: Bundle, windows: list[dict], members: dict,
               prog: _Progress, ahead=None) -> int:
    """log.jsonl (the windows' rows) and outside.jsonl; the log rows
    written. `ahead`: (first, last, lines file, Written) of rows already
    read (_Ahead), all inside one window."""
    written = Written(members) if ahead is None else ahead[3]
    try:
        with bundle.part("log.jsonl") as part:
            for window in windows:
                first, last = window["first"], window["last"]
                if ahead is None or not first <= ahead[0] <= last:
                    _log_rows(part, first, last, prog, written)
                    continue
                _log_rows(part, first, ahead[0] - 1, prog, written)
                for name, _lo, _hi, at, size in ahead[2]:
                    with open(name, "rb") as lines:
                        lines.seek(at)
                        while size > 0:
                            block = lines.read(min(size, 1 << 20))
                            if not block:
                                raise EvidenceError("a log file read ahead "
                                                    "ends early")
                            part.write(block)
                            size -= len(block)
                _log_rows(part, ahead[1] + 1, last, prog, written)
        with bundle.part("outside.jsonl") as part:
            written.write(part)
    finally:
        written.close()
    return bundle.parts["log.jsonl"]["lines"]


@contextmanager
def _snapshot():
    """The ledger's queries in one read-only transaction: one snapshot for
    every kind of row (PostgreSQL: REPEATABLE READ), and cursors that stream
    (outside a transaction, a server-side cursor is WITH HOLD, and the
    server would copy each whole result before the first row)."""
    outermost = not connection.in_atomic_block  # else: the caller's snapshot
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, "
                               "READ ONLY")
                cursor.execute("SELECT pg_export_snapshot()")
                yield cursor.fetchone()[0]  # for _Beside: the very same rows
        else:
            yield None


# -- the log segment ----------------------------------------------------------------

class _Beside:
    """The log's segment and parts, built in a forked process while this one
    writes the ledger part: the search for the segment's end (the server's
    work, in the ledger's snapshot: PostgreSQL's exported snapshot, the
    same rows), then log.jsonl and outside.jsonl, into a ZIP of its own whose
    members the bundle adopts as they are (zipout.py `adopt`): the same
    bytes as when they are written in line, on two cores instead of one
    (issue 34 item 6; tests/evidence/test_build_paths.py). Taken only
    outside a caller's transaction (`snapshot`), where fork is available;
    otherwise everything is built in line."""

    def __init__(self, process, pipe, path: Path, pages, tail):
        self.process, self.pipe, self.path = process, pipe, path
        self.pages, self.tail = pages, tail
        self.mine: _Ahead | None = None

    @classmethod
    def start(cls, sel: Selection, querysets: dict, snapshot: str | None,
              out: Path) -> _Beside | None:
        import multiprocessing
        import tempfile

        if not snapshot or "fork" not in multiprocessing.get_all_start_methods():
            return None
        fork = multiprocessing.get_context("fork")
        handle, name = tempfile.mkstemp(prefix=f".{out.name}-log-", suffix=".zip",
                                        dir=out.parent)
        os.close(handle)
        mine, theirs = fork.Pipe(duplex=False)
        tail_in, tail = fork.Pipe(duplex=False)  # the parent's pages, to it
        pages = _Pages(fork)
        process = fork.Process(target=_beside, name="evidence-log", daemon=True,
                               args=(sel, querysets, snapshot, Path(name), theirs,
                                     pages, tail_in))
        try:
            process.start()
        except (OSError, AssertionError):  # no fork here (a daemon's child)
            Path(name).unlink(missing_ok=True)
            return None
        theirs.close()
        tail_in.close()
        return cls(process, mine, Path(name), pages, tail)

    def _next(self):
        try:
            message = self.pipe.recv()
        except EOFError:
            self.process.join()
            raise EvidenceError("the process writing the log part ended with "
                                f"status {self.process.exitcode}") from None
        if message[0] == "error":
            raise message[1]
        return message

    def imported(self) -> tuple:
        """Wait until the process holds the snapshot (it is the ledger
        transaction's, and ends with it); the log rows it reads ahead."""
        message = self._next()
        assert message[0] == "imported", message
        return message[1:]

    def share(self, members: dict, span: tuple) -> None:
        """This process's share of the rows read ahead: the pages the other
        has not reached, from the last back (_Pages), their lines in a
        file of their own; then handed to it ("tail")."""
        first, last = span
        if first is not None:
            self.mine = _Ahead(self.path, members, first, last, self.pages.back)
        try:
            self.tail.send(self.mine.handed() if self.mine else None)
        except (BrokenPipeError, OSError):
            pass  # it ended: result() says why

    def result(self) -> tuple[list[dict], list[dict], dict]:
        message = self._next()
        assert message[0] == "done", message
        self.process.join()
        return message[1:]

    def close(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join()
        self.pipe.close()
        self.tail.close()
        self.path.unlink(missing_ok=True)
        if self.mine is not None:
            self.mine.close()


def _beside(sel: Selection, querysets: dict, snapshot: str, path: Path,
            pipe, pages: _Pages, tail) -> None:
    """The forked process's work (_Beside): messages ("imported", first,
    last) with the rows read ahead, then ("done", windows, anchors, its
    parts' summaries) or ("error", exception)."""
    from django.db import connections

    # The parent's connections are the parent's: this process opens its
    # own, and never closes theirs (that would end the parent's session);
    # multiprocessing leaves by os._exit, so no finalizer closes them either.
    for inherited in connections.all(initialized_only=True):
        _INHERITED.append(inherited)
        del connections[inherited.alias]
    ahead = None
    try:
        # the search for the segment's end, in the snapshot, is the server's
        # work: meanwhile the log rows it will surely hold are read (_Ahead)
        scan = _Thread(_scan, sel, querysets, snapshot)
        members, opened, surely = scan.ready()
        span = (None, None)
        if opened is not None and surely is not None and surely >= opened:
            span = (opened, surely)
            pages.count(opened, surely)
        pipe.send(("imported", *span))
        if span[0] is not None:
            ahead = _Ahead(path, members, *span, pages.front)
        handed = tail.recv()  # the builder's share, from the end
        if ahead is not None and handed is not None:
            ahead.join(handed)
        scanned = scan.result()
        windows, anchors = _windows(sel, members, scanned)
        bundle = Bundle(path)
        try:
            _log_parts(bundle, windows, members, _Progress(None),
                       ahead and ahead.taken())
        finally:
            bundle.close()
        pipe.send(("done", windows, anchors, dict(bundle.parts)))
    except BaseException as exc:  # noqa: BLE001 - raised again in the parent
        pipe.send(("error", _portable(exc)))
    finally:
        if ahead is not None:
            ahead.close()
        pipe.close()
        connections.close_all()  # this process's own


_INHERITED: list = []


@contextmanager
def _imported(snapshot: str):
    """A read-only transaction in the ledger's snapshot (exported by the
    builder's: the very same rows)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, "
                       "READ ONLY")
        cursor.execute("SET TRANSACTION SNAPSHOT %s", [snapshot])
        yield


def _surely(sel: Selection) -> int | None:
    """The latest log row writing any of the period's sessions: the main
    window holds every row up to it (it runs from the row that opened the
    first to the latest naming any bundle row)."""
    return Seal.objects.filter(
        label="tables.tablesession", key__in=[str(s) for s in sel.sessions]
    ).aggregate(m=Max("log_id"))["m"]


def _scan(sel: Selection, querysets: dict, snapshot: str, ready):
    """In the snapshot: the bundle's rows' pks, the row that opened its
    first session and the latest writing any of them, given to `ready` as
    soon as known; then (opened, latest, found) for _windows (None when no
    row opened the period's sessions)."""
    try:
        with _imported(snapshot):
            members = {label: _pks(label, querysets[label])
                       for label in LABELS if label not in CHILDREN}
            opened = _opened(sel)
            ready((members, opened, _surely(sel)))
            if opened is None:
                return None
            return (opened, *_writers(opened, members))
    finally:
        connection.close()  # the thread's own


class _Thread:
    """`_scan` in a thread (its own database connection): `ready()` waits
    for what it gives first, `result()` for its end; both raise what it
    raised."""

    def __init__(self, fn, *args):
        import threading

        self.out = self.error = self.first = None
        self.event = threading.Event()

        def given(value):
            self.first = value
            self.event.set()

        def run():
            try:
                self.out = fn(*args, given)
            except BaseException as exc:  # noqa: BLE001 - raised in result()
                self.error = exc
            finally:
                self.event.set()

        self.thread = threading.Thread(target=run, name="evidence-scan")
        self.thread.start()

    def ready(self):
        self.event.wait()
        if self.first is None:
            self.result()  # raises the thread's error
        return self.first

    def result(self):
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.out


class _Pages:
    """The log rows read ahead, `first`..`last`, in pages of PAGE ids shared
    by the two processes: the log's process takes them from the first on
    (`front`), the builder, its ledger part written, from the last back
    (`back`), until they meet. Each page is taken once."""

    def __init__(self, context):
        self.ends = context.Array("q", [0, -1, 0, 0])  # next front, next back

    def count(self, first: int, last: int) -> None:
        with self.ends.get_lock():
            self.ends[:] = [0, (last - first) // PAGE, first, last]

    def _take(self, at: int, step: int) -> tuple[int, int] | None:
        with self.ends.get_lock():
            front, back, first, last = self.ends[:]
            if front > back:
                return None
            page = self.ends[at]
            self.ends[at] = page + step
        lo = first + page * PAGE
        return lo, min(lo + PAGE - 1, last)

    def front(self):
        return self._take(0, 1)

    def back(self):
        return self._take(1, -1)


PAGE = 20000  # log ids a page of the rows read ahead


class _Ahead:
    """Log rows of `first`..`last` read ahead (while the segment's end is
    searched for, or by the builder once its ledger part is written), page
    by page as `take` gives them: their lines in a file, their entries in a
    `Written`. `segments` are (row from, row to, offset, length) in that
    file, in the order taken; _log_parts writes them in the log's order."""

    def __init__(self, out: Path, members: dict, first: int, last: int, take):
        import tempfile

        self.first, self.last = first, last
        self.written = Written(members)
        self.segments: list[tuple[str, int, int, int, int]] = []
        handle, name = tempfile.mkstemp(prefix=f".{out.name}-ahead-",
                                        dir=out.parent)
        self.path = Path(name)
        with os.fdopen(handle, "wb") as f:
            lines = _Buffered(f)
            while (page := take()) is not None:
                at = lines.tell()
                _log_rows(lines, *page, _Progress(None), self.written)
                self.segments.append((str(self.path), *page, at,
                                      lines.tell() - at))
            lines.flush()
        self.others: list[Path] = []

    def handed(self) -> tuple:
        """What the other process needs to take these rows in: the
        segments, and the index of their entries (committed, closed)."""
        self.written.commit()
        return self.segments, str(self.written.file)

    def join(self, handed: tuple) -> None:
        segments, index = handed
        self.segments += segments
        self.written.merge(Path(index))

    def taken(self) -> tuple:
        return self.first, self.last, sorted(self.segments, key=lambda s: s[1]), (
            self.written)

    def close(self) -> None:
        self.written.close()
        self.path.unlink(missing_ok=True)


class _Buffered:
    """Lines gathered into 1 MB writes."""

    def __init__(self, f):
        self.f, self.pending, self.size, self.written = f, [], 0, 0

    def write(self, data: bytes) -> None:
        self.pending.append(data)
        self.size += len(data)
        self.written += len(data)
        if self.size >= 1 << 20:
            self.flush()

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        self.f.write(b"".join(self.pending))
        self.pending, self.size = [], 0


def _portable(exc: BaseException) -> BaseException:
    """The exception as the parent can receive it (pickled): itself, or an
    EvidenceError with its message."""
    import pickle

    try:
        return pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception that does not pickle
        return EvidenceError(f"{type(exc).__name__}: {exc}")


def _pks(label: str, queryset) -> Keys:
    from casino.trail import BOUND_ONLY

    keys = Keys()
    for pk in queryset.filter(**BOUND_ONLY.get(label, {})).order_by().values_list(
            "pk", flat=True).iterator(chunk_size=20000):
        keys.add(pk)
    return keys.freeze()


def _opened(sel: Selection) -> int | None:
    """The log row that opened the period's first session."""
    return Seal.objects.filter(
        label="tables.tablesession", key__in=[str(s) for s in sel.sessions]
    ).aggregate(m=Min("log_id"))["m"]


def _writers(lo: int, members: dict[str, Keys]) -> tuple[int, dict]:
    """The latest log row from row `lo` to the head naming any bundle row,
    and which of the older kinds the log names from `lo` on (by pk)."""
    found = {label: set() for label in OLDER}
    if connection.vendor == "postgresql":
        latest = _latest_pg(lo, members)
        for label in OLDER:  # the trail's index has every writer of these
            found[label] = {int(k) for k in Seal.objects.filter(
                label=label, log_id__gte=lo,
                key__in=[str(pk) for pk in members[label]],
            ).values_list("key", flat=True)}
        return latest, found
    coups = members["tables.coup"]
    latest = 0
    for page in _pages(lo, None, "id", "ledger"):
        for rid, ledger in page:
            for label, entries in (ledger or {}).items():
                if label in CHILDREN:
                    if any(int(k.partition("#")[0]) in coups for k in entries):
                        latest = rid
                    continue
                keys = members.get(label)
                if not keys:
                    continue
                named = [int(k) for k in entries if int(k) in keys]
                if named:
                    latest = rid
                    if label in found:
                        found[label].update(named)
    return latest, found


def _latest_pg(lo: int, members: dict[str, Keys]) -> int:
    """The scan in the server, one pass over the log's ledger maps from row
    `lo`: each (label, key) a row names, hash-joined on the bundle's rows (a
    child row by its parent coup's key). Keys are compared as text, so no
    other label's key is ever cast."""
    labels = [label for label, keys in members.items() if len(keys)]
    if not labels:
        return 0
    params = {"lo": lo}
    bundle = []
    for i, label in enumerate(labels):
        # one comma-separated text per kind (a month's coups: ~8 MB), not a
        # list of a million Python strings
        params[f"k{i}"] = ",".join(map(str, members[label]))
        bundle.append(f"SELECT '{label}'::text AS label, "
                      f"unnest(string_to_array(%(k{i})s, ',')) AS key")
    children = ", ".join(f"'{c}'" for c in CHILDREN)
    sql = (
        "SELECT max(l.id) FROM casino_changelog l "
        "CROSS JOIN LATERAL jsonb_each(l.ledger) AS e "
        "CROSS JOIN LATERAL jsonb_object_keys(e.value) AS k (key) "
        f"JOIN ({' UNION ALL '.join(bundle)}) AS b "
        f"ON b.label = CASE WHEN e.key IN ({children}) THEN 'tables.coup' "
        "ELSE e.key END AND b.key = split_part(k.key, '#', 1) "
        "WHERE l.id >= %(lo)s AND jsonb_typeof(l.ledger) = 'object' "
        "AND jsonb_typeof(e.value) = 'object'")
    with transaction.atomic(), connection.cursor() as cursor:
        # the arrays' sizes are unknown to the planner (it guesses 10 rows
        # each): a nested loop over a million would be quadratic
        cursor.execute("SET LOCAL enable_nestloop = off")
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute(sql, params)
        return cursor.fetchone()[0] or 0


def _windows(sel: Selection, members: dict[str, Keys], scanned=None
             ) -> tuple[list[dict], list[dict]]:
    if not sel.sessions:
        return [], []
    opened = _opened(sel) if scanned is None else scanned[0]
    if opened is None:
        raise EvidenceError("the period's sessions are not in the trail")
    latest, found = _writers(opened, members) if scanned is None else scanned[1:]
    needed = [(opened, max(latest, opened))]
    for label in OLDER:
        missing = sorted(set(members[label]) - found[label])
        if missing:
            older = (Seal.objects.filter(label=label,
                                         key__in=[str(pk) for pk in missing])
                     .values("key").annotate(m=Max("log_id")))
            needed += [(r["m"], r["m"]) for r in older]
    spans = []
    on_file = signed.Anchors()
    for start, end in sorted(needed):
        anchor = on_file.covering(end)
        if anchor is None:
            raise EvidenceError(f"no signed anchor covers trail row {end}")
        if spans and start <= spans[-1][1] + 1:
            if anchor["row"] > spans[-1][1]:
                spans[-1][1:] = [anchor["row"], anchor]
        else:
            spans.append([start, anchor["row"], anchor])
    windows, anchors = [], []
    for start, end, anchor in spans:
        seed = (ChangeLog.objects.filter(id__lt=start).order_by("-id")
                .values_list("id", "link").first())
        windows.append({"first": start, "last": end,
                        "seed_row": seed[0] if seed else None,
                        "seed": seed[1] if seed else GENESIS})
        anchors.append(anchor)
    return windows, anchors


def _count(window: dict) -> int:
    return ChangeLog.objects.filter(id__gte=window["first"],
                                    id__lte=window["last"]).count()


def _pages(first: int, last: int | None, *fields: str):
    """The log rows first..last (None: to the head), a range of CHUNK ids
    at a time: each page an index range, whatever the planner thinks of
    the table's size (with a LIMIT instead, stale statistics had it sort
    the whole rest of the window for every page)."""
    if last is None:
        last = ChangeLog.objects.aggregate(m=Max("id"))["m"] or 0
    for lo in range(first, last + 1, CHUNK):
        yield list(ChangeLog.objects.filter(id__gte=lo,
                                            id__lte=min(lo + CHUNK - 1, last))
                   .order_by("id").values_list(*fields, named=len(fields) > 2))


def _write_log(part, window: dict, prog: _Progress, written: Written) -> None:
    _log_rows(part, window["first"], window["last"], prog, written)


def _log_rows(part, first: int, last: int, prog: _Progress,
              written: Written) -> None:
    """Log rows first..last, written to `part` (anything with `write`)."""
    pages = (_pages_pg if connection.vendor == "postgresql" else _pages_orm)
    for page in pages(first, last):
        for row in page:
            written.add(row["ledger"], row["id"])
            part.write(_line(row))
        prog.step(len(page))


def _pages_orm(first: int, last: int):
    for page in _pages(first, last, *LOG_FIELDS):
        rows = []
        for row in page:
            row = row._asdict()
            row["at"] = _when(row["at"])
            rows.append(row)
        yield rows


def _pages_pg(first: int, last: int):
    """As `_pages_orm`, the server writing the time as the trail does and
    the JSON columns as text, decoded once here (not through the ORM's
    converters)."""
    from django.db.models import TextField
    from django.db.models.functions import Cast

    from .rows import _UTC

    loads = json.loads
    as_text = {"_at": _UTC("at"), **{f"_{n}": Cast(n, TextField())
                                     for n in ("old", "new", "ledger")}}
    columns = [f"_{n}" if f"_{n}" in as_text else n for n in LOG_FIELDS]
    for lo in range(first, last + 1, CHUNK):
        page = (ChangeLog.objects.filter(id__gte=lo,
                                         id__lte=min(lo + CHUNK - 1, last))
                .order_by("id").annotate(**as_text).values_list(*columns))
        rows = []
        for values in page:
            row = dict(zip(LOG_FIELDS, values, strict=True))
            for name in ("old", "new", "ledger"):
                if row[name] is not None:
                    row[name] = loads(row[name])
            rows.append(row)
        yield rows


# -- the commission report ------------------------------------------------------

REPORT_SUMS = ("coups", "banker_wins", "punter_wins", "ties", "covered",
               "commission")


def _report(sel: Selection, closing: dict | None) -> dict:
    """The period's commission per table and gaming day, as the reports read
    it (the table-day rollups), with a stamp signed by the casino's key."""
    cells = TableDayRollup.objects.filter(gaming_day__gte=sel.from_day,
                                          gaming_day__lte=sel.to_day)
    if sel.table_ids:
        cells = cells.filter(table_id__in=sel.table_ids)
    sums = (cells.values("table_id", "gaming_day")
            .annotate(**{f"s_{n}": Sum(n) for n in REPORT_SUMS})
            .order_by("table_id", "gaming_day"))
    names = dict(Table.objects.values_list("pk", "name"))
    rows = []
    for s in sums:
        if not s["s_coups"]:
            continue
        rows.append({
            "table_id": s["table_id"], "table": names.get(s["table_id"], ""),
            "gaming_day": s["gaming_day"].isoformat(),
            **{n: int(s[f"s_{n}"]) for n in REPORT_SUMS[:4]},
            "covered": f"{s['s_covered']:.2f}",
            "commission": f"{s['s_commission']:.2f}",
        })
    total = {"coups": sum(r["coups"] for r in rows),
             "commission": f"{sum(_dec(r['commission']) for r in rows):.2f}"}
    from audit.reports.sheets import software_version

    if closing:  # nothing signed over a chain unchecked (casino/chain_check.py)
        chain_checked(closing["row"], closing["hash"], closing["link"])

    stamp = {
        "title": "Commission report",
        "period": f"gaming days {sel.from_day} to {sel.to_day}",
        "tables": sel.table_ids or "all",
        "group_by": "table and gaming day",
        "rows_sha256": _rows_digest(rows),
        "total": total,
        "trail_anchor": (f"row {closing['row']} {closing['hash']}"
                         if closing else ""),
        "trail_anchor_link": closing["link"] if closing else "",
        # the closing anchor's time, not the build's: the same bytes each time
        "generated_at": closing["at"] if closing else "",
        "software_version": software_version(),
    }
    return {"stamp": signed.stamp_signed(stamp), "rows": rows}


def _dec(text: str):
    from decimal import Decimal

    return Decimal(text)


def _rows_digest(rows: list[dict]) -> str:
    import hashlib

    return hashlib.sha256(_dumps(rows).encode("utf-8")).hexdigest()
