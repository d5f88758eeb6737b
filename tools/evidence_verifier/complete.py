"""What tools/verify_evidence.py checks of a bundle's completeness and of
its report's place in it. Standard library only (no Django), loadable by
path on its own.

Completeness, by the log and not by a list of kinds. Every log row of the
bundle's windows names each ledger row it wrote, by label and key, with the
digest it left the row at (`ledger`: a digest, or [before, after] for a row
the design updates; after null for a row deleted). The bundle must hold
every row so named at the digest the *latest* such write gives, whatever
its kind, except the kinds of `NOT_CARRIED` (who may do what, not what
happened at the tables), which are named here with their reason. A kind
added later is therefore required without touching this file.

The period's rows are in `ledger.jsonl` (re-settled); every other row the
windows wrote (another table's, another day's, a gaming-day close...) is in
`outside.jsonl`, checked against the log the same way and not re-settled
(a coup of the period's tables and days given there is named).
A row the design updates (its entries are [before, after]) that does not
belong to the period's sessions and was written again after the windows
cannot be given at the windows' state: `outside.jsonl` names it with
`"later": true` instead of its content. Such a marker is refused for any
other row: a row written once (a coup, a stake, a decision, a count...)
never changes, and the period's own rows are given whole.

The windows themselves are the bundle's to state, and a window may end at
any signed anchor: a forger could cut the log in two at beat's anchors and
leave out the stretch between, with what it wrote. So every row of the
period's sessions (all of ledger.jsonl after its first session) must have
been last written within the last window, which the build starts at the row
that opened the first of them; only the rows before it (tables, house rules,
tableau versions) may come from windows of their own.

The report belongs to the bundle: its signed stamp names the anchor that
closes the bundle's last window (row, digest and public link), and the same
period and tables as the manifest. A report stamped at another head (an
older bundle's rows beside a newer report, or the reverse) is refused.
"""

from __future__ import annotations

PART = "outside.jsonl"

# Kinds bound to the trail that no bundle carries: they hold secrets (a
# password's hash, a token's or a PIN's digest) or run the servers, and
# re-settling a coup reads none of them. The log rows that wrote them are in
# the bundle all the same (their digests are part of the links).
NOT_CARRIED = {
    "auth.user": "people and their password hashes",
    "auth.group": "roles",
    "auth.user_groups": "who holds which role",
    "auth.group_permissions": "what a role may do",
    "auth.user_user_permissions": "what a person may do",
    "casino.apitoken": "API tokens' digests",
    "tablet.tabletprofile": "tablet PINs' hashes",
    "django_celery_beat.periodictask": "the servers' schedules",
    "django_celery_beat.crontabschedule": "the servers' schedules",
    "django_celery_beat.intervalschedule": "the servers' schedules",
    "django_celery_beat.solarschedule": "the servers' schedules",
    "django_celery_beat.clockedschedule": "the servers' schedules",
}


def required(label: str) -> bool:
    """Whether a bundle must carry the rows of this kind that its windows
    write (every kind but NOT_CARRIED's, including kinds unknown here)."""
    return label not in NOT_CARRIED


