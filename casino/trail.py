"""The tamper-evident trail: a keyed hash chain over the change log, with every
ledger row bound to the log row that last wrote it.

Each change-log row holds the digest of the row before it (`prev_hash`) and
its own digest (`hash`): HMAC-SHA256, keyed with `TRAIL_KEY`, over a canonical
JSON list of the row's content and that link. The key comes from the
environment and is never stored in the database, so a database superuser
who edits, deletes or inserts a row cannot compute the digests that would
make the chain hold again. `key_id` (a fingerprint of the key, not the key)
says which key signed a row, so a rotated key's rows still verify
(`TRAIL_OLD_KEYS`).

A log row also carries `ledger`: the digest of every ledger row the write
inserted or changed (coups with their stakes and findings, banker turns,
shoes, house rules, cagnotte counts and attestations, flag decisions), keyed
by label and id ("tables.coup" → {"123": digest}); a coup's stakes and
findings by their coup and position ("123#0"), since they are inserted
together with it. The latest log row naming a ledger row holds its digest:
`verify_trail` re-computes every ledger row's digest and names the first one
that differs from the trail, has no trail row, or is missing.

Canonical means: keys sorted, no whitespace, times in UTC with microseconds,
decimals with their field's places, JSON through one encoder — what the
database gives back is what was digested, on SQLite and on PostgreSQL: a
value written in another form (900.0 into an integer, "1.5" into a decimal,
a naive datetime) is first brought to the one the database will give back
(casino/native.py), so the app's own writes never read as tampering.

A chain alone cannot show that its tail was cut off; anchors written outside
the database (casino/anchors.py) can, and `verify_trail` reads them.

The public link (`link`, issue 25 item 3): a second chain over the same
content that needs no secret, so that anyone holding a segment of the log and
a signed anchor of its head (casino/anchors.py, casino/signing.py) can walk
it. Exactly:

    link_i = hex(SHA-256(_body(prev_hash=link_{i-1}, at, user_id, device,
                               action, object_type, object_id, reason, old,
                               new, ledger)))

the same canonical body bytes as the HMAC's (`_body` below: a JSON list
`[prev, at, user_id, device, action, object_type, object_id, reason, old,
new]`, plus `ledger` as an 11th element when it is not empty/null; keys
sorted, separators "," and ":", ensure_ascii off, UTF-8; `at` as
"YYYY-MM-DDTHH:MM:SS.ffffffZ" in UTC; None of device, object_type,
object_id, reason as ""), with the previous row's link in place of
prev_hash; the first row's previous link is GENESIS ("0" * 64). Plain
SHA-256, no key. The HMAC (`hash`) stays, as the second signature: the link
proves the order and content to an outsider, the HMAC that nobody without
TRAIL_KEY rebuilt it. Every writer computes both (casino/changelog.py
log_rows_signed, which the PostgreSQL coup path uses too); the chain's head
as casino_chain_head returns it is the text hash || link (migration casino
0011), see `split_head`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

from .native import aware, decimal_places, native

GENESIS = "0" * 64
FIELDS = (
    "id", "at", "user_id", "device", "action", "object_type", "object_id",
    "reason", "old", "new", "ledger", "prev_hash", "hash", "key_id", "link",
)
# What a row's digests are made over (the row's content and its link).
CONTENT = (
    "at", "user_id", "device", "action", "object_type", "object_id", "reason",
    "old", "new", "ledger", "prev_hash",
)
# Any constant works; it only has to be the same for every writer of the log.
ADVISORY_LOCK_KEY = 0x43484E  # "CHN"

# The ledger rows bound to the chain: label -> the parent's attribute for rows
# written in one insert with their parent (keyed "parent#position"), or None
# for rows keyed by their own id (primary key).
BOUND: dict[str, str | None] = {
    "tables.tableauversion": None,
    "tables.table": None,
    "tables.houserules": None,
    "tables.tablesession": None,
    "tables.shoe": None,
    "tables.shoerelease": None,
    "tables.bankerturn": None,
    "tables.coup": None,
    "tables.stake": "coup_id",
    "tables.finding": "coup_id",
    "tables.shoefinding": None,
    "audit.cagnottecount": None,
    "audit.cagnotteattestation": None,
    "audit.flagevent": None,
    "audit.gamingdayclose": None,
    # what a surveillance alert stands on (audit/surveillance/run.py)
    "audit.surveillanceevidence": None,
    # who may do what: the people, their roles and grants (casino/accounts.py
    # binds them whatever path writes them: a service, the admin, the shell)
    "auth.user": None,
    "auth.group": None,
    "auth.user_groups": None,
    "auth.group_permissions": None,
    "auth.user_user_permissions": None,
    "casino.apitoken": None,
    "tablet.tabletprofile": None,
    # what runs when (the nightly close, the anchors): beat's schedules
    "django_celery_beat.periodictask": None,
    "django_celery_beat.crontabschedule": None,
    "django_celery_beat.intervalschedule": None,
    "django_celery_beat.solarschedule": None,
    "django_celery_beat.clockedschedule": None,
    # report jobs: what the nightly close skips, what a download serves (the
    # file's SHA-256 is sealed with the job's finishing write)
    "reports.reportjob": None,
}
# Rows of a bound model that the trail covers, where not all are: a flag's
# decisions (its other events are derived from the coups by flags_sync).
BOUND_ONLY: dict[str, dict[str, Any]] = {
    "audit.flagevent": {"action__in": ("confirmed", "dismissed")},
}
# Bound rows that the design updates or deletes after their insert. Their
# entries record the digest before and after the write ([before, after]:
# before None for a new row, after None for a row deleted), and the write
# path checks "before" against the row's last sealed state
# (casino/continuity.py): a row changed outside the application is never
# written over, so the next ordinary write cannot launder it.
UPDATABLE = frozenset({
    "tables.table", "tables.tablesession", "tables.shoe", "tables.bankerturn",
    "auth.user", "auth.group", "auth.user_groups", "auth.group_permissions",
    "auth.user_user_permissions", "casino.apitoken", "tablet.tabletprofile",
    "django_celery_beat.periodictask", "django_celery_beat.crontabschedule",
    "django_celery_beat.intervalschedule", "django_celery_beat.solarschedule",
    "django_celery_beat.clockedschedule", "reports.reportjob",
})
# Models whose state is checked against bound rows instead of being bound
# themselves (DERIVED_CHECKS, registered by their app).
DERIVED: dict[str, str] = {
    "audit.flag": "its review status and decider are its history's: decisions "
    "are bound flag events, and verify_trail and every decision replay them "
    "(audit/services/integrity.py); the rest copies its bound finding",
}
# Every other model, left out of the trail on purpose, and why. A model that
# is in none of BOUND, DERIVED and LEFT_OUT fails tests/insider/test_bound.py.
LEFT_OUT: dict[str, str] = {
    "casino.changelog": "the trail itself: chained and signed",
    "casino.seal": "an index of the trail, checked against it by verify_trail",
    "casino.benchrow": "the bench's bare endpoint only, never the product's",
    "casino.anchorrecord": "a copy of an anchor file, signed with the casino's "
    "Ed25519 key (a forged row has no valid signature); verify_trail expects "
    "its file and checks its signature there",
    "casino.timestamptoken": "an RFC 3161 token, signed by the time-stamp "
    "authority; verify_trail checks it against its anchor's statement",
    "casino.treenode": "the Merkle tree over the links (casino/merkle.py): "
    "re-computable from the change log, and a forged node gives a proof the "
    "witnesses and the verifier refuse",
    "casino.checkpoint": "a signed tree head (the log's Ed25519 key); "
    "verify_trail re-computes its root from the change log",
    "casino.cosignature": "a witness's cosignature, checked against the "
    "witness's configured key wherever it is read",
    "casino.witnessevent": "what the witnesses refused and the declared "
    "epochs: deleting one only lifts a stop the next push sets again",
    "admin.logentry": "Django admin's own history; the trail has every change",
    "auth.permission": "the catalogue of permission names that migrate writes; "
    "grants (group and user permissions) are bound",
    "contenttypes.contenttype": "the catalogue of model names that migrate writes",
    "sessions.session": "browser sign-ins: their data is signed with SECRET_KEY "
    "(a forged row is refused) and their user is checked against his sealed "
    "row at every request (casino/backends.py); a session key read from the "
    "table is a bearer secret, as a password hash is not",
    "axes.accessattempt": "failed sign-in counters: changing them can lock a "
    "name out or let it try again, never sign anyone in",
    "axes.accessfailurelog": "failed sign-in history of the lockout",
    "axes.accessattemptexpiration": "the lockout's cool-off times",
    "axes.accesslog": "the lockout's sign-in log",
    "tablet.pinattempts": "PIN attempt counters (as the sign-in lockout's)",
    "tables.dailyrollup": "sums derived from the coups; verify_ledger "
    "re-computes every cell from the cards",
    "tables.tabledayrollup": "sums derived from the coups (as dailyrollup)",
    "tables.croupiermonthrollup": "sums derived from the coups (as dailyrollup)",
    "tables.seatmonthrollup": "sums derived from the coups (as dailyrollup)",
    "audit.surveillancerun": "a run's progress; the evidence its alerts stand "
    "on is bound",
    "reports.reauditrun": "a re-audit's progress; it changes no record",
    "reports.reauditchunk": "a re-audit's progress",
    "reports.reauditfinding": "what a re-audit found, re-computable by running "
    "it again over the same coups; it changes no record",
    "django_celery_beat.periodictasks": "the marker beat polls to re-read its "
    "schedules, which are bound",
}
# Rows whose last sealed state the write path looks up (casino.Seal, an
# index of the trail): the updatable ones, and the append-only ones that a
# decision reads by reference (the rules a session plays, the tableau a
# version names, the gaming days already closed).
INDEXED = UPDATABLE | {
    "tables.houserules", "tables.tableauversion", "audit.gamingdayclose",
}
# Columns a digest leaves out: bookkeeping that no decision reads and that
# changes without a write of ours (a sign-in's time, beat's last run).
DIGEST_EXCLUDE: dict[str, frozenset[str]] = {
    "auth.user": frozenset({"last_login"}),
    "django_celery_beat.periodictask": frozenset(
        {"last_run_at", "total_run_count", "date_changed"}
    ),
    # a build's progress, and the broker's receipt (written after the build
    # when the task runs before its sender records it): what the job is, who
    # asked, its state, its file and the file's digest are sealed
    "reports.reportjob": frozenset(
        {"percent", "rows", "rows_expected", "dispatched_at", "task_id",
         "data_position"}
    ),
}


# -- keys ---------------------------------------------------------------------

def key_id_of(key: str) -> str:
    """A fingerprint naming a key in the rows it signs (not the key)."""
    return hashlib.sha256(b"chemmy-trail-key-id\0" + key.encode()).hexdigest()[:16]


def trail_keys() -> dict[str, bytes]:
    """Every key that may have signed a row: the current one and the retired
    ones of TRAIL_OLD_KEYS, by fingerprint."""
    from django.conf import settings

    keys = [settings.TRAIL_KEY, *settings.TRAIL_OLD_KEYS]
    return {key_id_of(k): k.encode() for k in keys if k}


def current_key() -> tuple[str, bytes]:
    from django.conf import settings

    return key_id_of(settings.TRAIL_KEY), settings.TRAIL_KEY.encode()


# -- canonical content ----------------------------------------------------------

def _when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _body(
    *,
    prev_hash: str,
    at: datetime,
    user_id: int | None,
    device: str,
    action: str,
    object_type: str,
    object_id: str,
    reason: str,
    old: Any,
    new: Any,
    ledger: Any = None,
) -> bytes:
    body = [
        prev_hash, _when(at), user_id, device or "", action, object_type or "",
        object_id or "", reason or "", old, new,
    ]
    if ledger:  # rows that bind no ledger row keep the shorter body
        body.append(ledger)
    return _dumps(body).encode("utf-8")


def row_digest(*, key: bytes, **row: Any) -> str:
    """HMAC-SHA256 (hex) of the row's canonical body; `row` holds prev_hash,
    at, user_id, device, action, object_type, object_id, reason, old, new and
    ledger."""
    return hmac.new(key, _body(**row), hashlib.sha256).hexdigest()


def link_digest(*, prev_link: str, **row: Any) -> str:
    """The public link (hex SHA-256, no key) of a row whose content is `row`
    (as row_digest takes it, prev_hash left out or ignored) after a row whose
    link is `prev_link`: see the module's docstring."""
    row = {k: v for k, v in row.items() if k != "prev_hash"}
    return hashlib.sha256(_body(prev_hash=prev_link, **row)).hexdigest()


