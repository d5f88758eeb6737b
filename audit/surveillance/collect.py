"""The period's coups as the statistics read them (data.CoupRows), fast.

One query over the coups of the period (the (gaming_day, shoe) index) joined
to their shoe, session and banker turn, read in chunks from a server-side
cursor as plain tuples and turned chunk by chunk into numpy columns: no
model instances. On PostgreSQL the query is SQL that hands over numbers
ready for numpy (the gaming day as an ordinal, the time in microseconds, the
outcome as 0/1/2, money as float8: statistics only — settlement stays
Decimal), which is ~4x faster than the ORM's per-row conversions; elsewhere
(SQLite: tests, a laptop) the ORM reads the same columns and Python
converts them. Both give the same tuples, so everything after is shared.

Current revisions: every revision of the period is read and the latest of
each (shoe, seq) kept (a lexsort: corrections are rare, and this is cheaper
than the anti-join tables.rollups.current_coups asks of the database on a
million rows); `corrected` is a revision above 1. The findings the
statistics count (false_draw, bank_mismatch) come from a second, small
query (findings are rare), matched on the current revision's id.

Odds and levies: each coup's exact P(banker / punter / tie) under its own
house-rules version (decks, tableau, the cells the house prescribes:
audit.reports.expectation.rules_play, as the commission report weighs them)
with its free cells played at the floor's mix of choices over the period
(mix.py: the punter's and the banker's choices the coups record, the
banker's cell from his cards, read for the few coups with a banker's
choice), computed once per play and mix (odds.house_odds); the levy a
banker win takes (odds.levy: the version's rate, unit and rounding mode, in
Decimal) once per version and covered amount.

The shoes closed in the period (data.ShoeClose): their running state (dealt,
card_counts: kept equal to the current revisions by every correction), the
cards burned and the count of cards left the croupier entered at the close.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import numpy as np
from django.db import connections

from audit.reports.expectation import rules_play
from audit.reports.odds import levy
from casino.replica import read_alias
from tables.chemmy.cards import POINTS
from tables.chemmy.tableau import COLUMNS
from tables.models import BankerTurn, Coup, Finding, HouseRules, Shoe, TableSession
from tables.services.coups import tableau_for

from .data import RANKS, CoupRows, ShoeClose
from .mix import CHOICE, NONE, ChoiceMix, floor_mix, mixed_probabilities

CHUNK = 20_000
OUTCOME = {"banker": 0, "punter": 1, "tie": 2}

# id, shoe, seq, revision, table, session, day (ordinal), at (µs), croupier,
# banker seat, banker's player card, outcome (0/1/2), covered, commission,
# house-rules version, tableau version, the punter's and the banker's free
# choice (mix.NONE / DRAW / STAND)
FIELDS = (
    "id", "shoe_id", "seq", "revision", "shoe__session__table_id",
    "shoe__session_id", "gaming_day", "created_at", "entered_by_id",
    "banker_seat", "turn__player_card", "outcome", "covered", "commission",
    "rules_id", "tableau_version", "punter_choice", "banker_choice",
)


def play_odds(play: tuple, floor: ChoiceMix | None = None,
              ) -> tuple[float, float, float]:
    """(P banker, P punter, P tie) of a rules_play key, its free cells at
    the floor's mix (None: drawn), cached per play and mix (mix.py)."""
    decks, tableau_version, punter_five, cells = play
    return mixed_probabilities(decks=decks, tableau=tableau_for(tableau_version),
                               punter_five=punter_five,
                               banker_prescriptions=dict(cells), mix=floor)


def _sql(table_ids) -> tuple[str, list]:
    c, s, t = Coup._meta.db_table, Shoe._meta.db_table, TableSession._meta.db_table
    b = BankerTurn._meta.db_table
    where = "c.gaming_day BETWEEN %s AND %s"
    params: list = []
    if table_ids:
        where += " AND t.table_id = ANY(%s)"
        params.append(list(table_ids))
    return (f"""SELECT c.id, c.shoe_id, c.seq, c.revision, t.table_id, s.session_id,
        (c.gaming_day - DATE '0001-01-01') + 1,
        (EXTRACT(EPOCH FROM c.created_at) * 1000000)::int8,
        c.entered_by_id, c.banker_seat, b.player_card,
        CASE c.outcome WHEN 'banker' THEN 0 WHEN 'punter' THEN 1 ELSE 2 END,
        c.covered::float8, c.commission::float8, c.rules_id, c.tableau_version,
        CASE c.punter_choice WHEN 'draw' THEN 1 WHEN 'stand' THEN 2 ELSE 0 END,
        CASE c.banker_choice WHEN 'draw' THEN 1 WHEN 'stand' THEN 2 ELSE 0 END
        FROM "{c}" c JOIN "{s}" s ON s.id = c.shoe_id
        JOIN "{t}" t ON t.id = s.session_id JOIN "{b}" b ON b.id = c.turn_id
        WHERE {where}""", params)


