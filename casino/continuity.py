"""Continuity: the app never writes over a row that is not in the state the
trail last sealed.

A row the design updates (a shoe's running state, a session's close, a
table's rules pointer, a user, a token...) could be changed by whoever holds
the database credentials the app runs with; the app's next ordinary write
would then find it as it is and seal the tampered state in a new, valid trail
row. So every write that builds on such a row first checks it against its
last sealed digest (`seal_check`), and records what it found as the entry's
"before" (casino/trail.py: `[before, after]`); verify_trail checks that each
"before" is the previous "after". A row that does not match is not written
over: the write is refused (`RecordChanged`, a 409 naming the record) and a
critical flag "record changed outside the app" is raised in a transaction of
its own, so that it stays (`guard`, `alarm`).

The last sealed digest is read through casino.Seal, an append-only index of
the trail: the last seal of a row names the log row that wrote it last, and
that log row's entry holds the digest. Nobody can take a later seal back; a
seal or a log row forged by hand is named by verify_trail (a forged log row
breaks the chain's signature, a seal that points elsewhere its index check).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction

from .errors import RecordChanged
from .trail import INDEXED, _plan, entry_after, label_key, ledger_digest

log = logging.getLogger("casino.integrity")

# PostgreSQL: the last sealed digest of a row, in one call (migration casino
# 0010); NULL when no trail row wrote it, or the last one deleted it.
SEALED_CALL = "casino_sealed(%s, %s)"


def sealed_digests(pairs: Sequence[tuple[str, str]]) -> list[Any]:
    """For each (label, key): the digest the trail last left the row with;
    None when the trail holds no state for it (no trail row wrote it, or the
    last one deleted it). One statement on PostgreSQL, one lookup a row."""
    if not pairs:
        return []
    if connection.vendor == "postgresql":
        sql = "SELECT " + ", ".join(SEALED_CALL for _ in pairs)
        with connection.cursor() as cursor:
            cursor.execute(sql, [p for pair in pairs for p in pair])
            return list(cursor.fetchone())
    from django.db.models import Max, Q

    from .models import ChangeLog, Seal

    wanted = Q()
    for label, key in pairs:
        wanted |= Q(label=label, key=key)
    last = dict(
        ((label, key), log_id)
        for label, key, log_id in Seal.objects.filter(wanted)
        .values_list("label", "key")
        .annotate(m=Max("log_id"))
    )
    ledgers = dict(
        ChangeLog.objects.filter(id__in=set(last.values())).values_list(
            "id", "ledger"
        )
    )
    out = []
    for label, key in pairs:
        log_id = last.get((label, key))
        if log_id is None:
            out.append(None)
            continue
        entry = ((ledgers.get(log_id) or {}).get(label) or {}).get(key)
        out.append(None if entry is None else entry_after(entry))
    return out


def compare(obj, sealed: Any) -> None:
    """Raise RecordChanged unless `obj` (as read, before this write changes
    it) is what the trail last sealed; else note its digest as the write's
    "before" (trail.ledger_entries reads it)."""
    label, key = label_key(obj)
    digest = ledger_digest(obj)
    if sealed is None:
        raise RecordChanged(
            label, key, "the trail holds no state for it: never written, or "
            "deleted", found=digest,
        )
    if sealed != digest:
        raise RecordChanged(
            label, key, "it differs from its last sealed state",
            found=digest, sealed=sealed,
        )
    obj.__dict__["_trail_before"] = digest


def seal_check(*objs) -> None:
    """Check rows just read (locked, when the write will change them) against
    their last sealed state: see the module's docstring."""
    objs = [o for o in objs if o is not None]
    for obj in objs:
        if obj._meta.label_lower not in INDEXED:
            raise ValueError(f"{obj._meta.label_lower} is not indexed by the trail")
    for obj, sealed in zip(
        objs, sealed_digests([label_key(o) for o in objs]), strict=True
    ):
        compare(obj, sealed)


def deleted(obj) -> tuple[str, str, str | None]:
    """A checked row about to be deleted, as log_action(deleted=...) takes it."""
    label, key = label_key(obj)
    return label, key, obj.__dict__.get("_trail_before")


