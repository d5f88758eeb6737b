"""One coup from a tablet on PostgreSQL in three statements.

`coup_record` runs the same steps on every database (lock the shoe and the
open banker turn, coup_prepare, write, log); on PostgreSQL it takes them in
three prepared statements instead of eleven ORM queries, which is most of a
coup's cost at a busy table:

1. `lock_for_coup`: one SELECT locks the shoe and the open turn (FOR NO KEY UPDATE,
   shoe first, as lock_shoe and lock_open_turn do), reads the session, table
   and house rules with them, and takes the coup's id from its sequence, so
   every later row can name the coup without reading it back. No row (no
   such shoe, no open turn) sends the caller to the ORM path, which answers
   with the precise refusal.
2. `coup_write`, once the coup is judged and its rows and its change-log
   entry are made, one statement: the coup's own rows (the turn's and the
   shoe's running state, the coup, its stakes and findings) as
   data-modifying CTEs, then, once they are written, the chain lock and the
   chain's head (casino_chain_head), after every row lock as before.
3. With the chain held, one more: what other chain writers also write (the
   rollup rows: upserts) and the change-log row, signed here with the trail
   key (the database never sees the key) and linked to that head, with the
   digests of the rows the coup wrote (casino/trail.py, digested before the
   chain is taken); then the commit. A coup with findings sends their review
   flags first, in the same round trip.

Rows are locked FOR NO KEY UPDATE, here and on every path of the app (no
key of an append-only record ever changes): a writer that holds the chain
and then inserts a row naming a locked one (a surveillance flag on a table
in play: its foreign-key check takes KEY SHARE) does not wait for the
holder, who may be waiting for the chain -- with FOR UPDATE the two
deadlocked (tests/hostile/test_lock_order.py).

The chain is the one lock every coup of the floor shares: it is held for
step 3 and the commit only, not while the coup is judged and its own rows
written (with eight tablets at once, holding it from step 1 made the coups
wait for each other's Python: bench/bench_http.py). One statement per step,
not a pipeline of one per table: each statement cost this process more
(placeholders parsed, a flush and a poll, the GIL handed over) than the
database spent on it.

Rows are written from the same unsaved model instances ledger_store.ledger_write
takes, each value as Django's own field preparation makes it (_values), so the
two paths cannot disagree on a column (tests compare their rows and values).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, models

from casino.changelog import log_entry_rows, log_rows_signed
from casino.continuity import compare, compare_known
from casino.models import ChangeLog
from casino.trail import ADVISORY_LOCK_KEY, seal_index

from ..models import (
    BankerTurn,
    Coup,
    Finding,
    HouseRules,
    Shoe,
    Stake,
    Table,
    TableSession,
)
from ..rollups import GRAINS, OUTCOME_FIELD, _Delta
from .hooks import findings_statements

if TYPE_CHECKING:  # for types only: ledger_pg needs none of its code
    from .ledger import PreparedCoup, ShoeState

# A banker turn's running state, written after each coup (both paths).
TURN_FIELDS = (
    "bank",
    "coups",
    "garage_total",
    "commission_total",
    "suivi_seat",
    "tied_stakes",
    "closed_at",
    "end",
    "closing_amount",
)

# Alias and model of each part of the lock statement, in the order read.
_PARTS = (
    ("shoe", Shoe),
    ("session", TableSession),
    ("tbl", Table),
    ("rules", HouseRules),
    ("turn", BankerTurn),
)


def supported() -> bool:
    return connection.vendor == "postgresql"


class _Reader:
    """Model instances from a slice of a raw row, with the converters the ORM
    would apply (jsonb arrives as text, for instance)."""

    def __init__(self, model, alias: str) -> None:
        self.model = model
        self.fields = list(model._meta.concrete_fields)
        self.names = [f.attname for f in self.fields]
        self.columns = [f'{alias}."{f.column}"' for f in self.fields]
        self.converters = []
        for i, field in enumerate(self.fields):
            col = field.get_col(alias)
            found = connection.ops.get_db_converters(col) + col.get_db_converters(
                connection
            )
            if found:
                self.converters.append((i, found, col))

    def build(self, values: list):
        for i, found, col in self.converters:
            for convert in found:
                values[i] = convert(values[i], col, connection)
        return self.model.from_db(connection.alias, self.names, values)


def _split(values, readers) -> list:
    """One instance per reader from a joined row, in order; None for a part
    an outer join left empty (its primary key is NULL)."""
    parts, values = [], list(values)
    for reader in readers:
        n = len(reader.fields)
        chunk, values = values[:n], values[n:]
        parts.append(None if chunk[0] is None else reader.build(chunk))
    return parts


def _sealed_calls(aliases: dict) -> str:
    """casino_sealed (migration casino 0010) of each row named by its alias's
    key column (k_<alias>) in a lock statement's locked rows."""
    return ", ".join(
        f"casino_sealed('{model._meta.label_lower}', locked.k_{alias}::text)"
        for alias, model in aliases.items()
    )


