"""The coup detail export: every current coup revision of a period, streamed.

On PostgreSQL each CSV line is built by the database (`_pg_line_sql`): the
columns formatted in SQL exactly as the Python writer formats them (same
quoting, same text for dates, times, cards and money), read through a
server-side cursor on a connection of its own, in chunks, and written straight
to the file, so memory stays flat however many coups there are and no Python
object is made per cell. On other databases (SQLite) the rows go through
csv.writer. Both give the same bytes: tests/reports/test_detail_csv.py builds
both on PostgreSQL and compares. Free text (table and user names) is
neutralised on both paths (casino.spreadsheet): a name that starts like a
formula is written with a quote in front.
Progress is reported every sheets.PROGRESS_EVERY rows (a write per row would
cost more than the row itself).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import F, Sum

from casino.spreadsheet import neutralise, neutralise_sql
from tables.models import DailyRollup
from tables.rollups import current_coups

from . import sheets
from .writers import write_stamp

FIELDS = (
    ("gaming_day", "gaming_day"),
    ("table", "shoe__session__table__name"),
    ("session", "shoe__session_id"),
    ("shoe", "shoe__number"),
    ("seq", "seq"),
    ("revision", "revision"),
    ("recorded_at", "created_at"),
    ("croupier", "entered_by__username"),
    ("banker_seat", "banker_seat"),
    ("punter_seat", "punter_seat"),
    ("punter_cards", "punter_cards"),
    ("banker_cards", "banker_cards"),
    ("punter_total", "punter_total"),
    ("banker_total", "banker_total"),
    ("outcome", "outcome"),
    ("natural", "natural"),
    ("bank_before", "bank_before"),
    ("covered", "covered"),
    ("garage", "garage"),
    ("commission", "commission"),
    ("bank_after", "bank_after"),
    ("findings", "finding_count"),
    # The house-rules version the coup was played under: with the table, it
    # names one "house rules" line of the stamp, which states every rule the
    # coup was checked and settled by (its tableau among them). The stamp
    # lists each version the rows carry (services._detail_rules).
    ("rules", "rules__version"),
)


def coups_expected(params: dict) -> int:
    """How many rows the export will have, from the rollups (cheap)."""
    qs = DailyRollup.objects.filter(
        gaming_day__gte=params["from_day"], gaming_day__lte=params["to_day"]
    )
    if params.get("tables"):
        qs = qs.filter(table_id__in=params["tables"])
    return qs.aggregate(n=Sum("coups"))["n"] or 0


def _coups(params: dict, using: str):
    qs = current_coups().using(using).filter(
        gaming_day__gte=date.fromisoformat(params["from_day"]),
        gaming_day__lte=date.fromisoformat(params["to_day"]),
    )
    if params.get("tables"):
        qs = qs.filter(shoe__session__table_id__in=params["tables"])
    return qs.order_by("gaming_day", "shoe_id", "seq")


def coup_rows(params: dict, using: str = DEFAULT_DB_ALIAS) -> Iterator[tuple]:
    qs = _coups(params, using).values_list(*(f for _, f in FIELDS))
    return qs.iterator(chunk_size=sheets.PROGRESS_EVERY)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return " ".join(v)  # cards: "9H KD 2C"
    if isinstance(v, datetime):
        return _utc(v)
    return neutralise(v) if isinstance(v, str) else str(v)


def _utc(v: datetime) -> str:
    """ISO 8601 in UTC, "Z" for the zone: "2025-01-01T19:00:00.123450Z",
    without the fraction when it is zero (as isoformat)."""
    return v.astimezone(UTC).isoformat()[:-6] + "Z"  # "+00:00" -> "Z"


def write_coups_csv(
    params: dict, path, *, stamp: dict, progress: Callable[[int], None] | None = None,
    using: str = DEFAULT_DB_ALIAS, python: bool = False,
) -> int:
    """Write the export to `path`; the rows written. `using` is the connection
    the coups are read from (progress goes wherever `progress` writes it);
    `python` forces the csv.writer path on PostgreSQL too (the tests compare)."""
    head = io.StringIO(newline="")
    w = csv.writer(head)
    write_stamp(w, stamp)
    w.writerow([])
    w.writerow([name for name, _ in FIELDS])
    with open(path, "w", newline="", encoding="utf-8", buffering=1 << 20) as f:
        f.write(head.getvalue())
        if _sql_lines(using) and not python:
            return _write_pg_lines(params, f, progress, using)
        return _write_python_rows(params, f, progress, using)


def _sql_lines(using: str) -> bool:
    """The lines are built in SQL on PostgreSQL."""
    return connections[using].vendor == "postgresql"


def _write_python_rows(params, f, progress, using) -> int:
    n, every = 0, sheets.PROGRESS_EVERY
    w = csv.writer(f)
    cell = _cell
    for row in coup_rows(params, using):
        w.writerow([cell(v) for v in row])
        n += 1
        if progress is not None and n % every == 0:
            progress(n)
    return n


# -- PostgreSQL: the line built in SQL ----------------------------------------
#
# How csv.writer (QUOTE_MINIMAL, "\r\n") and _cell write each value, in SQL:
# - None -> "" (concat writes a NULL as nothing);
# - text that starts like a formula gets a quote in front (neutralise_sql,
#   in the middle query: the quoting below sees the text as written);
# - text is quoted when it holds a comma, a double quote, CR or LF, the
#   quotes inside doubled (one test per row over all its text: most rows need
#   no quoting and take the plain line);
# - int / numeric -> their text (numeric(14,2) keeps its two decimals, as the
#   Decimal psycopg reads: "1000.00", "-2.50");
# - a date -> YYYY-MM-DD (DateStyle ISO); a timestamptz in ISO 8601, UTC
#   with "Z" (_utc): "2025-01-01T19:00:00Z", microseconds ".123450" only
#   when not zero;
# - cards (a JSON list of strings) -> the strings joined by a space.
# Each function is cheap on purpose: 1M rows x 23 cells.

SPECIAL = """'[",\\r\\n]'"""  # a regex: the characters csv.writer quotes for


def _quoted(x: str) -> str:
    return (f"""CASE WHEN {x} ~ {SPECIAL} THEN '"' || replace({x}, '"', '""')"""
            f""" || '"' ELSE {x} END""")


def _cards(x: str) -> str:
    # A hand has two or three cards: their ->> text joined (concat_ws skips
    # the NULL of a missing one); a longer list element by element. A text
    # instead of a list is text, neutralised as _cell neutralises it.
    text = f"({x} #>> '{{}}')"
    return (f"CASE WHEN jsonb_typeof({x}) <> 'array' THEN "
            f"CASE WHEN jsonb_typeof({x}) = 'string' THEN {neutralise_sql(text)} END "
            f"WHEN jsonb_array_length({x}) <= 3 THEN "
            f"concat_ws(' ', {x} ->> 0, {x} ->> 1, {x} ->> 2) "
            f"ELSE (SELECT string_agg(e, ' ' ORDER BY o) FROM "
            f"jsonb_array_elements_text({x}) WITH ORDINALITY AS a(e, o)) END")


def _timestamp(x: str) -> str:
    utc = f"{x} AT TIME ZONE 'UTC'"
    return (f"""to_char({utc}, CASE WHEN date_trunc('second', {utc}) = {utc} """
            f"""THEN 'YYYY-MM-DD"T"HH24:MI:SS"Z"' """
            f"""ELSE 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"' END)""")


