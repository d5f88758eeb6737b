"""Where reports, statistics and re-audits read from.

`reports_alias()` names the database connection that read-heavy work uses:
the "reports" connection (REPORTS_DATABASE_URL, a PostgreSQL streaming
replica) when it is configured, else "default". Writes always go to
"default", and so do migrations.

Reads are routed to the replica only inside a `reading()` block, and never
while a transaction is open on "default": whatever such a transaction reads
may decide what it writes, and the replica may be behind (a report must never
read the replica to decide a write). Outside the block every read is on
"default", as if there were no replica. Raw SQL asks `read_alias()` for the
connection: `connections[read_alias()]`. A replica that cannot be reached
when the block starts is logged and the block reads the primary.

The replica lags the primary by however much WAL it has yet to replay;
`position()` says how far the data a report read goes (the last coup visible
and the lag), and `snapshot()` reads it and the report's data in one
REPEATABLE READ transaction on the replica, so both are the same state.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.apps import apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.utils import timezone

REPORTS = "reports"
DEFAULT = DEFAULT_DB_ALIAS
log = logging.getLogger(__name__)
# Inside a reading() block: the alias its reads go to; None outside.
_target: ContextVar[str | None] = ContextVar("casino_replica_target", default=None)


def reports_alias() -> str:
    return REPORTS if REPORTS in settings.DATABASES else DEFAULT


def read_alias() -> str:
    """The connection a read should use now: the replica inside `reading()`
    when one is configured (and reachable) and no transaction is open on
    "default"."""
    target = _target.get()
    if target is None or target == DEFAULT:
        return DEFAULT
    if connections[DEFAULT].in_atomic_block:
        return DEFAULT
    return target


def _reachable(alias: str) -> bool:
    """The replica answers; if not, the block reads the primary (and its
    position says so) rather than failing the report."""
    connection = connections[alias]
    try:
        # a kept connection the replica dropped (it restarted) is made anew
        if connection.connection is not None and not connection.is_usable():
            connection.close()
        connection.ensure_connection()
        return True
    except DatabaseError as exc:
        log.warning("the reports replica (%s) cannot be reached, reading the "
                    "primary: %s", alias, exc)
        connection.close()
        return False


@contextmanager
def reading() -> Iterator[str]:
    """Route the ORM's reads to the replica for the block (this thread or
    task only: a context variable). Yields the alias reads go to."""
    alias = reports_alias()
    if alias != DEFAULT and not _reachable(alias):
        alias = DEFAULT
    token = _target.set(alias)
    try:
        yield read_alias()
    finally:
        _target.reset(token)


class ReplicaRouter:
    """settings.DATABASE_ROUTERS: reads as `read_alias()` says, writes and
    migrations on "default" only."""

    def db_for_read(self, model, **hints) -> str:
        return read_alias()

    def db_for_write(self, model, **hints) -> str:
        return DEFAULT

    def allow_relation(self, obj1, obj2, **hints) -> bool | None:
        ours = {DEFAULT, REPORTS}
        if obj1._state.db in ours and obj2._state.db in ours:
            return True  # the same database, one of them as replayed
        return None

    def allow_migrate(self, db, app_label, model_name=None, **hints) -> bool:
        return db == DEFAULT


@dataclass(frozen=True)
class Position:
    """How far the data read on a connection goes."""

    alias: str
    replica: bool  # the connection is a standby (pg_is_in_recovery)
    coup: int | None  # the last coup row visible (highest id)
    coup_at: datetime | None  # when it was recorded
    replayed_at: datetime | None  # the last transaction the standby replayed
    lag_seconds: Decimal | None  # 0 when it has replayed all it received
    read_at: datetime

    def _fields(self) -> dict:
        def iso(t):
            return t.isoformat(timespec="seconds") if t else None

        return {
            "alias": self.alias, "replica": self.replica, "coup": self.coup,
            "coup_at": iso(self.coup_at), "replayed_at": iso(self.replayed_at),
            "lag_seconds": None if self.lag_seconds is None else str(self.lag_seconds),
            "read_at": iso(self.read_at),
        }

    def as_dict(self) -> dict:
        """What a report job keeps (JSON), with the line it prints."""
        fields = self._fields()
        return {**fields, "text": position_text(fields)}

    def text(self) -> str:
        """One line for the report's files (which are in English)."""
        return position_text(self._fields())


def position_text(data: dict) -> str:
    """The line a report prints, from a Position's dict (as stored)."""
    if not data:
        return ""
    if data.get("coup") is None:
        head = "No coup recorded yet"
    else:
        head = f"Data up to coup #{data['coup']}, recorded at {data['coup_at']}"
    if data.get("replica"):
        return (f"{head}; read from the reports copy, "
                f"{data.get('lag_seconds') or '0'} s behind the main database")
    return f"{head}; read from the main database"


_LAG_SQL = (
    "SELECT pg_is_in_recovery(), pg_last_xact_replay_timestamp(), "
    "CASE WHEN NOT pg_is_in_recovery() THEN NULL "
    # all WAL received is replayed: caught up, however old the last
    # transaction (an idle primary sends none)
    "WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() "
    "THEN 0 "
    "ELSE GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() "
    "- pg_last_xact_replay_timestamp())) END"
)


def position(alias: str | None = None) -> Position:
    """The last coup visible on the connection (`read_alias()` by default),
    and on a standby the last replayed transaction and the lag."""
    alias = alias or read_alias()
    connection = connections[alias]
    coup = apps.get_model("tables", "Coup")
    last = (coup.objects.using(alias).order_by("-id")
            .values_list("id", "created_at").first())
    standby, replayed, lag = False, None, None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_LAG_SQL)
            standby, replayed, lag = cursor.fetchone()
    if lag is not None:
        lag = Decimal(lag).quantize(Decimal("0.1"))
    return Position(
        alias=alias, replica=bool(standby), coup=last[0] if last else None,
        coup_at=timezone.localtime(last[1]) if last else None,
        replayed_at=timezone.localtime(replayed) if replayed else None,
        lag_seconds=lag, read_at=timezone.localtime(),
    )


@contextmanager
def snapshot() -> Iterator[Position]:
    """Inside `reading()`: the position, and every read of the block, from
    one state of the replica (a REPEATABLE READ transaction on it). On
    "default" no transaction is opened (progress written meanwhile must be
    seen at once): the data then goes at least up to the position."""
    alias = read_alias()
    if alias == DEFAULT:
        yield position(alias)
        return
    connection = connections[alias]
    outermost = not connection.in_atomic_block
    with transaction.atomic(using=alias):
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield position(alias)
