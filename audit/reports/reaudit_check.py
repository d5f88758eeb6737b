"""Re-audit's inner loop: one chunk's coups read in one pass and judged again.

Read: one SQL query for the chunk's whole gaming days (one per part of a
split day) on the connection reads go to (casino.replica.read_alias(): the
replica inside a reading() block when there is one and no transaction is open
on "default", else "default"), from a server-side cursor on PostgreSQL, giving
only what the judgement needs: the coup's id, its shoe (mapped to its table
once per chunk), its gaming day, its cards as JSON text and the engine
findings it was recorded with (ENGINE_CODES, as "code:side" text), for the
current revisions only (no later revision of the same shoe and seq, as
tables.rollups.current_coups). Two facts of the write path keep it to one
pass with no lookup per coup: a correction keeps its coup's shoe, seq and
gaming day (so a day's later revisions are among the day's rows, hashed once
per query), and a coup's findings are written with it and counted on it
(finding_count: a coup with none is not looked up).

Judge: the findings that depend on the tableau come from tables.chemmy's
`evaluate`, never re-written here, but each distinct situation is evaluated
once per process and tableau (Judge). What evaluate's false_draw and
draw_after_natural depend on (tables/chemmy/engine.py):

- no natural: the punter's and the banker's two-card totals, whether the
  punter drew and his third card's point value, whether the banker drew, and
  the tableau: the cards' POINT VALUES (not ranks or suits) fix all of it;
- a natural: a third card dealt anyway is a draw_after_natural finding whose
  message names the card (rank and suit), so such a coup (a croupier's error,
  rare) is evaluated on its own, never memoized.

So the memo's key is the two-card totals, the punter's third card's point
value and whether each side drew, per tableau (its version and cells). A coup
whose stored text is not in the canonical form (card codes of two characters)
is evaluated on its own too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import connections, transaction

from casino.replica import read_alias
from tables import chemmy
from tables.models import Coup, Finding, Shoe, TableSession

# The findings that depend on the tableau (shoe and bank findings do not).
ENGINE_CODES = ("false_draw", "draw_after_natural")
FETCH = 5000

# A card's rank character -> its point value as a digit (docs/rules.md,
# "Cards and totals"): ace 1, two to nine face value, ten and pictures 0.
_POINTS = str.maketrans("A23456789TJQK", "1234567890000")
_UNCACHED = object()  # memo value: evaluate this situation every time


def engine_findings(punter, banker, tableau: chemmy.Tableau) -> tuple:
    """The engine's tableau-dependent findings for one coup's cards."""
    verdict = chemmy.evaluate(punter, banker, tableau=tableau)
    return tuple(f for f in verdict.findings if f.code in ENGINE_CODES)


# A two-card hand's point digits -> its total ("90" -> 9, "55" -> 0).
_TOTAL = {f"{a}{b}": (a + b) % 10 for a in range(10) for b in range(10)}


class Judge:
    """engine_findings for a coup's cards as stored (JSON text), memoized on
    what the findings depend on (see the module's docstring): the key is the
    punter's two-card total and his third card's point value (or none), the
    banker's two-card total and whether he drew (the texts' lengths: 2 or 3
    cards). A natural with a third card is never memoized."""

    def __init__(self, tableau: chemmy.Tableau):
        self.tableau = tableau
        self.memo: dict[tuple, object] = {}
        self.evaluated = 0

    def __call__(self, punter: str, banker: str) -> tuple:
        p = punter[2::6].translate(_POINTS)
        b = banker[2::6].translate(_POINTS)
        try:
            key = (_TOTAL[p[:2]], p[2:], len(punter), _TOTAL[b[:2]], len(banker))
        except KeyError:  # not two known ranks where a canonical text has them
            return self._evaluate(punter, banker)
        found = self.memo.get(key)
        if found is None:
            found = self._learn(key, p, b, punter, banker)
        if found is _UNCACHED:
            return self._evaluate(punter, banker)
        return found  # type: ignore[return-value]

    def _learn(self, key: tuple, p: str, b: str, punter: str, banker: str) -> object:
        if not _canonical(punter, p) or not _canonical(banker, b):
            return _UNCACHED  # judged on its own, and not memoized
        if (key[0] >= 8 or key[3] >= 8) and (len(p) == 3 or len(b) == 3):
            found: object = _UNCACHED  # the finding names the card itself
        else:
            found = self._evaluate(punter, banker)
        self.memo[key] = found
        return found

    def _evaluate(self, punter: str, banker: str) -> tuple:
        self.evaluated += 1
        return engine_findings(json.loads(punter), json.loads(banker), self.tableau)


def _canonical(text: str, points: str) -> bool:
    # '["9H", "KD"]' or '["9H", "KD", "5C"]', as jsonb prints a stored list
    # (and json.dumps writes it): ranks at 2, 8, 14, each a known rank.
    return (len(text) in (12, 18) and points.isdigit()
            and len(points) == (len(text) - 6) // 6 + 1 and text[0] == "["
            and text[-1] == "]")


_JUDGES: dict[tuple, Judge] = {}


def judge_for(tableau: chemmy.Tableau) -> Judge:
    """One Judge per process and tableau (version and cells: a version is
    never changed once written, but a test may write one twice)."""
    key = (tableau.version, tableau.cells)
    judge = _JUDGES.get(key)
    if judge is None:
        judge = _JUDGES[key] = Judge(tableau)
    return judge


def forget() -> None:
    """Drop the memos (tests)."""
    _JUDGES.clear()


# -- reading ----------------------------------------------------------------


@dataclass
class Changes:
    """What a chunk found: the rows to write (new and cleared findings) and
    the counts (kept ones are counted only)."""

    checked: int = 0
    new: int = 0
    kept: int = 0
    cleared: int = 0
    # (coup id, table id, gaming day, finding) under the new version
    appear: list = field(default_factory=list)
    # (coup id, table id, gaming day, (code, side)) recorded, gone now
    disappear: list = field(default_factory=list)


def _sql(vendor: str, n_days: int, n_tables: int, split: bool) -> str:
    """A query for some gaming days (or a part of one, by coup id modulo);
    n_tables > 0 keeps only those tables' shoes (a run over some tables),
    else every coup of the days is read and the caller keeps its cells'."""
    c, s, t = Coup._meta.db_table, Shoe._meta.db_table, TableSession._meta.db_table
    f = Finding._meta.db_table
    pg = vendor == "postgresql"
    cast = "::text" if pg else ""
    agg = "string_agg" if pg else "group_concat"
    codes = ", ".join(f"'{code}'" for code in ENGINE_CODES)
    days = ", ".join(["%s"] * n_days)
    where = f"c.gaming_day IN ({days})"
    if split:
        where += " AND c.id %% %s = %s"
    if n_tables:
        tables = ", ".join(["%s"] * n_tables)
        where += (f' AND c.shoe_id IN (SELECT s.id FROM "{s}" s JOIN "{t}" t'
                  f" ON t.id = s.session_id WHERE t.table_id IN ({tables}))")
    # The later revisions of the days' coups are among the days' rows: a
    # correction keeps its coup's shoe, seq and gaming day (the only writer
    # of revisions, tables/services/corrections.py). So one hash of them per
    # query, not an index probe per coup.
    later = f"""(SELECT shoe_id, seq, max(revision) AS top FROM "{c}"
        WHERE gaming_day IN ({days}) AND revision > 1 GROUP BY shoe_id, seq)"""
    # A coup's findings are written with it, in its transaction, and counted
    # on it (finding_count): a coup without any is not looked up.
    recorded = f"""CASE WHEN c.finding_count > 0 THEN
        (SELECT {agg}(r.code || ':' || r.side, ',') FROM "{f}" r
         WHERE r.coup_id = c.id AND r.code IN ({codes})) END"""
    return f"""SELECT c.id, c.shoe_id, CAST(c.gaming_day AS text),
        c.punter_cards{cast}, c.banker_cards{cast}, {recorded}
        FROM "{c}" c LEFT JOIN {later} l ON l.shoe_id = c.shoe_id AND l.seq = c.seq
        WHERE {where} AND (l.top IS NULL OR c.revision >= l.top)"""