KIND = {
    "gaming_day": "date", "created_at": "timestamp",
    "shoe__session__table__name": "text", "entered_by__username": "text",
    "outcome": "text", "natural": "text",
    "punter_cards": "cards", "banker_cards": "cards",
}  # every other field: an integer or a numeric, written as its text


def _pg_line_sql(params: dict, using: str) -> tuple[str, tuple]:
    names = [f"c{i}" for i in range(len(FIELDS))]
    kinds = [KIND.get(f, "plain") for _, f in FIELDS]
    qs = _coups(params, using).annotate(
        **{n: F(f) for n, (_, f) in zip(names, FIELDS, strict=True)}
    ).values_list(*names)
    inner, args = qs.query.sql_with_params()
    # The middle query turns the cards into text and neutralises the free
    # text, once per row (OFFSET 0 keeps PostgreSQL from folding it into the
    # outer query, which refers to each text column twice); the rows keep the
    # inner query's order.
    middle = ", ".join(f"{_cards(n)} AS {n}" if k == "cards"
                       else f"{neutralise_sql(n)} AS {n}" if k == "text" else n
                       for n, k in zip(names, kinds, strict=True))

    def line(quote: bool) -> str:
        # concat: one call builds the line (a chain of || would copy it 45
        # times) and writes a NULL as nothing, as _cell writes None.
        cells = []
        for n, k in zip(names, kinds, strict=True):
            if k in ("text", "cards"):
                cells.append(_quoted(n) if quote else n)
            elif k == "timestamp":
                cells.append(_timestamp(n))
            else:  # date (DateStyle ISO), integer, numeric
                cells.append(n)
        comma = ", ',', "
        return f"concat({comma.join(cells)}, E'\\r\\n')"

    texts = ", ".join(n for n, k in zip(names, kinds, strict=True)
                      if k in ("text", "cards"))
    sql = (f"SELECT CASE WHEN concat({texts}) ~ {SPECIAL} THEN {line(True)} "
           f"ELSE {line(False)} END "
           f"FROM (SELECT {middle} FROM ({inner}) t OFFSET 0) u")
    return sql, args