def _chunks(from_day: date, to_day: date, table_ids) -> Iterator[list[tuple]]:
    """The period's coups (every revision), CHUNK rows at a time, as tuples
    in FIELDS order with numbers ready for numpy."""
    # The replica inside a replica.reading() block (runs._pipeline), else
    # the primary: the ORM's router decides the same for the other queries.
    if connections[read_alias()].vendor == "postgresql":
        yield from _pg_chunks(from_day, to_day, table_ids)
    else:
        yield from _orm_chunks(from_day, to_day, table_ids)


def _pg_chunks(from_day: date, to_day: date, table_ids) -> Iterator[list[tuple]]:
    sql, params = _sql(table_ids)
    with connections[read_alias()].chunked_cursor() as cur:
        cur.execute(sql, [from_day, to_day, *params])
        while chunk := cur.fetchmany(CHUNK):
            yield chunk


def _orm_chunks(from_day: date, to_day: date, table_ids) -> Iterator[list[tuple]]:
    qs = Coup.objects.filter(gaming_day__range=(from_day, to_day))
    if table_ids:
        qs = qs.filter(shoe__session__table_id__in=list(table_ids))
    chunk = []
    for r in qs.order_by().values_list(*FIELDS).iterator(chunk_size=2000):
        chunk.append((*r[:6], r[6].toordinal(), int(r[7].timestamp() * 1_000_000),
                      *r[8:11], OUTCOME[r[11]], float(r[12]), float(r[13]),
                      r[14], r[15], CHOICE.get(r[16], 0), CHOICE.get(r[17], 0)))
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _count(from_day: date, to_day: date, table_ids) -> int:
    qs = Coup.objects.filter(gaming_day__range=(from_day, to_day))
    if table_ids:
        qs = qs.filter(shoe__session__table_id__in=list(table_ids))
    return qs.count()


@dataclass(frozen=True)
class FloorMix(ChoiceMix):
    """The period's mix, with the banker-win share it makes the coups'
    expectation, and the share if every free choice had been a draw."""

    expected_share: float | None = None
    drawn_share: float | None = None

    def as_dict(self) -> dict:
        return {"cells": self.as_rows(), "expected_share": self.expected_share,
                "drawn_share": self.drawn_share}


@dataclass(frozen=True)
class Period:
    rows: CoupRows
    shoes: list[ShoeClose]
    mix: FloorMix


def collect(*, from_day: date, to_day: date, table_ids=None,
            progress: Callable[[int, int], None] | None = None,
            ) -> tuple[CoupRows, list[ShoeClose]]:
    """CoupRows for gaming days from_day..to_day (optionally some tables),
    at the current revisions, and the shoes closed in the period."""
    period = collect_period(from_day=from_day, to_day=to_day,
                            table_ids=table_ids, progress=progress)
    return period.rows, period.shoes


def collect_period(*, from_day: date, to_day: date, table_ids=None,
                   progress: Callable[[int, int], None] | None = None) -> Period:
    """``collect`` and the floor's mix of free choices it weighed with."""
    total = _count(from_day, to_day, table_ids) if progress else 0
    parts, done = [], 0
    for chunk in _chunks(from_day, to_day, table_ids):
        parts.append(_columns(chunk))
        done += len(chunk)
        if progress:
            progress(done, total)
    rows, floor = _current(parts)
    shoes = shoe_closes(from_day=from_day, to_day=to_day, table_ids=table_ids)
    return Period(rows, shoes, floor)


