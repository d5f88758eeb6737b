"""The verification, part by part (the steps of verify_evidence.py's
docstring)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from datetime import date
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

from . import complete, witnessed
from .common import (
    CHILD_LABELS,
    FORMAT,
    OPTIONAL_PARTS,
    PARTS,
    ZERO,
    Problems,
    Unreadable,
    body,
    dumps,
    load_engine,
    name_of,
    sha256_hex,
    signature_check,
    stamp_bytes,
    statement_bytes,
)
from .named import Named
from .reading import (
    MANIFEST,
    Tally,
    blocks,
    json_member,
    manifest_check,
    open_bundle,
    parse,
    raw_lines,
)
from .resettle import Resettlers, default_jobs
from .tsa import _tsa_check

# A ledger line as the casino writes it (ledger.py `_line`): id, key and
# label, then the row's canonical JSON up to the line's closing brace.
LINE = re.compile(rb'\{"id":(0|-?[1-9][0-9]{0,18}),"key":"([0-9A-Za-z#._-]{1,64})",'
                  rb'"label":"([a-z_]{1,40}\.[a-z_]{1,40})","row":(?=\{)')


class Verifier:
    def __init__(self, bundle: Path, keys: dict, tsa_cert=None, engine=None,
                 jobs: int | None = None, witness_keys=(), quorum=None):
        self.path, self.keys, self.tsa_cert = bundle, keys, tsa_cert
        self.witness_keys, self.quorum = list(witness_keys), quorum
        self.jobs = default_jobs() if jobs is None else jobs
        self.engine, self.engine_digest = engine or load_engine()
        self.problems = Problems()
        self.named = Named()
        self.complete = complete.Completeness(self.named)
        self.house_rules: dict[str, dict] = {}  # for outside.jsonl's coups
        self.corrected: list[list[dict]] = []  # from resettle.py
        self.to_bind: list[tuple[str, str, str]] = []
        self.sums: dict[tuple, dict] = {}
        self.counts = Counter()
        self.notes: list[str] = []
        self.at = "the bundle"  # where the reading is: for a message
        self.defaults: dict[str, dict] = {}

    # .. reading ..
    def open(self) -> None:
        self.zip = open_bundle(self.path)
        self.manifest = json_member(self.zip, MANIFEST)
        if not isinstance(self.manifest, dict) or self.manifest.get(
                "format") != FORMAT:
            found = self.manifest.get("format") if isinstance(
                self.manifest, dict) else None
            raise Unreadable(f"{self.path}: format {str(found)[:100]!r}, this "
                             f"program reads {FORMAT}")
        manifest_check(self.manifest)
        self.fields = self.manifest["fields"]
        self.tz = ZoneInfo(self.manifest["time_zone"])
        self.from_day = date.fromisoformat(self.manifest["period"]["from"])
        self.to_day = date.fromisoformat(self.manifest["period"]["to"])
        self.tables = set(self.manifest.get("tables") or [])

    def lines(self, name: str, raw=None):
        """Each line of a JSON Lines part (or of `raw`, its raw_lines),
        parsed; `self.at` says where."""
        for n, line in raw if raw is not None else raw_lines(self.zip, name):
            self.at = f"{name} line {n}"
            yield parse(line, self.at)

    def part_read(self, name: str, tally: Tally) -> None:
        """A part read whole by its check: its digest against the manifest's."""
        stated = self.manifest["parts"][name]
        if tally.sha.hexdigest() != stated["sha256"] or tally.bytes != stated[
                "bytes"]:
            self.problems.insert(0, f"part {name}: its SHA-256 is not the "
                                 "manifest's (the file was changed after it was "
                                 "built)")

    def full(self, label: str, row: dict) -> dict:
        """A row with the fields it leaves at their default put back."""
        defaults = self.defaults.get(label)
        if defaults is None:  # once per label
            defaults = self.defaults[label] = {
                name: spec["default"] for name, spec in self.fields[label].items()
                if "default" in spec}
        return {**defaults, **row}

    # 1. the parts
    def check_parts(self) -> None:
        parts = self.manifest.get("parts", {})
        for name in (*PARTS, *(p for p in OPTIONAL_PARTS if p in parts)):
            if name not in parts:
                raise Unreadable(f"manifest: no part {name}")
            if name in ("ledger.jsonl", "log.jsonl"):
                if name not in self.zip.NameToInfo:
                    raise Unreadable(f"the bundle has no part {name}")
                continue  # hashed as their checks read them (part_read)
            digest, size = hashlib.sha256(), 0
            if name not in self.zip.NameToInfo:
                raise Unreadable(f"the bundle has no part {name}")
            if self.zip.getinfo(name).file_size == parts[name]["bytes"]:
                # (a part of another size cannot have the digest: not read)
                for block in blocks(self.zip, name):
                    digest.update(block)
                    size += len(block)
            if digest.hexdigest() != parts[name]["sha256"] or size != parts[name][
                    "bytes"]:
                self.problems.add(f"part {name}: its SHA-256 is not the manifest's "
                                  "(the file was changed after it was built)")

    # 2. anchors
    def check_anchors(self) -> list[dict]:
        anchors, most = [], len(self.manifest["windows"])
        for a in self.lines("anchors.jsonl"):
            anchors.append(a)
            if len(anchors) > most:  # one closes each window
                raise Unreadable(f"anchors.jsonl: more anchors than the "
                                 f"manifest's {most} windows")
        for a in anchors:
            what = f"anchor of row {a.get('row')}"
            problem = signature_check(self.keys, statement_bytes(a),
                                      a.get("signature"), a.get("signing_key_id"),
                                      what)
            if problem:
                self.problems.add(problem)
            if self.tsa_cert is None:
                continue
            if not a.get("tsa_token"):
                self.problems.add(f"{what}: no time-stamp token (the authority "
                                  "had not answered when the bundle was built)")
                continue
            problem = _tsa_check(a["tsa_token"], statement_bytes(a), self.tsa_cert,
                                 what)
            if problem:
                self.problems.add(problem)
        if self.tsa_cert is None:
            self.notes.append("time-stamp tokens not checked (no --tsa-cert)")
        return anchors

    # 2b. the checkpoints (witnessed.py)
    def check_checkpoints(self) -> None:
        from cryptography.hazmat.primitives import serialization

        raw = [k.public_bytes(serialization.Encoding.Raw,
                              serialization.PublicFormat.Raw)
               for k in self.keys.values()]
        self.witnessed = witnessed.Witnessed(
            raw, self.manifest.get("witness_keys", []), self.witness_keys,
            self.quorum)
        if witnessed.PART not in self.manifest["parts"]:
            self.witnessed.carried = False
            return
        self.witnessed.read(self.lines(witnessed.PART), lambda: self.at)

    # 3. the log
    def check_log(self, anchors: list[dict]) -> None:
        windows = self.manifest["windows"]
        if len(anchors) != len(windows):
            self.problems.add(f"{len(windows)} log windows but {len(anchors)} "
                              "anchors closing them")
            return
        tally = Tally()
        raw = raw_lines(self.zip, "log.jsonl", tally)
        try:
            self.walk_log(self.lines("log.jsonl", raw), windows, anchors)
        finally:
            for _ in raw:  # the rest of the part, for its digest
                pass
        self.part_read("log.jsonl", tally)
        self.named.flush()

    def walk_log(self, rows, windows: list[dict], anchors: list[dict]) -> None:
        # what every row does, as local names (a month is 1.5M rows, 5M
        # entries): the index's queue (Named.add's, flushed every 20,000)
        pending, flush = self.named.pending, self.named.flush
        updated = self.complete.entry  # a row the design updates
        skipped = complete.NOT_CARRIED
        for number, (window, anchor) in enumerate(zip(windows, anchors,
                                                       strict=True)):
            prev, last_id, n = window["seed"], None, 0
            tree = self.witnessed.window(number)
            leaf = tree.row
            expected_first = window["first"]
            for r in rows:
                n += 1
                rid = r["id"]
                if last_id is None and rid != expected_first:
                    self.problems.add(f"log window {expected_first}-{window['last']}"
                                      f": starts at row {rid}")
                if last_id is not None and rid <= last_id:
                    self.problems.add(f"log row {rid}: out of order after {last_id}")
                link = sha256_hex(body(prev, r))
                if link != r.get("link"):
                    self.problems.add(
                        f"log row {rid} ({r.get('action')}): its link does not "
                        "match its content and the row before it (the row was "
                        "changed, or a row before it removed or inserted)")
                    return
                for label, entries in (r.get("ledger") or {}).items():
                    if label in skipped:  # complete.required
                        continue
                    if label in CHILD_LABELS:  # keyed "parent#position"
                        for k, digest in entries.items():
                            if type(digest) is list:
                                updated(label, k, digest)
                                digest = digest[1]
                            pending.append((label, k, digest, rid,
                                            int(k.partition("#")[0])))
                        continue
                    parent = None
                    if label == "tables.coup" and isinstance(r.get("new"), dict):
                        parent = r["new"].get("shoe")
                    for k, digest in entries.items():
                        if type(digest) is list:
                            updated(label, k, digest)
                            digest = digest[1]
                        pending.append((label, k, digest, rid, parent))
                if len(pending) >= 20000:
                    flush()
                leaf(rid, link)
                prev, last_id = link, rid
                if rid == window["last"]:
                    break
            tree.end()
            if last_id != window["last"] or last_id != anchor.get("row"):
                self.problems.add(
                    f"log window {expected_first}-{window['last']}: ends at row "
                    f"{last_id}, its anchor names row {anchor.get('row')} (rows "
                    "were removed from the end)")
            elif prev != anchor.get("link"):
                self.problems.add(
                    f"log row {last_id}: its link is not the signed anchor's "
                    "(the log was rewritten up to the anchor)")
            self.counts["log rows"] += n

    # 4. the ledger rows against the log (5, their re-settlement: resettle.py)
    def check_ledger(self) -> None:
        """Each row's digest against the latest log row naming it. A line
        as the casino writes it (`{"id":..,"key":..,"label":..,"row":{..}}`,
        canonical) is not parsed here: its digest is the SHA-256 of its
        `row` bytes as they stand. Only the casino's canonical JSON of a row
        can have the digest the log recorded, so a line shaped otherwise,
        or a `row` that is not exactly that JSON, cannot pass for it; such a
        line is parsed and its row re-encoded (the slow path)."""
        tally, known = Tally(), self.fields
        for n, raw in raw_lines(self.zip, "ledger.jsonl", tally):
            m = LINE.match(raw)
            if m is not None and raw.endswith(b"}"):
                key, label = m[2].decode(), m[3].decode()
                row_digest = sha256_hex(raw[m.end():-1])
            else:
                self.at = f"ledger.jsonl line {n}"
                item = parse(raw, self.at)
                label, key = item["label"], item["key"]
                row_digest = sha256_hex(dumps(item["row"]).encode("utf-8"))
            self.complete.ledger_line(label, key)
            if label == "tables.houserules":  # a few, before the sessions
                self.at = f"ledger.jsonl line {n}"
                self.house_rules[key] = parse(raw, self.at)["row"]
            self.to_bind.append((label, key, row_digest))
            if len(self.to_bind) >= self.BATCH:
                self.check_bound()
            self.counts[label if label in known else "rows of no known kind"] += 1
        self.part_read("ledger.jsonl", tally)
        self.complete.outside(self, self.outside_lines())
        self.check_bound()
        self.complete.leftovers(self)

    def outside_lines(self):
        """(item, digest) of each line of outside.jsonl. A line as the casino
        writes it is read as check_ledger reads one (its row's digest from
        its bytes; only a coup's row is parsed, for its table and day); any
        other is parsed whole (digest None: its row is encoded again)."""
        name = complete.PART
        for n, raw in raw_lines(self.zip, name):
            m = LINE.match(raw)
            if m is None or not raw.endswith(b"}"):
                self.at = f"{name} line {n}"
                yield parse(raw, self.at), None
                continue
            item = {"label": m[3].decode(), "key": m[2].decode()}
            if item["label"] == "tables.coup":
                self.at = f"{name} line {n}"
                item["row"] = parse(raw[m.end():-1], self.at)
            yield item, sha256_hex(raw[m.end():-1])

    def bind(self, label: str, key: str, row: dict) -> None:
        """A row given parsed (outside.jsonl's): checked as check_ledger's."""
        self.bound(label, key, sha256_hex(dumps(row).encode("utf-8")))

    def bound(self, label: str, key: str, digest: str) -> None:
        self.to_bind.append((label, key, digest))
        if len(self.to_bind) >= self.BATCH:
            self.check_bound()

    BATCH = 500

    def check_bound(self) -> None:
        batch, self.to_bind = self.to_bind, []
        distinct = list(dict.fromkeys((label, key) for label, key, _ in batch))
        found = self.named.take(distinct) if distinct else {}
        seen_here: set = set()
        for label, key, digest in batch:
            mine = found.get((label, key))
            if mine is not None and mine[2] == 1 and digest == mine[0] and (
                    label, key) not in seen_here:
                seen_here.add((label, key))
                continue  # as the log wrote it (nearly every row)
            what = name_of(label, key)
            if (label, key) in seen_here or (mine and mine[2] > 1):
                self.problems.add(f"{what}: in the bundle more than once")
            elif mine is None:
                self.problems.add(f"{what}: no log row in the bundle wrote it "
                                  "(inserted behind the application's back)")
            elif mine[0] is None:
                self.problems.add(f"{what}: log row {mine[1]} deleted it, yet it "
                                  "is in the bundle")
            elif digest != mine[0]:
                self.problems.add(f"{what}: differs from what log row {mine[1]} "
                                  "recorded (the row was edited)")
            seen_here.add((label, key))

    # 6. the report
    def check_report(self) -> dict:
        self.at = "report.json"
        data = json_member(self.zip, "report.json")
        stamp, rows = data.get("stamp", {}), data.get("rows", [])
        complete.report_belongs(self, stamp, self.anchors)
        problem = signature_check(self.keys, stamp_bytes(stamp),
                                  stamp.get("signature"), stamp.get("signing_key_id"),
                                  "the report's stamp")
        if problem:
            self.problems.add(problem)
        if sha256_hex(dumps(rows).encode("utf-8")) != stamp.get("rows_sha256"):
            self.problems.add("the report's rows: their SHA-256 is not the one its "
                              "signed stamp states (a row was changed)")
        stated = {(r["table_id"], r["gaming_day"]): r for r in rows}
        for cell in sorted(set(stated) | set(self.sums), key=str):
            got = self.sums.get(cell)
            row = stated.get(cell)
            table, day = cell
            where = f"table {table} ({row['table'] if row else '?'}), gaming day {day}"
            if row is None:
                self.problems.add(f"report: {where} is missing; the coups re-settle "
                                  f"to commission {got['commission']}")
                continue
            got = got or {"coups": 0, "banker_wins": 0, "punter_wins": 0,
                          "ties": 0, "covered": ZERO, "commission": ZERO}
            for name in ("coups", "banker_wins", "punter_wins", "ties"):
                if int(row[name]) != got[name]:
                    self.problems.add(f"report: {where}: {name} {row[name]}, the "
                                      f"bundle's coups give {got[name]}")
            for name in ("covered", "commission"):
                if Decimal(row[name]) != got[name]:
                    self.problems.add(f"report: {where}: {name} {row[name]}, "
                                      f"re-settled {got[name]:.2f}")
        total = sum((Decimal(r["commission"]) for r in rows), ZERO)
        if f"{total:.2f}" != (stamp.get("total") or {}).get("commission"):
            self.problems.add(f"report: its rows add up to {total:.2f}, its stamp "
                              f"states {(stamp.get('total') or {}).get('commission')}")
        return data

    def in_period(self, table_id, day: str) -> bool:
        d = date.fromisoformat(day)
        return (self.from_day <= d <= self.to_day
                and (not self.tables or table_id in self.tables))

    def run(self) -> int:
        self.open()
        # the coups are re-settled in other processes meanwhile (resettle.py)
        with Resettlers(self, self.jobs) as resettlers:
            self.check_parts()
            anchors = self.anchors = self.check_anchors()
            self.check_checkpoints()
            self.check_log(anchors)
            problems, notes = self.witnessed.finish(self.manifest["windows"])
            for problem in problems:
                self.problems.add(problem)
            self.notes += notes
            try:
                self.check_ledger()
                n, size = self.named.size()
                self.notes.append(
                    f"the log names {n} ledger rows: indexed in a temporary file "
                    f"of {size / 1e6:.1f} MB (at most 64 MB of it in memory)")
                resettlers.merge()
                # the revision settled, against the log's index (here: the
                # processes re-settling see only their sessions, not the log)
                for group in self.corrected:
                    self.complete.settled(self, group)
            finally:
                self.named.close()
        self.report = self.check_report()
        return 1 if self.problems else 0
