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
database gives back is what was digested, on SQLite and on PostgreSQL.

A chain alone cannot show that its tail was cut off; anchors written outside
the database (casino/anchors.py) can, and `verify_trail` reads them.
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

GENESIS = "0" * 64
FIELDS = (
    "id", "at", "user_id", "device", "action", "object_type", "object_id",
    "reason", "old", "new", "ledger", "prev_hash", "hash", "key_id",
)
# Any constant works; it only has to be the same for every writer of the log.
ADVISORY_LOCK_KEY = 0x43484E  # "CHN"

# The ledger rows bound to the chain: label -> the parent's attribute for rows
# written in one insert with their parent (keyed "parent#position"), or None
# for rows keyed by their own id.
BOUND: dict[str, str | None] = {
    "tables.houserules": None,
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
    # what a surveillance alert stands on (audit/surveillance/run.py)
    "audit.surveillanceevidence": None,
}
# Rows of a bound model that the trail covers, where not all are: a flag's
# decisions (its other events are derived from the coups by flags_sync).
BOUND_ONLY: dict[str, dict[str, Any]] = {
    "audit.flagevent": {"action__in": ("confirmed", "dismissed")},
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


_DECIMAL, _JSON, _OTHER = 0, 1, 2
_UNSET = object()


@cache
def _plan(model) -> tuple:
    """Per model, once: each digested field's attname, how its value is
    canonicalised, and the value that leaves it out (see ledger_digest)."""
    parent = BOUND.get(model._meta.label_lower)
    plan = []
    for f in model._meta.concrete_fields:
        if f.primary_key or f.attname == parent:
            continue
        internal = f.get_internal_type()
        kind = {"DecimalField": _DECIMAL, "JSONField": _JSON}.get(internal, _OTHER)
        quant = Decimal(1).scaleb(-f.decimal_places) if kind == _DECIMAL else None
        if f.has_default():
            omit = _UNSET if callable(f.default) else f.default  # _UNSET: kept
        else:
            omit = f.get_default()  # "" for a text field without NULL, else None
        plan.append((f.attname, kind, quant, omit))
    return tuple(plan)


def _canonical(kind: int, quant, value: Any) -> Any:
    """One field's value as the digest sees it, whatever side it comes from
    (an instance about to be written, or one read back)."""
    if value is None:
        return None
    if kind == _DECIMAL:
        return str(Decimal(value).quantize(quant))
    if kind == _JSON:
        from django.core.serializers.json import DjangoJSONEncoder

        return json.loads(json.dumps(value, cls=DjangoJSONEncoder))
    if isinstance(value, datetime):
        return _when(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal | float):
        return str(value)
    return value


def ledger_digest(obj) -> str:
    """SHA-256 of a ledger row's content (its id, and its parent and position
    for child rows, are the key it is filed under). A field at its default is
    left out, so a later migration that adds a field with a default leaves
    every earlier digest valid (an edit to or from the default still changes
    the digest)."""
    content = {}
    for attname, kind, quant, omit in _plan(type(obj)):
        value = getattr(obj, attname)
        if omit is not _UNSET and value == omit:
            continue
        content[attname] = _canonical(kind, quant, value)
    return hashlib.sha256(_dumps(content).encode("utf-8")).hexdigest()


def _covered(label: str, obj) -> bool:
    """Whether the trail covers this row of its model (BOUND_ONLY): the same
    rows verification reads, so a row outside them is never expected."""
    for lookup, allowed in BOUND_ONLY.get(label, {}).items():
        name = lookup.removesuffix("__in")
        if getattr(obj, name) not in allowed:
            return False
    return True


def ledger_entries(rows: Iterable) -> dict[str, dict[str, str]]:
    """The `ledger` field of a log row: each bound row's digest by label and
    key. Child rows must come in their insertion order."""
    out: dict[str, dict[str, str]] = {}
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
        out.setdefault(label, {})[key] = ledger_digest(obj)
    return out


# -- the chain's head ------------------------------------------------------------

_HEAD = "SELECT hash FROM casino_changelog ORDER BY id DESC LIMIT 1"


def chain_lock_statements() -> list[tuple[str, list]]:
    """One statement that takes the chain lock, then reads the head with a
    fresh snapshot (the function of migration casino 0009: under READ
    COMMITTED it sees the last lock holder's commit). From here to the commit
    the chain is held: one writer at a time."""
    return [("SELECT casino_chain_head(%s)", [ADVISORY_LOCK_KEY])]


def chain_head(connection) -> str:
    """The digest the next row must link to, the chain held (PostgreSQL: one
    round trip for the lock and the read). SQLite has one writer at a time
    anyway, and the unique constraint on prev_hash refuses a fork on any
    database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(*chain_lock_statements()[0])
        else:
            cursor.execute(_HEAD)
        row = cursor.fetchone()
    return row[0] if row and row[0] else GENESIS


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

    def __init__(self, keys: dict[str, bytes], anchors: dict[int, str]):
        self.keys, self.anchors = keys, anchors
        self.prev, self.count, self.head_id = GENESIS, 0, None
        self.ledger: dict[str, dict[str, tuple[str, int]]] = {}
        self.anchors_seen: set[int] = set()

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
        content = {k: r[k] for k in FIELDS if k not in ("id", "hash", "key_id")}
        if not hmac.compare_digest(row_digest(key=key, **content), r["hash"]):
            return rid, (
                f"row {rid} ({r['action']}): its content does not match its digest "
                "(the row was edited)"
            )
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
                mine[k] = (digest, rid)
        self.prev, self.head_id = r["hash"], rid
        return None


def verify_rows(
    rows: Iterable[dict],
    anchors: dict[int, str] | None = None,
    *,
    keys: dict[str, bytes] | None = None,
    ledger: bool = False,
) -> TrailCheck:
    """Walk rows in id order; stop at the first one that does not hold. Then
    every anchored row must have been seen, and (with `ledger`) every ledger
    row must match the digest its latest log row holds."""
    anchors = anchors or {}
    walk = _Walk(keys if keys is not None else trail_keys(), anchors)
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
    order = (parent, "id") if parent else ("id",)
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


def _ledger_check(trail: dict[str, dict[str, tuple[str, int]]]) -> tuple[int, list]:
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
            elif ledger_digest(obj) != found[0]:
                problems.append(
                    f"{_describe(label, key, obj)}: differs from what trail row "
                    f"{found[1]} recorded (the row was edited)"
                )
        for key, (_digest, rid) in sorted(expected.items()):
            problems.append(
                f"{_describe(label, key, None)}: written by trail row {rid}, "
                "missing from the ledger (the row was deleted)"
            )
    return checked, problems


def _exists(registry, label: str) -> bool:
    try:
        registry.get_model(label)
    except LookupError:
        return False
    return True


def ledger_baseline(registry=None, chunk: int = 5000) -> Iterator[dict]:
    """The ledger as it stands, in `ledger` entries of at most `chunk` rows:
    what a migration seals when it binds rows written before the binding
    existed (the trail vouches for them from then on)."""
    entries: dict[str, dict[str, str]] = {}
    n = 0
    for label in BOUND:
        if registry is not None and not _exists(registry, label):
            continue  # a model added after the migration sealing the ledger
        for key, obj in _ledger_rows(label, registry):
            entries.setdefault(label, {})[key] = ledger_digest(obj)
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
    records must have its file, and the trail must not have gone unanchored
    for more than 2 x TRAIL_ANCHOR_MINUTES (at `now`). `anchors=False`
    checks the chain and the ledger alone (the test suite after each test)."""
    from dataclasses import replace

    from .anchors import AnchorError, anchors_expected, anchors_list, anchors_read
    from .models import ChangeLog

    try:
        found = anchors_list() if anchors else []
        known = anchors_read(found)
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
    check = verify_rows(iter_rows(ChangeLog.objects.all()), known, ledger=ledger)
    expected = anchors_expected(found, now=now) if anchors else []
    if not expected:
        return check
    named = tuple(problem for _, problem in expected)
    if check.ok:
        return replace(check, broken_id=expected[0][0], problem=named[0],
                       problems=(*named, *check.problems)[:100])
    first = check.problems or (check.problem,)
    return replace(check, problems=(*first, *named)[:100])