def row_digests(*, key: bytes, prev_link: str, **row: Any) -> tuple[str, str]:
    """(HMAC, public link) of a row, from one serialisation of its body: the
    body starts with its JSON-quoted prev_hash, which the link's body has in
    place of it (the same bytes otherwise)."""
    body = _body(**row)
    prev = row["prev_hash"]
    if len(prev) != 64 or not body.startswith(b'["' + prev.encode() + b'",'):
        return row_digest(key=key, **row), link_digest(prev_link=prev_link, **row)
    linked = b'["' + prev_link.encode() + body[66:]
    return (hmac.new(key, body, hashlib.sha256).hexdigest(),
            hashlib.sha256(linked).hexdigest())


_DECIMAL, _JSON, _OTHER = 0, 1, 2
_UNSET = object()


@cache
def _digest_plan(model) -> tuple:
    """Per model, once: each digested field's attname, how its value is
    canonicalised, the value that leaves it out (see ledger_digest), and
    the type it has read back with the function that brings another form
    to it (casino/native.py)."""
    label = model._meta.label_lower
    parent = BOUND.get(label)
    excluded = DIGEST_EXCLUDE.get(label, ())
    plan = []
    for f in model._meta.concrete_fields:
        if f.primary_key or f.attname == parent or f.attname in excluded:
            continue
        internal = f.get_internal_type()
        kind = {"DecimalField": _DECIMAL, "JSONField": _JSON}.get(internal, _OTHER)
        quant = Decimal(1).scaleb(-f.decimal_places) if kind == _DECIMAL else None
        if f.has_default():
            omit = _UNSET if callable(f.default) else f.default  # _UNSET: kept
        else:
            omit = f.get_default()  # "" for a text field without NULL, else None
        plan.append((f.attname, kind, quant, omit, *native(f)))
    return tuple(plan)