# The rows of a coup's lock checked against their seals (the house rules are
# append-only, and named by the session's sealed pointer), in this order.
_SEALED = {"shoe": Shoe, "session": TableSession, "tbl": Table, "turn": BankerTurn}


@lru_cache(maxsize=1)
def _lock_statement() -> tuple[str, tuple[_Reader, ...]]:
    readers = tuple(_Reader(model, alias) for alias, model in _PARTS)
    columns = ", ".join(c for r in readers for c in r.columns)
    t = {alias: model._meta.db_table for alias, model in _PARTS}
    inner = (
        f"SELECT nextval(pg_get_serial_sequence('{Coup._meta.db_table}', 'id')), "
        + "".join(f"{alias}.id AS k_{alias}, " for alias in _SEALED)
        + f"{columns} "
        f'FROM "{t["shoe"]}" shoe '
        f'JOIN "{t["session"]}" session ON session.id = shoe.session_id '
        f'JOIN "{t["tbl"]}" tbl ON tbl.id = session.table_id '
        f'JOIN "{t["rules"]}" rules '
        "ON rules.id = COALESCE(session.rules_id, tbl.rules_id) "
        f'JOIN "{t["turn"]}" turn ON turn.session_id = session.id '
        "AND turn.closed_at IS NULL "
        "WHERE shoe.id = %s "
        "FOR NO KEY UPDATE OF shoe, turn"
    )
    # The last sealed digest of each row the coup builds on (casino/
    # continuity.py), read after the rows are locked (the outer list is
    # worked out on the rows the subquery locked, and casino_sealed reads in
    # a snapshot of its own): it sees the seal of whoever held the lock last.
    sql = f"SELECT locked.*, {_sealed_calls(_SEALED)} FROM ({inner}) locked"
    return sql, readers


CHAIN_HEAD_CALL = "casino_chain_head(%s)"  # migration casino 0009


class _PreparedCursor(psycopg.RawCursor):
    """Server-side binding, each statement prepared once per connection
    (psycopg keeps them): planning costs the server more than running these
    statements, the lock's five-table join above all. Raw: the statements
    arrive with PostgreSQL's own $1, $2 (_numbered), since psycopg's own
    conversion of %s is cached only for statements under 4 KB and 50
    parameters, and a coup's batches are longer (parsed on every coup, it
    cost more than the round trips it replaced)."""

    def execute(self, query, params=None, *, prepare=True, binary=None):
        return super().execute(query, params, prepare=prepare, binary=binary)


@lru_cache(maxsize=512)
def _numbered(sql: str) -> str:
    """`sql` with its %s placeholders numbered $1, $2... A statement's text
    depends only on its shape (how many stakes, findings...), so few texts."""
    pieces = sql.split("%s")
    if any("%" in piece for piece in pieces):
        raise ValueError("only %s placeholders: " + sql[:80])
    out = [pieces[0]]
    for n, piece in enumerate(pieces[1:], start=1):
        out += [f"${n}", piece]
    return "".join(out)