def _columns(chunk: list[tuple]) -> dict[str, np.ndarray]:
    """One chunk of rows as numpy columns (every revision)."""
    (ids, shoe, seq, revision, table, session, day, at, croupier, seat, card,
     outcome, covered, commission, rules_id, tableau, pchoice,
     bchoice) = zip(*chunk, strict=True)
    n = len(ids)

    def ints(col) -> np.ndarray:
        return np.fromiter(col, np.int64, n)

    banker = np.empty(n, dtype=object)
    banker[:] = [f"card:{c}" if c else f"seat:{s}@session:{x}"
                 for c, s, x in zip(card, seat, session, strict=True)]
    plays = {key: i for i, key in enumerate(set(zip(rules_id, tableau,
                                                    strict=True)))}
    return {
        "id": ints(ids), "shoe": ints(shoe), "seq": ints(seq),
        "revision": ints(revision), "table": ints(table), "day": ints(day),
        "at": ints(at), "croupier": ints(croupier), "banker": banker,
        "outcome": np.fromiter(outcome, np.int8, n),
        "covered": np.fromiter(covered, np.float64, n),
        "commission": np.fromiter(commission, np.float64, n),
        "rules_id": ints(rules_id),
        "pchoice": np.fromiter(pchoice, np.int8, n),
        "bchoice": np.fromiter(bchoice, np.int8, n),
        # the chunk's (version, tableau) pairs, and each row's
        "play": np.fromiter((plays[k] for k in zip(rules_id, tableau, strict=True)),
                            np.int64, n),
        "plays": list(plays),
    }


class _Rules:
    """House-rules versions, read once per collect."""

    def __init__(self) -> None:
        self.versions: dict[int, HouseRules] = {}

    def __call__(self, pk: int) -> HouseRules:
        r = self.versions.get(pk)
        if r is None:
            r = self.versions[pk] = (HouseRules.objects.select_related("tableau")
                                     .get(pk=pk))
        return r


def _plays(parts: list[dict], version: _Rules) -> tuple[list[tuple], np.ndarray]:
    """The period's plays (rules_play keys) and each row's index into them."""
    keys: dict[tuple, int] = {}
    out = []
    for p in parts:
        local = np.array([keys.setdefault(rules_play(version(r), t or None),
                                          len(keys)) for r, t in p["plays"]],
                         dtype=np.int64)
        out.append(local[p["play"]])
    return list(keys), np.concatenate(out)


def _banker_cells(coup_ids: np.ndarray, bchoice: np.ndarray) -> np.ndarray:
    """The tableau cell (total x 11 + column) of each coup with a banker's
    choice, from its cards (one small query: those coups are a few in a
    hundred); -1 for the others."""
    out = np.full(len(coup_ids), -1, dtype=np.int64)
    mine = np.flatnonzero(bchoice != NONE)
    if not len(mine):
        return out
    want = coup_ids[mine]
    cells: dict[int, int] = {}
    for lo in range(0, len(want), 5000):
        ids = want[lo:lo + 5000].tolist()
        for pk, punter, banker in (Coup.objects.filter(pk__in=ids).order_by()
                                   .values_list("id", "punter_cards",
                                                "banker_cards")):
            total = (POINTS[banker[0]] + POINTS[banker[1]]) % 10
            col = 0 if len(punter) < 3 else 1 + POINTS[punter[2]]
            cells[pk] = total * COLUMNS + col
    out[mine] = [cells.get(int(i), -1) for i in want]
    return out


