"""`log_action` (and `log_actions`, its batch form) is the only writer of the
change log."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from .models import ChangeLog, Seal
from .trail import (
    BOUND,
    chain_head,
    current_key,
    ledger_entries,
    row_digests,
    seal_index,
    split_head,
)


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
    rows: Iterable = (),
    deleted: Iterable = (),
    bind: bool = True,
) -> dict:
    """One log row's content. `rows` are the ledger rows the write inserted or
    changed, as written (their digests bind them to this row); `obj` counts
    among them when it is a ledger row. `deleted`: (label, key, before) of
    bound rows the write deleted (casino.continuity.seal_check gave before)."""
    bound = list(rows)
    # `bind=False`: the row is only named (a user whose roles or tokens
    # changed): his own row did not change, and was not checked
    if bind and obj is not None and obj._meta.label_lower in BOUND and (
        obj not in bound
    ):
        bound.insert(0, obj)
    return {
        "at": timezone.now(),
        "user_id": user.pk if (user is not None and user.is_authenticated) else None,
        "device": (device or "")[:200],
        "action": action,
        "object_type": obj._meta.label_lower if obj is not None else "",
        "object_id": str(obj.pk)[:64] if obj is not None else "",
        "reason": reason or "",
        "old": _jsonable(old),
        "new": _jsonable(new),
        "ledger": ledger_entries(bound, deleted) or None,
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
    rows: Iterable = (),
    deleted: Iterable = (),
    bind: bool = True,
) -> ChangeLog:
    """Write one change-log row, chained to the one before (casino/trail.py).
    Must run inside the caller's transaction so the change and its trace
    commit (or roll back) together; call it last in a service, because from
    here to the commit the chain is held (one writer at a time). `rows`: the
    ledger rows this change wrote, after writing them."""
    return log_actions([{
        "action": action, "user": user, "device": device, "obj": obj,
        "reason": reason, "old": old, "new": new, "rows": rows,
        "deleted": deleted, "bind": bind,
    }])[0]


def log_actions(entries: Iterable[Mapping[str, Any]]) -> list[ChangeLog]:
    """Write several change-log rows at once, in order: each entry holds
    log_action's keyword arguments and gives the same row. One look at the
    chain's head (the lock taken), the links and digests computed here, one
    insert. Same rules as log_action: inside the caller's transaction, last."""
    connection = _connection()
    rows = [_row(**entry) for entry in entries]
    if not rows:
        return []
    return log_rows_linked(connection, chain_head(connection), rows)


def chain_hold() -> str:
    """Take the chain now (and read its head), in the caller's transaction.
    Lock order, so nobody waits in a circle: a writer's row locks first, then
    the chain, then the rows a chain holder may touch (the day's rollup
    cells). The coup path takes the chain right after its shoe and turn
    (tables/services/ledger_pg.py); a writer that also touches rollup cells
    calls this before it does. log_action takes it again at no cost."""
    return chain_head(_connection())


def log_rows_linked(connection, head: str, rows: list[dict]) -> list[ChangeLog]:
    """Insert rows (as `log_entry_rows` gives them) linked from `head`, which
    the caller read under the chain lock (casino.trail.chain_lock_statements),
    in one statement."""
    logs = ChangeLog.objects.using(connection.alias).bulk_create(
        log_rows_signed(head, rows)
    )
    seals = [
        Seal(label=label, key=key, log_id=log.pk)
        for log in logs
        for label, key in seal_index(log.ledger)
    ]
    if seals:
        Seal.objects.using(connection.alias).bulk_create(seals)
    return logs


def log_rows_signed(head: str, rows: list[dict]) -> list[ChangeLog]:
    """The rows linked from `head` (the head row's hash || link, as
    casino_chain_head gives it: casino.trail.split_head), signed with the
    trail key and given their public link (casino/trail.py), unsaved: for a
    writer with its own (prepared) insert. Same rules as log_rows_linked."""
    key_id, key = current_key()
    prev, prev_link = split_head(head)
    for row in rows:
        row["prev_hash"] = prev
        row["hash"], row["link"] = prev, prev_link = row_digests(
            key=key, prev_link=prev_link, **row)
        row["key_id"] = key_id
    return [ChangeLog(**row) for row in rows]


def log_entry_rows(entries: Iterable[Mapping[str, Any]]) -> list[dict]:
    """log_actions' rows before they are linked: for a writer that takes the
    chain lock in its own batch of statements (tables/services/ledger_pg.py)."""
    return [_row(**entry) for entry in entries]