def _queries(cells, restrict: bool) -> Iterator[tuple[str, list, set]]:
    """(SQL, params, cells) covering a chunk's cells: one query for its whole
    gaming days, one per part of a split day (the planner keeps a day's
    cells together, so a day read is the chunk's own, every table of it).
    `restrict`: filter the run's tables in SQL (a run over some tables)."""
    groups: dict[tuple, list] = {}
    for table_id, day, part, parts in cells:
        key = (None, 1) if parts == 1 else (part, parts)
        groups.setdefault(key, []).append((table_id, day))
    vendor = connections[read_alias()].vendor
    for (part, parts), group in groups.items():
        days = sorted({day for _, day in group})
        tables = sorted({t for t, _ in group}) if restrict else []
        params = [*days, *days] + ([parts, part] if parts > 1 else []) + tables
        sql = _sql(vendor, len(days), len(tables), parts > 1)
        yield sql, params, set(group)


def read_rows(cells, restrict: bool = False) -> Iterator[tuple[list, set]]:
    """(rows, cells): rows of (coup id, shoe id, gaming day ISO, punter JSON,
    banker JSON, recorded "code:side,..." or None), FETCH at a time, and the
    (table id, day) cells they may belong to."""
    alias = read_alias()
    conn = connections[alias]
    for sql, params, wanted in _queries(cells, restrict):
        # A server-side cursor streams inside a transaction: on the replica,
        # the snapshot's (casino.replica.snapshot()); on "default", one of
        # its own, opened here.
        with transaction.atomic(using=alias, savepoint=False):
            if conn.vendor == "postgresql":
                with conn.cursor() as cur:
                    # a few thousand rows: parallel workers (processes
                    # started per query) cost more than they save
                    cur.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            with conn.chunked_cursor() as cur:
                cur.execute(sql, params)
                while rows := cur.fetchmany(FETCH):
                    yield rows, wanted


