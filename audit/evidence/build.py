"""Build a period's evidence bundle (`manage.py evidence`, the reports
page's download): one ZIP of JSON Lines parts and a manifest with their
SHA-256 digests. The format is described in tools/verify_evidence.py, the
program that checks it, and in the README ("For the regulator").

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

from collections.abc import Callable
from datetime import date
from pathlib import Path

from django.conf import settings
from django.db.models import Max, Min, Sum

from casino.models import ChangeLog, Seal
from casino.trail import BOUND, GENESIS, _dumps, _when
from tables.models import Table, TableDayRollup

from . import signed
from .rows import LABELS, fields_of, keyed_rows
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
CHILDREN = {label for label in LABELS if BOUND[label]}


class EvidenceError(Exception):
    pass


def _line(obj) -> bytes:
    return _dumps(obj).encode("utf-8") + b"\n"


class _Progress:
    def __init__(self, callback: Callable[[int, int], None] | None):
        self.callback, self.done, self.expected = callback, 0, 0

    def step(self, n: int = 1) -> None:
        self.done += n
        if self.callback and self.done % CHUNK == 0:
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
    try:
        members = _write_ledger(bundle, querysets, sel.sessions, prog)
        with bundle.part("context.jsonl") as part:
            for _key, pk, row in keyed_rows("audit.flag", querysets["audit.flag"]):
                part.write(_line({"label": "audit.flag", "id": pk, "row": row}))
        windows, anchors = _windows(sel, members)
        prog.expected += sum(_count(w) for w in windows)
        with bundle.part("log.jsonl") as part:
            for window in windows:
                _write_log(part, window, prog)
        with bundle.part("anchors.jsonl") as part:
            for anchor in anchors:
                part.write(_line(anchor))
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
            "parts": dict(bundle.parts),
        }
        with bundle.part("manifest.json") as part:
            part.write(_dumps(manifest).encode("utf-8") + b"\n")
    finally:
        bundle.close()
    prog.end()
    return manifest


# -- the ledger -----------------------------------------------------------------

GLOBAL = ("tables.tableauversion", "tables.table", "tables.houserules")
PER_SESSION = ("tables.shoe", "tables.shoefinding", "tables.shoerelease",
               "tables.bankerturn")
AFTER_COUPS = ("audit.cagnottecount", "audit.cagnotteattestation")
SESSION_OF = {
    "tables.shoe": "session_id", "tables.shoefinding": "shoe__session_id",
    "tables.shoerelease": "shoe__session_id", "tables.bankerturn": "session_id",
    "tables.coup": "shoe__session_id", "tables.stake": "coup__shoe__session_id",
    "tables.finding": "coup__shoe__session_id",
    "audit.cagnottecount": "session_id",
    "audit.cagnotteattestation": "count__session_id",
}


def _write_ledger(bundle: Bundle, querysets: dict, sessions: list[int],
                  prog: _Progress) -> dict[str, set[str]]:
    """ledger.jsonl: {"label", "key", "id", "row"} per row. The tableau
    versions, tables and house rules; then session by session: the session,
    its shoes (their findings and releases), its turns, its coups in dealing
    order each followed by its stakes and findings, its counts and their
    attestations; the flag decisions last. So the verifier walks one session
    at a time. Returns the keys written per label (child rows: none, their
    parents' keys stand for them)."""
    members: dict[str, set[str]] = {label: set() for label in LABELS}

    def emit(part, label, rows) -> None:
        for key, pk, row in rows:
            if label not in CHILDREN:
                members[label].add(key)
            part.write(_line({"label": label, "key": key, "id": pk, "row": row}))
            prog.step()

    with bundle.part("ledger.jsonl") as part:
        for label in GLOBAL:
            emit(part, label, keyed_rows(label, querysets[label]))
        for sid in sessions:
            emit(part, "tables.tablesession", keyed_rows(
                "tables.tablesession", querysets["tables.tablesession"]
                .filter(pk=sid)))
            mine = {label: querysets[label].filter(**{SESSION_OF[label]: sid})
                    for label in SESSION_OF}
            shoes = list(keyed_rows("tables.shoe", mine["tables.shoe"]))
            emit(part, "tables.shoe", shoes)
            for label in PER_SESSION[1:]:
                emit(part, label, keyed_rows(label, mine[label]))
            number = {pk: row["number"] for _, pk, row in shoes}
            coups = sorted(keyed_rows("tables.coup", mine["tables.coup"]),
                           key=lambda c: (number[c[2]["shoe_id"]], c[2]["seq"],
                                          c[2].get("revision", 1)))
            children = {label: _by_parent(keyed_rows(label, mine[label]))
                        for label in ("tables.stake", "tables.finding")}
            for coup in coups:
                emit(part, "tables.coup", [coup])
                for label in ("tables.stake", "tables.finding"):
                    emit(part, label, children[label].get(coup[1], ()))
            for label in AFTER_COUPS:
                emit(part, label, keyed_rows(label, mine[label]))
        emit(part, "audit.flagevent", keyed_rows("audit.flagevent",
                                                 querysets["audit.flagevent"]))
    return members


def _by_parent(rows) -> dict[int, list]:
    out: dict[int, list] = {}
    for key, pk, row in rows:
        out.setdefault(int(key.partition("#")[0]), []).append((key, pk, row))
    return out


# -- the log segment ----------------------------------------------------------------

def _writers(lo: int, members: dict[str, set[str]]) -> tuple[int, dict]:
    """Scan the log from row `lo` to its head: the latest row naming any
    bundle row, and which of the older kinds it names."""
    coups = members["tables.coup"]
    latest, found = 0, {label: set() for label in OLDER}
    last = lo - 1
    while True:
        page = list(ChangeLog.objects.filter(id__gt=last).order_by("id")
                    .values_list("id", "ledger")[:CHUNK])
        if not page:
            return latest, found
        for rid, ledger in page:
            for label, entries in (ledger or {}).items():
                if label in CHILDREN:
                    if any(k.partition("#")[0] in coups for k in entries):
                        latest = rid
                    continue
                keys = members.get(label)
                if not keys:
                    continue
                named = keys.intersection(entries)
                if named:
                    latest = rid
                    if label in found:
                        found[label] |= named
        last = page[-1][0]


def _windows(sel: Selection, members: dict[str, set[str]]
             ) -> tuple[list[dict], list[dict]]:
    if not sel.sessions:
        return [], []
    opened = Seal.objects.filter(
        label="tables.tablesession", key__in=[str(s) for s in sel.sessions]
    ).aggregate(m=Min("log_id"))["m"]
    if opened is None:
        raise EvidenceError("the period's sessions are not in the trail")
    latest, found = _writers(opened, members)
    needed = [(opened, max(latest, opened))]
    for label in OLDER:
        missing = sorted(members[label] - found[label])
        if missing:
            older = (Seal.objects.filter(label=label, key__in=missing)
                     .values("key").annotate(m=Max("log_id")))
            needed += [(r["m"], r["m"]) for r in older]
    spans = []
    for start, end in sorted(needed):
        anchor = signed.anchor_covering(end)
        if anchor is None:
            raise EvidenceError(
                f"no signed anchor covers trail row {end}: is TRAIL_SIGNING_KEY "
                "set? (`manage.py trail_anchor` takes one)")
        if spans and start <= spans[-1][1] + 1:
            if anchor["row"] > spans[-1][1]:
                spans[-1][1:] = [anchor["row"], anchor]
        else:
            spans.append([start, anchor["row"], anchor])
    windows, anchors = [], []
    for start, end, anchor in spans:
        seed = (ChangeLog.objects.filter(id__lt=start).order_by("-id")
                .values_list("id", flat=True).first())
        seed = (seed, signed._link(seed)) if seed else None
        windows.append({"first": start, "last": end,
                        "seed_row": seed[0] if seed else None,
                        "seed": seed[1] if seed else GENESIS})
        anchors.append(anchor)
    return windows, anchors


def _count(window: dict) -> int:
    return ChangeLog.objects.filter(id__gte=window["first"],
                                    id__lte=window["last"]).count()


_INTERIM: dict[int, str] = {}


def _links(upto: int) -> dict[int, str]:
    """Interim (signed.links) while the change log has no link column."""
    if upto not in _INTERIM:
        _INTERIM.clear()
        _INTERIM.update(signed.links(upto))
    return _INTERIM


def _write_log(part, window: dict, prog: _Progress) -> None:
    last = window["first"] - 1
    column = signed.has_link_column()
    fields = LOG_FIELDS if column else [f for f in LOG_FIELDS if f != "link"]
    computed = {} if column else _links(window["last"])
    while True:
        page = list(ChangeLog.objects.filter(id__gt=last, id__lte=window["last"])
                    .order_by("id").values(*fields)[:CHUNK])
        if not page:
            return
        for row in page:
            row["at"] = _when(row["at"])
            if not column:
                row["link"] = computed[row["id"]]
            part.write(_line(row))
        prog.step(len(page))
        last = page[-1]["id"]


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

    stamp = {
        "title": "Commission report",
        "period": f"gaming days {sel.from_day} to {sel.to_day}",
        "tables": sel.table_ids or "all",
        "group_by": "table and gaming day",
        "rows_sha256": _rows_digest(rows),
        "total": total,
        "trail_anchor": (f"row {closing['row']} {closing['link']}"
                         if closing else ""),
        # the closing anchor's time, not the build's: the same bytes each time
        "generated_at": closing["at"] if closing else "",
        "software_version": software_version(),
    }
    return {"stamp": stamp, "signature": signed.sign_stamp(stamp), "rows": rows}


def _dec(text: str):
    from decimal import Decimal

    return Decimal(text)


def _rows_digest(rows: list[dict]) -> str:
    import hashlib

    return hashlib.sha256(_dumps(rows).encode("utf-8")).hexdigest()