def _with(first: list[tuple[str, list]], last: tuple[str, list]) -> tuple[str, list]:
    """`first` (INSERTs, UPDATEs) as data-modifying CTEs of `last`: one
    statement. Every execute costs this process a flush, a poll and the GIL
    handed over and back, which under load cost more than the statement
    itself (bench/bench_http.py); PostgreSQL runs each CTE to completion, in
    no given order, within the statement."""
    ctes = ", ".join(f"w{i} AS ({sql})" for i, (sql, _) in enumerate(first))
    params = [p for _, ps in first for p in ps]
    return f"WITH {ctes} {last[0]}", [*params, *last[1]]


def _then_chain_head(rows: list[tuple[str, list]]) -> tuple[str, list]:
    """The coup's own rows, then the chain lock and its head, in one
    statement. Only the order within matters: CASE evaluates its condition
    before its result (PostgreSQL's documented rule), and the condition
    counts every row the CTEs wrote, so the chain is taken once they are
    written and whoever holds it never waits for a row this coup is writing.
    casino_chain_head reads the head in a snapshot of its own (a VOLATILE
    PL/pgSQL function), newer than the statement's."""
    steps = [(f"{sql} RETURNING 1", params) for sql, params in rows]
    written = " + ".join(f"(SELECT count(*) FROM w{i})" for i in range(len(rows)))
    return _with(
        steps,
        (f"SELECT CASE WHEN {written} >= 0 THEN {CHAIN_HEAD_CALL} END",
         [ADVISORY_LOCK_KEY]),
    )


_PART = re.compile(r'(UPDATE|INSERT INTO) "(\w+)"|THEN (casino_chain_head)\(')


def statement_parts(sql: str) -> list[str]:
    """What one of this module's statements does, in its text's order:
    "UPDATE tables_shoe", "INSERT tables_coup", "casino_chain_head" (for the
    tests and bench/profile_coup.py; a rollup's ON CONFLICT is not a part)."""
    return [
        "casino_chain_head" if m[3] else f"{m[1].split()[0]} {m[2]}"
        for m in _PART.finditer(sql)
    ]


def _execute(statements, *, fetch: bool = False):
    """Run (sql, params) statements in order, prepared, in one round trip
    (pipeline mode), through Django's cursor wrapper (its error mapping, query
    logging and execute wrappers). Returns the last statement's first row when
    `fetch`."""
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django turns psycopg's automatic preparing off (its own cursors bind
        # client-side and never prepare); psycopg then ignores prepare=True
        # too. A threshold no statement reaches by count lets ours through.
        raw.prepare_threshold = 2**31 - 1
    wrap = connection.make_debug_cursor if connection.queries_logged else (
        connection.make_cursor
    )  # as connection.cursor() does
    cursor = wrap(_PreparedCursor(raw))
    try:
        if len(statements) == 1:
            sql, params = statements[0]
            cursor.execute(_numbered(sql), params)
        else:
            with connection.wrap_database_errors, raw.pipeline():
                for sql, params in statements:
                    cursor.execute(_numbered(sql), params)
        return cursor.fetchone() if fetch else None
    finally:
        cursor.close()


def lock_for_coup(shoe_id: int) -> tuple[Shoe, BankerTurn, int] | None:
    """The shoe and its session's open turn, locked, and the new coup's id.
    The chain is taken later, by coup_write (after these row locks, as every
    chain writer orders them: whoever holds the chain waits for no row
    another chain writer holds; rollup cells are only touched with the chain
    held). None when there is no such shoe or no open turn (the ORM path
    says which)."""
    sql, readers = _lock_statement()
    row = _execute([(sql, [shoe_id])], fetch=True)
    if row is None:
        return None
    n = len(_SEALED)
    shoe, session, table, rules, turn = _split(row[1 + n:-n], readers)
    coup_id = row[0]
    sealed = dict(zip(_SEALED, row[-n:], strict=True))
    compare(shoe, sealed["shoe"])
    compare(turn, sealed["turn"])
    # the session and the table rarely change: not digested again while they
    # read as they did when this process last found them sealed
    compare_known(session, sealed["session"])
    compare_known(table, sealed["tbl"])
    # the session's own version: a change made since it opened waits for the next
    session.rules = rules
    session.table = table
    shoe.session = session
    turn.session = session
    return shoe, turn, coup_id