@cache
def _plan(model) -> tuple:
    """Per model: (attname, kind, quant, omit) of each digested field."""
    return tuple(p[:4] for p in _digest_plan(model))


def _json_float(text: str) -> float | int:
    """A JSON number with a fraction or an exponent, as jsonb gives it back:
    PostgreSQL keeps the number's decimal text as a numeric, so 1e+16 comes
    back as the integer 10000000000000000 and -0.0 as 0.0 (1e-07 as
    0.0000001, the same float)."""
    value = float(text)
    if value == 0:
        return 0.0
    if "e" in text or "E" in text:
        exact = Decimal(text)
        if exact == exact.to_integral_value():
            return int(exact)
    return value


_JSON_DECODE = json.JSONDecoder(parse_float=_json_float).decode


@cache
def _json_encode():
    """json.dumps(value, cls=DjangoJSONEncoder), its encoder made once."""
    from django.core.serializers.json import DjangoJSONEncoder

    return DjangoJSONEncoder().encode


def _canonical(kind: int, quant, value: Any) -> Any:
    """One field's value as the digest sees it, whatever side it comes from
    (an instance about to be written, its values brought to the types the
    database gives back by casino/native.py, or one read back)."""
    if value is None:
        return None
    if kind == _DECIMAL:
        if type(value) is not Decimal:
            value = Decimal(value)
        return str(decimal_places(value, quant))
    if kind == _JSON:
        return _JSON_DECODE(_json_encode()(value))
    if isinstance(value, datetime):
        return _when(value if value.tzinfo is not None else aware(value))
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return str(value + 0.0)  # -0.0 is 0.0: SQLite's REAL keeps no sign
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, str | int | list | dict):
        return value
    return str(value)  # a time zone, a UUID...: its text