def _shoe_tables(shoe_ids) -> dict[int, int]:
    alias = read_alias()
    return dict(Shoe.objects.using(alias).filter(pk__in=list(shoe_ids))
                .values_list("pk", "session__table_id"))


def check_cells(cells, tableaux: dict[int, chemmy.Tableau], *,
                restrict: bool = False) -> Changes:
    """Judge a chunk's coups against each table's tableau; count and collect
    what changed against the findings each coup was recorded with."""
    out = Changes()
    judges = {table_id: judge_for(t) for table_id, t in tableaux.items()}
    tables: dict[int, int] = {}  # shoe -> table, for this chunk
    for rows, wanted in read_rows(cells, restrict):
        missing = {r[1] for r in rows}.difference(tables)
        if missing:
            tables.update(_shoe_tables(missing))
        for coup_id, shoe_id, day, punter, banker, recorded in rows:
            table_id = tables[shoe_id]
            if (table_id, day) not in wanted:
                continue  # a coup the rollups do not count: not planned
            out.checked += 1
            now = judges[table_id](punter, banker)
            if recorded is None and not now:
                continue  # nearly every coup: nothing before, nothing now
            _compare(out, coup_id, table_id, day, now, recorded)
    return out


def _compare(out: Changes, coup_id, table_id, day, now, recorded) -> None:
    before = set(recorded.split(",")) if recorded else set()
    seen = set()
    for f in now:
        key = f"{f.code}:{f.side or ''}"
        seen.add(key)
        if key in before:
            out.kept += 1
        else:
            out.new += 1
            out.appear.append((coup_id, table_id, day, f))
    for key in before - seen:
        out.cleared += 1
        out.disappear.append((coup_id, table_id, day, tuple(key.split(":", 1))))