# -- the alarm ------------------------------------------------------------------

_alarms: list = []


def register_alarm(writer) -> None:
    """`writer(exc, user=, device=)` writes the alarm (audit raises a flag)."""
    if writer not in _alarms:
        _alarms.append(writer)


def _at_top() -> bool:
    """Whether the connection is outside any transaction of the app's own (a
    test's wrapping transaction does not count)."""
    return all(
        getattr(block, "_from_testcase", False) for block in connection.atomic_blocks
    )


def alarm(exc: RecordChanged, *, user=None, device: str = "") -> None:
    """Raise the alarm for a refused write, in a transaction of its own (the
    refused write rolled back). Once per exception; a failure to raise it is
    logged, never hides the refusal."""
    if exc.alarmed:
        return
    exc.alarmed = True
    log.error("record changed outside the application: %s", exc)
    for writer in _alarms:
        try:
            with transaction.atomic():
                writer(exc, user=user, device=device)
        except Exception:  # noqa: BLE001 - the refusal must still be answered
            log.exception("could not raise the alarm for %s", exc)


@contextmanager
def guard(*, user=None, device: str = "") -> Iterator[None]:
    """transaction.atomic(), and when a row it builds on turns out changed
    outside the app (RecordChanged), the alarm once it has rolled back."""
    try:
        with transaction.atomic():
            yield
    except RecordChanged as exc:
        if _at_top():
            alarm(exc, user=user, device=device)
        raise


def _values(obj) -> tuple:
    return tuple(getattr(obj, attname) for attname, *_ in _plan(type(obj)))


def compare_known(obj, sealed, cache: dict = None) -> None:  # noqa: RUF013
    """compare() for a row read with its sealed digest in hand (the coup's
    lock statement): the digest is not made again while the row's values
    and its seal are the ones this process last found matching."""
    cache = _GOOD if cache is None else cache
    pair = label_key(obj)
    values = (_values(obj), sealed)
    hit = cache.get(pair)
    if hit is not None and hit[0] == values:
        obj.__dict__["_trail_before"] = sealed
        return
    compare(obj, sealed)
    if len(cache) > 10000:
        cache.clear()
    cache[pair] = (values, True)


_GOOD: dict = {}  # (label, key) -> a digest found sealed, in this process


def sealed_sql(label: str, key_sql: str) -> str:
    """A column beside a row's own in a read: the row's last sealed digest
    (casino_sealed, in the same statement) on PostgreSQL; elsewhere NULL, and
    with_seals looks the seals up after the read."""
    if connection.vendor == "postgresql":
        return f"casino_sealed('{label}', ({key_sql})::text)"
    return "NULL"


def with_seals(objs: Sequence, read: Sequence) -> list[tuple]:
    """(row, its last sealed digest) for rows read with sealed_sql() beside
    them (`read`); on a database without casino_sealed (SQLite), the seals
    looked up now."""
    if connection.vendor != "postgresql":
        read = sealed_digests([label_key(o) for o in objs])
    return list(zip(objs, read, strict=True))


def trusted(*objs, user=None, device: str = "") -> None:
    """Rows a request rests on (a user signing in, a report's job...),
    checked against the seals the trail holds for them now (one statement):
    RecordChanged (and the alarm) for one changed by hand."""
    objs = [o for o in objs if o is not None]
    sealed = sealed_digests([label_key(o) for o in objs])
    trusted_as_sealed(zip(objs, sealed, strict=True), user=user, device=device)


def trusted_as_sealed(pairs: Iterable[tuple], *, user=None, device: str = "") -> None:
    """trusted() for rows read together with their seals (sealed_sql: a
    request's token, its user and his roles' rows, casino/tokenauth.py and
    casino/roles.py). The seal is read at every request; only the digest is
    spared while a row's values and its seal are those this process last
    found matching (compare_known). So a row put back by hand as it was
    sealed once, after the app sealed it otherwise (a membership removed, a
    user deactivated), is compared with its last seal, and refused."""
    try:
        for obj, sealed in pairs:
            compare_known(obj, sealed)
    except RecordChanged as exc:
        if _at_top():
            alarm(exc, user=user, device=device)
        raise