def ledger_digest(obj) -> str:
    """SHA-256 of a ledger row's content (its id, and its parent and position
    for child rows, are the key it is filed under), as the database will
    give the row back whatever form its values were written in
    (casino/native.py). A field at its default is left out, so a later
    migration that adds a field with a default leaves every earlier digest
    valid (an edit to or from the default still changes the digest)."""
    return hashlib.sha256(_dumps(ledger_content(obj)).encode("utf-8")).hexdigest()


def ledger_content(obj) -> dict:
    """What ledger_digest hashes (the canonical JSON of this dict): a coup's
    proof (casino/prove.py) carries it for the verifier to hash again."""
    content = {}
    for attname, kind, quant, omit, back, fix in _digest_plan(type(obj)):
        value = getattr(obj, attname)
        if value is not None:
            if kind == _DECIMAL:  # its places before it is compared
                if type(value) is not Decimal:
                    value = fix(value)
                value = decimal_places(value, quant)
                if value != omit:  # (never equal to _UNSET)
                    content[attname] = str(value)
                continue
            if fix is not None and type(value) is not back:
                value = fix(value)
        if omit is not _UNSET and value == omit:
            continue
        content[attname] = _canonical(kind, quant, value)
    return content


def _covered(label: str, obj) -> bool:
    """Whether the trail covers this row of its model (BOUND_ONLY): the same
    rows verification reads, so a row outside them is never expected."""
    for lookup, allowed in BOUND_ONLY.get(label, {}).items():
        name = lookup.removesuffix("__in")
        if getattr(obj, name) not in allowed:
            return False
    return True