# Values psycopg takes as they are: for these fields the ORM's preparation
# only re-checks types it already has (str, int, bool, a foreign key's id).
_AS_IS = (models.CharField, models.TextField, models.IntegerField, models.BooleanField)
# Fields whose preparation on PostgreSQL gives back a value of this type
# unchanged (to_python keeps it, the backend's adapt_*_value is the identity):
# such a value is passed as it is, anything else goes through the ORM.
_UNCHANGED = (
    (models.DateTimeField, datetime),  # an aware one (settings.USE_TZ)
    (models.DateField, date),
    (models.DecimalField, Decimal),  # a finite one
)
_PLAIN = object()


def _kind(field):
    """_PLAIN, a type (the value passes as it is when it has exactly that
    type) or None (always Django's preparation)."""
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return None
    if isinstance(field, _AS_IS) or (
        field.is_relation and field.target_field.primary_key
    ):
        return _PLAIN
    return next((t for cls, t in _UNCHANGED if isinstance(field, cls)), None)


@lru_cache(maxsize=32)
def _fields(model, names: tuple[str, ...] | None, with_pk: bool) -> tuple:
    """(field, kind) for the columns written: `names`, else every concrete
    field (the primary key only `with_pk`)."""
    if names is None:
        chosen = [
            f for f in model._meta.concrete_fields if with_pk or not f.primary_key
        ]
    else:
        chosen = [model._meta.get_field(name) for name in names]
    return tuple((f, _kind(f)) for f in chosen)


def _unchanged(kind, value) -> bool:
    if kind is _PLAIN or value is None:
        return True
    if type(value) is not kind:  # a subclass may prepare otherwise
        return False
    if kind is datetime:
        return value.tzinfo is not None
    return kind is date or value.is_finite()


def _values(obj, fields) -> list:
    """Each field's value for the database, as Django would prepare it."""
    conn = connections[DEFAULT_DB_ALIAS]  # the wrapper itself, not the proxy
    out = []
    for f, kind in fields:
        value = getattr(obj, f.attname)
        if kind is None or not _unchanged(kind, value):
            value = f.get_db_prep_save(f.pre_save(obj, True), conn)
        out.append(value)
    return out


def _insert(model, rows: list, *, with_pk: bool = False) -> tuple[str, list]:
    """INSERT of unsaved instances, each value prepared as the ORM would."""
    fields = _fields(model, None, with_pk)
    params = []
    for obj in rows:
        params += _values(obj, fields)
    return _insert_sql(model, len(rows), with_pk), params


@lru_cache(maxsize=256)
def _insert_sql(model, count: int, with_pk: bool) -> str:
    fields = _fields(model, None, with_pk)
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    columns = ", ".join(f'"{f.column}"' for f, _ in fields)
    return (
        f'INSERT INTO "{model._meta.db_table}" ({columns}) VALUES '
        + ", ".join([one] * count)
    )


def _update(obj, names: tuple[str, ...]) -> tuple[str, list]:
    fields = _fields(type(obj), names, False)
    sets = ", ".join(f'"{f.column}" = %s' for f, _ in fields)
    sql = f'UPDATE "{type(obj)._meta.db_table}" SET {sets} WHERE id = %s'
    return sql, [*_values(obj, fields), obj.pk]


_SUMS = ["coups", *OUTCOME_FIELD.values(), "covered", "covered_sq", "commission",
         "levy_mean", "levy_var"]
# Counts per finding code, added key by key to the cell's jsonb.
_MERGE_FINDINGS = (
    "(SELECT coalesce(jsonb_object_agg(code, n), '{{}}'::jsonb) FROM ("
    "SELECT code, sum(n::int) AS n FROM ("
    "SELECT key AS code, value AS n FROM jsonb_each_text({t}.findings) UNION ALL "
    "SELECT key, value FROM jsonb_each_text(EXCLUDED.findings)) AS both_ "
    "GROUP BY code HAVING sum(n::int) <> 0) AS merged)"
)