class Completeness:
    """Beside the verifier's index of what the log names (`Named`, a SQLite
    file): which of those rows the design updates (their entries were
    [before, after]), and which `outside.jsonl` says were written again
    after the windows."""

    def __init__(self, named):
        self.named = named
        named.db.executescript("""
            CREATE TABLE updatable (label TEXT, key TEXT,
                                    PRIMARY KEY (label, key)) WITHOUT ROWID;
            CREATE TABLE later (label TEXT, key TEXT,
                                PRIMARY KEY (label, key)) WITHOUT ROWID;
            CREATE TABLE outside (label TEXT, key TEXT,
                                  PRIMARY KEY (label, key)) WITHOUT ROWID;
        """)
        if not named.db.in_transaction:  # executescript committed Named's
            named.db.execute("BEGIN")
        self.pending: list[tuple[str, str]] = []
        self.recent: set[tuple[str, str]] = set()
        self.early: set[tuple[str, str]] = set()
        self.in_sessions = False
        self.outside_keys: list[tuple[str, str]] = []

    def entry(self, label: str, key: str, raw) -> None:
        """One entry of a log row's `ledger`, as written (`raw`)."""
        # a shoe or a turn is written again by each of its coups: the rows
        # seen lately are not queued again (a bounded set, not every row)
        if type(raw) is list and (label, key) not in self.recent:
            if len(self.recent) >= 50000:
                self.recent.clear()
            self.recent.add((label, key))
            self.pending.append((label, key))
            if len(self.pending) >= 20000:
                self.flush()

    def flush(self) -> None:
        self.named.db.executemany(
            "INSERT OR IGNORE INTO updatable VALUES (?, ?)", self.pending)
        self.pending = []

    def ledger_line(self, label: str, key: str) -> None:
        """A row of ledger.jsonl, in order: those before its first session
        (the tables, house rules and tableau versions, written long before
        the period: each with a window of its own) are the only ones that
        may have been written before the last window."""
        if self.in_sessions:
            return
        if label == "tables.tablesession":
            self.in_sessions = True
            return
        self.early.add((label, key))

    # .. outside.jsonl ..
    def outside(self, v, lines) -> None:
        """Each row of `outside.jsonl` checked against the log like a ledger
        row (`v.bind`); a "later" marker only for a row the design updates
        that the period's rows do not hold. `lines` gives (item, digest):
        the digest of the row's bytes for a line as the casino writes it
        (verifier.py `outside_lines`: the item is then its label and key,
        and a coup's row), None for a line parsed whole."""
        for item, digest in lines:
            label, key = item.get("label"), item.get("key")
            if not isinstance(label, str) or not isinstance(key, str):
                v.problems.add(f"{PART}: a line without its label and key")
                continue
            if digest is not None:
                v.bound(label, key, digest)
            elif item.get("later") is True:
                self.named.db.execute("INSERT OR IGNORE INTO later VALUES (?, ?)",
                                      (label, key))
                continue
            elif not isinstance(item.get("row"), dict):
                v.problems.add(f"{PART}: {label} {key} without its row")
                continue
            else:
                v.bind(label, key, item["row"])
            v.counts[f"outside: {label}"] += 1
            self.outside_keys.append((label, key))
            if len(self.outside_keys) >= 20000:
                self._flush_outside()
            if label == "tables.coup":
                self._not_the_periods(v, key, item["row"])

    @staticmethod
    def _not_the_periods(v, key: str, row: dict) -> None:
        """A coup of the period's tables and days belongs to the ledger part,
        where it is re-settled and counted against the report."""
        rules = v.house_rules.get(str(row.get("rules_id")))
        day = row.get("gaming_day")
        if rules is not None and isinstance(day, str) and v.in_period(
                rules["table_id"], day):
            v.problems.add(f"coup {key}: played at table {rules['table_id']} on "
                           f"{day}, in the period, yet given in {PART} (not "
                           "re-settled)")

    def _flush_outside(self) -> None:
        self.named.db.executemany("INSERT OR IGNORE INTO outside VALUES (?, ?)",
                                  self.outside_keys)
        self.outside_keys = []

    # .. what is missing ..
    def missing(self) -> list[tuple]:
        """(label, key, rid, why) of each row the windows' log rows wrote
        (their latest write left it present) that the bundle does not hold,
        and of each "later" marker it may not use."""
        self.flush()
        return self.named.db.execute("""
            SELECT n.label, n.key, n.rid, 'missing' FROM named n
             WHERE n.seen = 0 AND n.digest IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM later l JOIN updatable u
                                   ON u.label = l.label AND u.key = l.key
                                WHERE l.label = n.label AND l.key = n.key)
            UNION ALL
            SELECT l.label, l.key, n.rid, 'later' FROM later l
              LEFT JOIN named n ON n.label = l.label AND n.key = l.key
             WHERE n.seen > 0 OR NOT EXISTS (
                   SELECT 1 FROM updatable u
                    WHERE u.label = l.label AND u.key = l.key)
             ORDER BY 1, 2""").fetchall()

    def before_the_last_window(self, v) -> None:
        """The period's sessions were all written within the last window (it
        runs from the row that opened the first of them to the closing
        anchor): a row of theirs last written before it means the log
        between two windows was left out, and what it wrote with it (a
        window may end at any signed anchor and another start after it)."""
        windows = v.manifest.get("windows") or []
        if not windows or not isinstance(windows[-1], dict):
            return
        self._flush_outside()
        first = windows[-1].get("first")
        early = self.early
        found = self.named.db.execute("""
            SELECT label, key, rid FROM named n
             WHERE n.seen > 0 AND n.rid < ? AND NOT EXISTS (
                   SELECT 1 FROM outside o WHERE o.label = n.label
                                             AND o.key = n.key)
             ORDER BY rid""", (first,)).fetchall()
        for label, key, rid in (f for f in found if f[:2] not in early):
            v.problems.add(
                f"{label.split('.')[-1]} {key}: last written by log row {rid}, "
                f"before the bundle's last window (from row {first}): the log "
                "between its windows, and what it wrote, is not all there")
            if len(v.problems) > 200:
                break

    def leftovers(self, v) -> None:
        self.before_the_last_window(v)
        for label, key, rid, why in self.missing():
            name = f"{label.split('.')[-1]} {key}"
            if why == "missing":
                v.problems.add(f"{name}: written by log row {rid}, missing from "
                               "the bundle (the row was removed)")
            elif rid is None:
                v.problems.add(f"{name}: {PART} says it was written after the "
                               "bundle's windows, but no log row of the "
                               "windows wrote it")
            else:
                v.problems.add(f"{name}: {PART} says it was written again after "
                               f"the bundle's windows, but log row {rid} wrote "
                               "it once and for all, or the bundle holds it: "
                               "it must be given as that row left it")

    def settled(self, v, group: list[dict]) -> None:
        """The coup settled for a (shoe, seq), its highest revision (the last
        of `group`, the revisions in the bundle), is the one the log wrote
        last: revisions renumbered would leave an older one settled. (A later
        revision removed is named as missing.) Asked only where a seq has
        several revisions: a corrected coup. In the main process: the
        re-settling ones send each such group's keys, shoe and seq."""
        keys = [c["_key"] for c in group]
        rids = dict(self.named.db.execute(
            "SELECT key, rid FROM named WHERE label = 'tables.coup' AND key IN "
            f"({','.join('?' * len(keys))})", keys).fetchall())
        last = group[-1]
        latest = max(keys, key=lambda k: rids.get(k, -1))
        if latest != last["_key"] and last["_key"] in rids:
            v.problems.add(
                f"coup {last['_key']} (shoe {last['shoe_id']}, seq {last['seq']}):"
                f" settled as the latest revision (log row {rids[last['_key']]}), "
                f"but log row {rids[latest]} wrote coup {latest} of the same seq "
                "after it")


def report_belongs(v, stamp: dict, anchors: list[dict]) -> None:
    """The report's signed stamp names the anchor closing the bundle, and
    the bundle's period and tables (module docstring)."""
    closing = anchors[-1] if anchors else {}
    named = str(stamp.get("trail_anchor") or "")
    expected = f"row {closing.get('row')} {closing.get('hash')}"
    if not closing or named != expected or stamp.get(
            "trail_anchor_link") != closing.get("link"):
        v.problems.add(
            f"the report's stamp names trail anchor {named or '(none)'!r}, but "
            f"the bundle closes at {expected!r}: the report is not this "
            "bundle's (stamped at another head of the log)")
    m = v.manifest
    period = f"gaming days {v.from_day} to {v.to_day}"
    if stamp.get("period") != period:
        v.problems.add(f"the report's stamp is for {stamp.get('period')!r}, the "
                       f"bundle for {period!r}")
    tables = m.get("tables") or "all"
    if stamp.get("tables") != tables:
        v.problems.add(f"the report's stamp is for tables {stamp.get('tables')!r}"
                       f", the bundle for {tables!r}")