def label_key(obj) -> tuple[str, str]:
    """A row of a model bound by its own key: (label, key) as the trail files
    it."""
    return obj._meta.label_lower, str(obj.pk)


def ledger_entries(
    rows: Iterable, deleted: Iterable[tuple[str, str, str | None]] = ()
) -> dict[str, dict[str, Any]]:
    """The `ledger` field of a log row: each bound row's digest by label and
    key ([before, after] for an updatable one: `before` is what the write
    path found and checked, casino.continuity.seal_check, None for a row
    this write inserted). Child rows must come in their insertion order.
    `deleted`: (label, key, before) of rows this write deleted."""
    out: dict[str, dict[str, Any]] = {}
    positions: dict[tuple[str, Any], int] = {}
    for obj in rows:
        label = obj._meta.label_lower
        if label not in BOUND or not _covered(label, obj):
            continue
        parent = BOUND[label]
        if parent is None:
            if obj.pk is None:
                raise ValueError(f"{label}: a row must be written before it is logged")
            key = str(obj.pk)
        else:
            pid = getattr(obj, parent)
            n = positions.get((label, pid), 0)
            positions[(label, pid)] = n + 1
            key = f"{pid}#{n}"
        digest = ledger_digest(obj)
        if label in UPDATABLE:
            out.setdefault(label, {})[key] = [
                obj.__dict__.get("_trail_before"), digest
            ]
            # sealed now: a later write in this transaction starts from here
            obj.__dict__["_trail_before"] = digest
        else:
            out.setdefault(label, {})[key] = digest
    for label, key, before in deleted:
        out.setdefault(label, {})[key] = [before, None]
    return out


def entry_after(entry: Any) -> str | None:
    """The digest a trail entry leaves its row with (None: deleted)."""
    return entry[1] if type(entry) is list else entry


def seal_index(ledger: dict | None) -> list[tuple[str, str]]:
    """The (label, key) pairs of a log row's entries that casino.Seal indexes."""
    return [
        (label, key)
        for label, entries in (ledger or {}).items()
        if label in INDEXED
        for key in entries
    ]


# -- the chain's head ------------------------------------------------------------

_HEAD = "SELECT hash || link FROM casino_changelog ORDER BY id DESC LIMIT 1"


def chain_lock_statements() -> list[tuple[str, list]]:
    """One statement that takes the chain lock, then reads the head with a
    fresh snapshot (the function of migration casino 0009: under READ
    COMMITTED it sees the last lock holder's commit). From here to the commit
    the chain is held: one writer at a time."""
    return [("SELECT casino_chain_head(%s)", [ADVISORY_LOCK_KEY])]


def split_head(head: str | None) -> tuple[str, str]:
    """(hash, link) of the head as casino_chain_head and chain_head give it
    (the head row's hash then its link, 128 hex characters; empty: the log is
    empty, GENESIS for both)."""
    if not head:
        return GENESIS, GENESIS
    if len(head) != 128:
        raise RuntimeError(
            "the change log's head has no public link: run `manage.py migrate` "
            "(casino 0011 fills the links)"
        )
    return head[:64], head[64:]