def _rollup_upserts(prepared: PreparedCoup, table_id: int) -> list[tuple[str, list]]:
    """rollups.rollup_apply for one new coup: one upsert on its row of each
    grain (rollups.GRAINS)."""
    coup = prepared.coup
    delta = _Delta()
    delta.add(coup, prepared.codes)
    out = []
    for grain in GRAINS:
        row = grain.model(**grain.filters(table_id, grain.key(coup)), findings={})
        delta.apply(row)  # the coup alone: a new row, or what it adds
        params = _values(row, _fields(grain.model, None, False))
        out.append((_upsert_sql(grain, bool(row.findings)), params))
    return out


@lru_cache(maxsize=16)
def _upsert_sql(grain, with_findings: bool) -> str:
    t = grain.model._meta.db_table
    sets = [f'"{name}" = {t}."{name}" + EXCLUDED."{name}"' for name in _SUMS]
    if with_findings:
        sets.append('"findings" = ' + _MERGE_FINDINGS.format(t=t))
    target = ", ".join(f'"{c}"' for c in ("table_id", *grain.fields))
    return (
        _insert_sql(grain.model, 1, False)
        + f" ON CONFLICT ({target}) DO UPDATE SET "
        + ", ".join(sets)
    )


def coup_write(
    *,
    shoe: Shoe,
    shoe_state: ShoeState,
    prepared: PreparedCoup,
    coup_id: int,
    turn: BankerTurn,
    log: dict,
    table_id: int,
) -> None:
    """Write one prepared coup (what ledger_write does for a list) with its
    change-log row: its own rows then the chain lock and head in one round
    trip, then the flags, the rollups and the log row linked to that head in
    one more. Its id comes from lock_for_coup."""
    coup = prepared.coup
    coup.pk = coup_id
    for row in (*prepared.stakes, *prepared.findings):
        row.coup = coup  # sets coup_id now that the coup has one
    shoe.next_seq = shoe_state.next_seq
    shoe.dealt = shoe_state.dealt
    shoe.card_counts = dict(shoe_state.counts)
    shoe.held_by_seq = shoe_state.held_seq
    # The coup's own rows first (rows this transaction holds or makes, which
    # no chain holder waits for), the chain lock and head last in the same
    # round trip; then, with the chain held, what other chain writers also
    # write: the review flags (flags_sync raises them too), the rollup rows,
    # and the log row. The chain is held for that second, shorter batch.
    rows = [
        _update(turn, TURN_FIELDS),
        _insert(Coup, [coup], with_pk=True),
        _insert(Stake, prepared.stakes),
    ]
    if prepared.findings:
        rows.append(_insert(Finding, prepared.findings))
    rows.append(_update(shoe, ("next_seq", "dealt", "card_counts", "held_by_seq")))
    # the log row's digests of the rows it binds, before the chain is taken
    entries = log_entry_rows([{**log, "rows": [*log.get("rows", ()), turn, shoe]}])
    head = _execute([_then_chain_head(rows)], fetch=True)[0] or ""
    _execute([
        # the findings' review flags, in the coup's transaction (hooks.py): an
        # event names its flag by a read the flag's own statement cannot see
        *findings_statements(coup, prepared.findings),
        _log_insert(_rollup_upserts(prepared, table_id), head, entries),
    ])
    coup._state.adding = False
    coup._state.db = connection.alias


_TURN_SEALED = {"session": TableSession, "tbl": Table, "last": BankerTurn}


