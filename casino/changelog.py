"""`log_action` (and `log_actions`, its batch form) is the only writer of the
change log."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from .models import ChangeLog
from .trail import ADVISORY_LOCK_KEY, GENESIS, body_after_link, chain_head, row_digest


class _Encoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, Decimal):
            return str(o)  # keep money exact in the trail
        return super().default(o)


def _jsonable(value: Any) -> Any:
    import json

    if value is None:
        return None
    return json.loads(json.dumps(value, cls=_Encoder))


def _row(
    *,
    action: str,
    user=None,
    device: str = "",
    obj=None,
    reason: str = "",
    old: Any = None,
    new: Any = None,
) -> dict:
    return {
        "at": timezone.now(),
        "user_id": user.pk if (user is not None and user.is_authenticated) else None,
        "device": (device or "")[:200],
        "action": action,
        "object_type": obj._meta.label_lower if obj is not None else "",
        "object_id": str(obj.pk) if obj is not None else "",
        "reason": reason or "",
        "old": _jsonable(old),
        "new": _jsonable(new),
    }


def _connection():
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        raise RuntimeError("log_action must be called inside transaction.atomic()")
    return connection


def log_action(
    *,
    action: str,
    user=None,
    device: str = "",
    obj=None,
    reason: str = "",
    old: Any = None,
    new: Any = None,
) -> ChangeLog:
    """Write one change-log row, chained to the one before (casino/trail.py).
    Must run inside the caller's transaction so the change and its trace
    commit (or roll back) together; call it last in a service, because from
    here to the commit the chain is held (one writer at a time)."""
    connection = _connection()
    row = _row(
        action=action, user=user, device=device, obj=obj, reason=reason, old=old,
        new=new,
    )
    if connection.vendor != "postgresql":
        row["prev_hash"] = chain_head(connection)
        row["hash"] = row_digest(**row)
        return ChangeLog.objects.create(**row)
    # One round trip for the lock, the head and the insert (_chained_insert).
    (lock, lock_params), (insert, params) = _chained_insert(connection, row)
    with connection.cursor() as cursor:
        cursor.execute(
            f"{lock};\n{insert} RETURNING id, prev_hash, hash", lock_params + params
        )
        cursor.nextset()  # past the lock's result, to the insert's
        pk, row["prev_hash"], row["hash"] = cursor.fetchone()
    entry = ChangeLog(pk=pk, **row)
    entry._state.adding, entry._state.db = False, connection.alias
    return entry


def log_actions(entries: Iterable[Mapping[str, Any]]) -> list[ChangeLog]:
    """Write several change-log rows at once, in order: each entry holds
    log_action's keyword arguments and gives the same row. One look at the
    chain's head, the links computed here, one insert (a shoe's coups and
    turns recorded by one service call). Same rules as log_action: inside the
    caller's transaction, last."""
    connection = _connection()
    rows = [_row(**entry) for entry in entries]
    if not rows:
        return []
    prev = chain_head(connection)
    for row in rows:
        row["prev_hash"] = prev
        row["hash"] = prev = row_digest(**row)
    return ChangeLog.objects.bulk_create([ChangeLog(**row) for row in rows])


# PostgreSQL: take the chain lock, then (a fresh statement, so it sees the
# last holder's commit) insert the row linked to the head, its digest computed
# by the database from the link and the body the caller computed.
_CHAIN_LOCK = "SELECT pg_advisory_xact_lock(%s)"
_CHAIN_FIELDS = ("at", "user_id", "device", "action", "object_type", "object_id",
                 "reason", "old", "new")
# VALUES, so every parameter takes its column's type.
_CHAIN_INSERT = (
    "WITH head AS (SELECT coalesce((SELECT hash FROM casino_changelog "
    "ORDER BY id DESC LIMIT 1), %s) AS link) "
    "INSERT INTO casino_changelog (at, user_id, device, action, object_type, "
    "object_id, reason, old, new, prev_hash, hash) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, (SELECT link FROM head), "
    "encode(sha256(convert_to("
    "'[\"' || (SELECT link FROM head) || '\",' || %s::text, 'UTF8')), 'hex'))"
)


def chained_insert_sql(connection, **entry: Any) -> list[tuple[str, list]]:
    """The statements and parameters that write log_action's row (same
    arguments) on PostgreSQL without a round trip of its own: the caller sends
    them with its last statements, inside its transaction, last. The digest is
    the one row_digest gives (the trail tests verify rows written this way)."""
    return _chained_insert(connection, _row(**entry))


def _chained_insert(connection, row: dict) -> list[tuple[str, list]]:
    fields = {f.attname: f for f in ChangeLog._meta.concrete_fields}
    params = [GENESIS]
    params += [
        fields[name].get_db_prep_save(row[name], connection) for name in _CHAIN_FIELDS
    ]
    params.append(body_after_link(**row))
    return [(_CHAIN_LOCK, [ADVISORY_LOCK_KEY]), (_CHAIN_INSERT, params)]