def chain_head(connection) -> str:
    """The head the next row must link to, the chain held (PostgreSQL: one
    round trip for the lock and the read): the head row's hash || link
    (`split_head`). SQLite has one writer at a time anyway, and the unique
    constraint on prev_hash refuses a fork on any database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(*chain_lock_statements()[0])
        else:
            _stopped_check()  # PostgreSQL: inside casino_chain_head (0016)
            cursor.execute(_HEAD)
        row = cursor.fetchone()
    return row[0] if row and row[0] else ""


class TrailStopped(Exception):
    """The witnesses named a fork or a rollback (casino.WitnessEvent) that the
    operator has not declared: the chain refuses every write (on PostgreSQL
    casino_chain_head raises SQLSTATE CW409 with the same words)."""

    sqlstate = "CW409"


def _stopped_check() -> None:
    from .trailstop import stop_reason_event

    stop = stop_reason_event()
    if stop is not None:
        raise TrailStopped(f"the trail is stopped: {stop.detail}")


# -- verification --------------------------------------------------------------

@dataclass(frozen=True)
class TrailCheck:
    rows: int
    head_id: int | None
    head_hash: str
    broken_id: int | None = None
    problem: str = ""
    ledger_rows: int = 0
    anchors: int = 0
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problem

    def to_dict(self) -> dict:
        return {
            "ok": self.ok, "rows": self.rows, "head_id": self.head_id,
            "head_hash": self.head_hash, "broken_id": self.broken_id,
            "problem": self.problem, "ledger_rows": self.ledger_rows,
            "anchors": self.anchors, "problems": list(self.problems),
        }


class _Walk:
    """The chain walked in id order: links, digests, anchors, and the ledger
    digests the rows carry (the latest for each ledger row)."""

    def __init__(self, keys: dict[str, bytes], anchors: dict[int, str], *,
                 links: bool = True, anchor_links: dict[int, str] | None = None):
        self.keys, self.anchors = keys, anchors
        self.links, self.anchor_links = links, anchor_links or {}
        self.prev, self.count, self.head_id = GENESIS, 0, None
        self.prev_link = GENESIS
        self.ledger: dict[str, dict[str, tuple[str | None, int]]] = {}
        self.anchors_seen: set[int] = set()
        self.gaps: list[str] = []  # continuity problems, in trail order

    def step(self, r: dict) -> tuple[int, str] | None:
        rid = r["id"]
        self.count += 1
        if r["prev_hash"] != self.prev:
            what = "the first row" if self.prev == GENESIS else f"row {self.head_id}"
            return rid, (
                f"row {rid} ({r['action']}): its link does not match {what} "
                "(a row before it was changed, removed or inserted)"
            )
        key = self.keys.get(r["key_id"] or "")
        if key is None:
            return rid, (
                f"row {rid} ({r['action']}): signed with key {r['key_id'] or '(none)'}"
                ", which is neither TRAIL_KEY nor in TRAIL_OLD_KEYS"
            )
        content = {k: r[k] for k in CONTENT}
        digest, link = row_digests(key=key, prev_link=self.prev_link, **content)
        if not hmac.compare_digest(digest, r["hash"]):
            return rid, (
                f"row {rid} ({r['action']}): its content does not match its digest "
                "(the row was edited)"
            )
        if self.links:
            broken = self._link(r, link)
            if broken:
                return rid, broken
        if rid in self.anchors:
            self.anchors_seen.add(rid)
            if r["hash"] != self.anchors[rid]:
                return rid, (
                    f"row {rid}: digest {r['hash']} is not the anchor "
                    f"{self.anchors[rid]} (the chain was rewritten up to here)"
                )
        for label, entries in (r["ledger"] or {}).items():
            mine = self.ledger.setdefault(label, {})
            for k, digest in entries.items():
                if type(digest) is list:  # [before, after]: continuity
                    before, digest = digest
                    last = mine.get(k)
                    if (last[0] if last else None) != before:
                        self._discontinuity(label, k, before, last, rid)
                mine[k] = (digest, rid)
        self.prev, self.head_id = r["hash"], rid
        return None

    def _link(self, r: dict, expected: str) -> str:
        """The public link (module docstring): the row's own (`expected`, as
        computed from its content and the previous link), then an anchor's,
        if one names the row."""
        rid = r["id"]
        link = r.get("link") or ""
        if link != expected:
            what = ("GENESIS" if self.prev_link == GENESIS
                    else f"row {self.head_id}'s link")
            return (
                f"row {rid} ({r['action']}): its public link {link[:12] or '(none)'} "
                f"is not the SHA-256 of its content and {what} (the row or the "
                "link was changed)"
            )
        if rid in self.anchor_links and self.anchor_links[rid] != link:
            return (
                f"row {rid}: link {link} is not the anchor's "
                f"{self.anchor_links[rid]} (the chain was rewritten up to here)"
            )
        self.prev_link = link
        return ""

    def _discontinuity(self, label, key, before, last, rid) -> None:
        """A write found a row other than the trail had left it: the row was
        changed (inserted, deleted) between the two trail rows, outside the
        application."""
        name = label.split(".")[1]
        if len(self.gaps) >= 100:
            return
        if last is None:
            what = "but no trail row wrote it before (inserted outside the application)"
        elif last[0] is None:
            what = f"but trail row {last[1]} deleted it"
        else:
            found = "nothing" if before is None else before[:12]
            what = (f"found it as {found}, but trail row {last[1]} left it as "
                    f"{last[0][:12]} (changed outside the application between them)")
        if last is None:
            self.gaps.append(f"{name} {key}: trail row {rid} changed it, {what}")
        else:
            self.gaps.append(f"{name} {key}: trail row {rid} {what}")


def verify_rows(
    rows: Iterable[dict],
    anchors: dict[int, str] | None = None,
    *,
    keys: dict[str, bytes] | None = None,
    ledger: bool = False,
    links: bool = True,
    anchor_links: dict[int, str] | None = None,
) -> TrailCheck:
    """Walk rows in id order; stop at the first one that does not hold (its
    link, its HMAC, its public link: `links=False` leaves the public link
    out, for a migration that has not filled it yet). Then every anchored
    row must have been seen, and (with `ledger`) every ledger row must match
    the digest its latest log row holds. `anchor_links`: row -> the public
    link an anchor gives it."""
    anchors = anchors or {}
    walk = _Walk(keys if keys is not None else trail_keys(), anchors,
                 links=links, anchor_links=anchor_links)
    for r in rows:
        broken = walk.step(r)
        if broken:
            return TrailCheck(walk.count, walk.head_id, walk.prev, *broken,
                              anchors=len(anchors))
    missing = sorted(set(anchors) - walk.anchors_seen)
    if missing:
        rid = missing[0]
        return TrailCheck(
            walk.count, walk.head_id, walk.prev, rid,
            f"row {rid} of an anchor is missing (rows were removed from the "
            f"trail; its head is now row {walk.head_id})",
            anchors=len(anchors),
        )
    if not ledger:
        return TrailCheck(walk.count, walk.head_id, walk.prev, anchors=len(anchors))
    checked, problems = _ledger_check(walk.ledger)
    problems = [*walk.gaps, *problems]
    return TrailCheck(
        walk.count, walk.head_id, walk.prev, None,
        problems[0] if problems else "", ledger_rows=checked,
        anchors=len(anchors), problems=tuple(problems[:100]),
    )


def _ledger_rows(label: str, registry=None) -> Iterator[tuple[str, Any]]:
    """(key, instance) for every row of a bound model, in key order."""
    if registry is None:
        from django.apps import apps as registry

    model = registry.get_model(label)
    parent = BOUND[label]
    order = (parent, "pk") if parent else ("pk",)
    qs = model._base_manager.filter(**BOUND_ONLY.get(label, {})).order_by(*order)
    last_parent, n = object(), 0
    for obj in qs.iterator(chunk_size=2000):
        if parent is None:
            yield str(obj.pk), obj
            continue
        pid = getattr(obj, parent)
        n = n + 1 if pid == last_parent else 0
        last_parent = pid
        yield f"{pid}#{n}", obj


def _describe(label: str, key: str, obj) -> str:
    name = label.split(".")[1]
    if obj is None:
        return f"{name} {key}"
    if BOUND[label]:
        return f"{name} {obj.pk} ({BOUND[label].removesuffix('_id')} {key})"
    return f"{name} {obj.pk}"


# Checks of state derived from bound rows, registered by the apps that own
# it (audit: a flag's status is its last decision): each returns problems.
DERIVED_CHECKS: list = []


def _ledger_check(
    trail: dict[str, dict[str, tuple[str | None, int]]],
) -> tuple[int, list]:
    problems: list[str] = []
    checked = 0
    for label in BOUND:
        expected = dict(trail.get(label, {}))
        for key, obj in _ledger_rows(label):
            checked += 1
            found = expected.pop(key, None)
            if found is None:
                problems.append(
                    f"{_describe(label, key, obj)}: no trail row wrote it "
                    "(inserted behind the application's back)"
                )
            elif found[0] is None:
                problems.append(
                    f"{_describe(label, key, obj)}: trail row {found[1]} deleted "
                    "it, yet it is there (inserted again behind the application's "
                    "back)"
                )
            elif ledger_digest(obj) != found[0]:
                problems.append(
                    f"{_describe(label, key, obj)}: differs from what trail row "
                    f"{found[1]} recorded (the row was edited)"
                )
        for key, (digest, rid) in sorted(expected.items()):
            if digest is None:
                continue  # deleted by the trail row that says so
            problems.append(
                f"{_describe(label, key, None)}: written by trail row {rid}, "
                "missing from the ledger (the row was deleted)"
            )
    problems += _seal_index_check(trail)
    for check in DERIVED_CHECKS:
        problems += check()
    return checked, problems


def _seal_index_check(trail) -> list[str]:
    """The write path's index of the trail (casino.Seal) must name, for each
    row, the last trail row that wrote it: a seal pointing anywhere else was
    inserted outside the application."""
    from django.db.models import Max

    from .models import Seal

    problems = []
    latest = Seal.objects.values_list("label", "key").annotate(m=Max("log_id"))
    for label, key, log_id in latest.order_by("label", "key"):
        found = trail.get(label, {}).get(key)
        if found is None or found[1] != log_id:
            last = f"trail row {found[1]}" if found else "no trail row"
            problems.append(
                f"seal of {label.split('.')[-1]} {key}: names trail row {log_id}, "
                f"but {last} wrote it last (a seal inserted outside the "
                "application)"
            )
    return problems


def _exists(registry, label: str) -> bool:
    try:
        registry.get_model(label)
    except LookupError:
        return False
    return True


def ledger_baseline(
    registry=None, chunk: int = 5000, *, labels=None, skip=None
) -> Iterator[dict]:
    """The ledger as it stands, in `ledger` entries of at most `chunk` rows:
    what a migration seals when it binds rows written before the binding
    existed (the trail vouches for them from then on). `labels`: only these;
    `skip`: label -> keys the trail already holds."""
    entries: dict[str, Any] = {}
    n = 0
    for label in BOUND:
        if labels is not None and label not in labels:
            continue
        if registry is not None and not _exists(registry, label):
            continue  # a model added after the migration sealing the ledger
        known = (skip or {}).get(label, ())
        for key, obj in _ledger_rows(label, registry):
            if key in known:
                continue
            digest = ledger_digest(obj)
            if label in UPDATABLE:
                digest = [None, digest]
            entries.setdefault(label, {})[key] = digest
            n += 1
            if n == chunk:
                yield entries
                entries, n = {}, 0
    if entries:
        yield entries


def iter_rows(queryset, chunk: int = 2000) -> Iterator[dict]:
    """Rows as dicts in id order, a chunk at a time (a season is millions)."""
    last = 0
    while True:
        page = queryset.filter(id__gt=last).order_by("id").values(*FIELDS)
        batch = list(page[:chunk])
        if not batch:
            return
        yield from batch
        last = batch[-1]["id"]


def trail_verify(
    anchor: tuple[int, str] | None = None,
    *,
    anchors: bool = True,
    ledger: bool = True,
    now: datetime | None = None,
) -> TrailCheck:
    """The whole check: the chain, every anchor written out (and `anchor`,
    one noted by hand), and every ledger row against the trail. Anchors are
    expected (casino/anchors.py anchors_expected): every anchor the database
    records must have its file, every anchor's Ed25519 signature must hold
    (casino/signing.py) and its public link match the row's, and the trail
    must not have gone unanchored for more than 2 x TRAIL_ANCHOR_MINUTES (at
    `now`). `anchors=False`
    checks the chain and the ledger alone (the test suite after each test)."""
    from dataclasses import replace

    from .anchors import (
        AnchorError,
        anchors_expected,
        anchors_links,
        anchors_list,
        anchors_read,
    )
    from .models import ChangeLog

    try:
        found = anchors_list() if anchors else []
        known = anchors_read(found)
        links = anchors_links(found)
    except AnchorError as exc:
        return TrailCheck(0, None, GENESIS, None, str(exc))
    if anchor is not None:
        if anchor[0] in known and known[anchor[0]] != anchor[1]:
            return TrailCheck(
                0, None, GENESIS, anchor[0],
                f"row {anchor[0]}: the anchor given ({anchor[1]}) disagrees with "
                f"the anchor on file ({known[anchor[0]]})",
            )
        known[anchor[0]] = anchor[1]
    check = verify_rows(iter_rows(ChangeLog.objects.all()), known, ledger=ledger,
                        anchor_links=links)
    expected = anchors_expected(found, now=now) if anchors else []
    if not expected:
        return check
    named = tuple(problem for _, problem in expected)
    if check.ok:
        return replace(check, broken_id=expected[0][0], problem=named[0],
                       problems=(*named, *check.problems)[:100])
    first = check.problems or (check.problem,)
    return replace(check, problems=(*first, *named)[:100])