@lru_cache(maxsize=1)
def _turn_lock_statement() -> tuple[str, tuple[_Reader, ...]]:
    parts = (
        ("session", TableSession),
        ("tbl", Table),
        ("rules", HouseRules),
        ("last", BankerTurn),
    )
    readers = tuple(_Reader(model, alias) for alias, model in parts)
    columns = ", ".join(c for r in readers for c in r.columns)
    t = {alias: model._meta.db_table for alias, model in parts}
    sql = (
        f"SELECT nextval(pg_get_serial_sequence('{t['last']}', 'id')), "
        + "".join(f"{alias}.id AS k_{alias}, " for alias in _TURN_SEALED)
        + f"{columns} "
        f'FROM "{t["session"]}" session '
        f'JOIN "{t["tbl"]}" tbl ON tbl.id = session.table_id '
        f'JOIN "{t["rules"]}" rules '
        "ON rules.id = COALESCE(session.rules_id, tbl.rules_id) "
        # the latest turn locked too: a correction re-settles closed turns,
        # and what this turn opens from (its number, a passed bank) and the
        # turn's seal must be read after it
        f'LEFT JOIN LATERAL (SELECT * FROM "{t["last"]}" turn '
        "WHERE turn.session_id = session.id ORDER BY turn.number DESC LIMIT 1 "
        "FOR NO KEY UPDATE) last ON true "
        "WHERE session.id = %s "
        "FOR NO KEY UPDATE OF session"
    )
    # The chain after the row lock, in the same statement: the outer select's
    # list is worked out on the row the inner one has locked (a subquery with
    # FOR UPDATE is never flattened); no row, no chain taken. Before it, the
    # last sealed digests of the session, its table and its latest turn
    # (casino/continuity.py), read after the lock as the coup's are.
    return (
        f"SELECT locked.*, {_sealed_calls(_TURN_SEALED)}, {CHAIN_HEAD_CALL} "
        f"FROM ({sql}) locked",
        readers,
    )


def lock_for_turn(
    session_id: int,
) -> tuple[TableSession, BankerTurn | None, int, str] | None:
    """banker_turn_open's reads in one round trip: the session locked (as its
    ORM path does), its table and house rules, its latest turn (None before
    the first; locked), each checked against its last sealed state (RecordChanged),
    the new turn's id, and the chain's head with the chain held
    (after the row lock, as every chain writer orders them). A turn opening
    does little between its two round trips, so it keeps the chain from the
    first (taking it later measured no faster: bench/bench_http.py). None: no
    such session, or a table without rules (the ORM path answers)."""
    sql, readers = _turn_lock_statement()
    row = _execute([(sql, [ADVISORY_LOCK_KEY, session_id])], fetch=True)
    if row is None:
        return None
    n = len(_TURN_SEALED)
    session, table, rules, last = _split(row[1 + n:-n - 1], readers)
    turn_id = row[0]
    sealed = dict(zip(_TURN_SEALED, row[-n - 1:-1], strict=True))
    compare(session, sealed["session"])
    compare_known(table, sealed["tbl"])
    if last is not None:
        compare(last, sealed["last"])
    session.rules = rules
    session.table = table
    return session, last, turn_id, row[-1] or ""


def turn_write(turn: BankerTurn, turn_id: int, log: dict, head: str) -> None:
    """Insert a new turn with the id lock_for_turn took, and its change-log
    row linked to the head it read, in one round trip."""
    turn.pk = turn_id
    _execute([_log_insert([_insert(BankerTurn, [turn], with_pk=True)], head,
                          log_entry_rows([log]))])
    turn._state.adding = False
    turn._state.db = connection.alias


def _log_insert(
    first: list[tuple[str, list]], head: str, rows: list[dict]
) -> tuple[str, list]:
    """`first` (as _with takes them), then the change-log rows (log_entry_rows
    of log_action's entries, their digests made before the chain was taken),
    signed here with the trail key (never sent to the database) and linked to
    `head`, which the caller read under the chain lock, and their seals
    (casino.Seal, the write path's index of the trail): one statement."""
    logs = log_rows_signed(head, rows)
    insert = _insert(ChangeLog, logs)
    pairs = [(label, key, log.hash) for log in logs
             for label, key in seal_index(log.ledger)]
    if not pairs:
        return _with(first, insert) if first else insert
    n = len(first)
    values = ", ".join(["(%s, %s, %s)"] * len(pairs))
    seals = (
        'INSERT INTO "casino_seal" ("label", "key", "log_id") '
        f"SELECT v.column1, v.column2, w{n}.id FROM w{n} "
        f"JOIN (VALUES {values}) v ON v.column3 = w{n}.hash"
    )
    return _with(
        [*first, (insert[0] + ' RETURNING "id", "hash"', insert[1])],
        (seals, [p for pair in pairs for p in pair]),
    )