# Session settings for the query: JIT compiling this long expression costs
# more than it saves (10 s at 1M rows); the plan best for every row, not for
# the first ones (a cursor's default); dates as YYYY-MM-DD.
SESSION = {"jit": "off", "cursor_tuple_fraction": "1", "DateStyle": "ISO"}


def _write_pg_lines(params, f, progress, using) -> int:
    """Read on a connection of its own, in a transaction: the cursor streams
    the rows as the query makes them (a cursor outside a transaction, WITH
    HOLD, is first run to the end and kept whole on the server), while the
    progress is written, and seen at once, on the usual connection. Inside a
    transaction already (a caller's atomic block, the tests), another
    connection would not see what it wrote: read on the same one."""
    main = connections[using]
    if main.in_atomic_block:
        with main.cursor() as cur:
            cur.execute("SELECT " + ", ".join(f"current_setting('{k}')"
                                              for k in SESSION))
            old = dict(zip(SESSION, cur.fetchone(), strict=True))
            _set(cur, SESSION)
            try:
                return _read_lines(main, params, f, progress, using)
            finally:
                _set(cur, old)
    reader = connections.create_connection(using)
    try:
        with reader.cursor() as cur:
            _set(cur, SESSION)
        reader.set_autocommit(False)
        return _read_lines(reader, params, f, progress, using)
    finally:
        try:
            if reader.connection is not None and not reader.get_autocommit():
                reader.rollback()  # it only read
        finally:
            reader.close()


def _read_lines(connection, params, f, progress, using) -> int:
    sql, args = _pg_line_sql(params, using)
    n, every = 0, sheets.PROGRESS_EVERY
    with connection.chunked_cursor() as cur:
        cur.execute(sql, args)
        while rows := cur.fetchmany(every):
            f.write("".join([r[0] for r in rows]))
            n += len(rows)
            if progress is not None and n % every == 0:
                progress(n)
    return n


def _set(cur, settings: dict) -> None:
    cur.execute("SELECT " + ", ".join("set_config(%s, %s, false)" for _ in settings),
                [x for kv in settings.items() for x in kv])