def _free_cells(plays: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """Per play: is the punter's 5 free; which banker cells (tableau
    indexes) the house prescribes (a mask over the 88 cells)."""
    punter = np.array([p[2] == "free" for p in plays], dtype=bool)
    banker = np.zeros((len(plays), 8 * COLUMNS), dtype=bool)
    for i, (_, _, _, cells) in enumerate(plays):
        for key, choice in cells:
            if choice == "free":
                continue
            total, _, third = key.partition("/")
            banker[i, int(total) * COLUMNS + (0 if third == "stood" else
                                              int(third) + 1)] = True
    return punter, banker


def _levies(rules_id: np.ndarray, covered: np.ndarray, version: _Rules):
    """Each row's levy on a banker win: odds.levy once per (version, amount)."""
    cents = np.rint(covered * 100).astype(np.int64)
    keys, inverse = np.unique(np.stack([rules_id, cents]), axis=1,
                              return_inverse=True)
    values = np.empty(keys.shape[1], dtype=np.float64)
    for i, (rid, c) in enumerate(keys.T.tolist()):
        r = version(rid)
        values[i] = float(levy(Decimal(c).scaleb(-2), rate=r.commission_rate,
                               unit=r.commission_unit,
                               rounding=r.commission_rounding))
    return values[inverse.ravel()]


def _current(parts: list[dict[str, np.ndarray]]) -> tuple[CoupRows, FloorMix]:
    """Keep each (shoe, seq)'s latest revision; the floor's mix of choices;
    add odds, levies, findings."""
    if not parts:
        return CoupRows.empty(), FloorMix({})
    version = _Rules()
    plays, play = _plays(parts, version)
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]
            if k not in ("plays", "play")}
    cols["play"] = play
    shoe, seq, revision = cols["shoe"], cols["seq"], cols["revision"]
    order = np.lexsort((revision, seq, shoe))
    last = np.ones(len(order), dtype=bool)
    s, q = shoe[order], seq[order]
    last[:-1] = (s[1:] != s[:-1]) | (q[1:] != q[:-1])
    keep = np.sort(order[last])
    cols = {k: v[keep] for k, v in cols.items()}
    cell = _banker_cells(cols["id"], cols["bchoice"])
    punter_free, prescribed = _free_cells(plays)
    play = cols["play"]
    floor = floor_mix(
        punter_choice=cols["pchoice"], banker_choice=cols["bchoice"],
        banker_cell=cell, punter_free=punter_free[play],
        banker_free=~prescribed[play, np.maximum(cell, 0)])
    table = np.array([play_odds(p, floor) for p in plays],
                     dtype=np.float64).reshape(-1, 3)
    odds = table[play]
    drawn = np.array([play_odds(p)[0] for p in plays], dtype=np.float64)
    floor = FloorMix(floor.counts, expected_share=float(odds[:, 0].mean()),
                     drawn_share=float(drawn[play].mean()))
    outcome, covered, commission = cols["outcome"], cols["covered"], cols["commission"]
    found = _finding_flags(cols["id"])
    return CoupRows(
        table=cols["table"], day=cols["day"], shoe=cols["shoe"], seq=cols["seq"],
        at=cols["at"], croupier=cols["croupier"], banker=cols["banker"],
        outcome=outcome, covered=covered, commission=commission,
        banker_net=np.where(outcome == 0, covered - commission,
                            np.where(outcome == 1, -covered, 0.0)),
        levy_win=_levies(cols["rules_id"], covered, version),
        p_banker=odds[:, 0].copy(), p_punter=odds[:, 1].copy(),
        p_tie=odds[:, 2].copy(),
        false_draw=found["false_draw"], corrected=cols["revision"] > 1,
        bank_mismatch=found["bank_mismatch"],
    ), floor


def _finding_flags(coup_ids: np.ndarray) -> dict[str, np.ndarray]:
    """Which of these coups (current revisions) carry a false_draw or a
    bank_mismatch finding."""
    out = {code: np.zeros(len(coup_ids), dtype=bool)
           for code in ("false_draw", "bank_mismatch")}
    if not len(coup_ids):
        return out
    lo, hi = int(coup_ids.min()), int(coup_ids.max())
    hits: dict[str, list[int]] = {code: [] for code in out}
    for coup_id, code in (Finding.objects.filter(
            code__in=list(out), coup_id__gte=lo, coup_id__lte=hi)
            .order_by().values_list("coup_id", "code").iterator(chunk_size=5000)):
        hits[code].append(coup_id)
    for code, found in hits.items():
        if found:
            out[code] = np.isin(coup_ids, np.asarray(found, dtype=np.int64))
    return out


def shoe_closes(*, from_day: date, to_day: date, table_ids=None) -> list[ShoeClose]:
    """The shoes closed in the period (their session's gaming day)."""
    qs = Shoe.objects.filter(closed_at__isnull=False,
                             session__gaming_day__range=(from_day, to_day))
    if table_ids:
        qs = qs.filter(session__table_id__in=list(table_ids))
    out = []
    for (pk, table, day, decks, burned, dealt, counts, left) in qs.order_by(
            "pk").values_list("pk", "session__table_id", "session__gaming_day",
                              "decks", "burned", "dealt", "card_counts",
                              "left_counted"):
        ranks: dict[str, int] = {}
        for code, k in (counts or {}).items():
            rank = code[:1]
            if rank in RANKS:
                ranks[rank] = ranks.get(rank, 0) + int(k)
        out.append(ShoeClose(shoe=pk, table=table, day=day.toordinal(),
                             decks=decks, burned=burned, dealt=dealt,
                             left_counted=left, rank_counts=ranks))
    return out
