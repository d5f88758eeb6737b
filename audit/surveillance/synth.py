"""Seeded synthetic coups (pure: no database) and the issue's four patterns.

``honest(...)`` deals tables x gaming days x coups: outcomes drawn from the
exact probabilities of the default house rules (``odds.house_odds``), shoes of
55-60 coups, three croupier shifts per table-day, banker turns that go on
while the banker wins and end when the punter wins (or when he passes after a
win), seated players with a card number or not, covered amounts, the levy
under the default rounding, and findings at floor rates.

The injections (``inject_*``) take a ``Synth`` and return a new one with the
pattern and its truth (what a detector should find). Their parameters are
module constants so that ``manage.py simulate`` can inject the same patterns
into the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date

import numpy as np

from audit.reports.odds import house_odds

from .data import BANKER, PUNTER, RANKS, CoupRows, ShoeClose

# the patterns
CROUPIER_FACTOR = 3.0  # false draws at 3x the floor's rate
CROUPIER_COUPS = 5_000  # ... within 5,000 of his coups
BANKER_SHARE = 0.52  # a banker winning 52 % of his coups (honest: ~45.9 %)
BANKER_COUPS = 5_000
TABLE_SHARE = 0.42  # a table's recorded banker wins fall to 42 % ...
TABLE_DAYS = 7  # ... found within 7 gaming days of 1,000 coups
SHORT_RANK = "9"  # a shoe short of four 9s
SHORT_COUNT = 4

# floor rates of the findings on honest play
FALSE_DRAW_RATE = 0.005
CORRECTION_RATE = 0.002
BANK_MISMATCH_RATE = 0.0005
PASS_RATE = 0.15  # a winning banker passes the bank
CARD_SHARE = 0.8  # players who give their card number
SEATS = 9
DECKS = 6
FIRST_DAY = date(2026, 1, 5).toordinal()


@dataclass(frozen=True, eq=False)
class Synth:
    rows: CoupRows
    shoes: list[ShoeClose]
    turn: np.ndarray  # global banker-turn id of each row
    shift: np.ndarray  # global croupier-shift id of each row
    truth: dict = field(default_factory=dict)


def default_probabilities() -> tuple[float, float, float]:
    odds = house_odds(decks=DECKS)
    return float(odds.p_banker), float(odds.p_punter), float(odds.p_tie)


def honest(
    *,
    tables: int = 40,
    days: int = 1,
    coups_per_day: int = 1000,
    seed: int = 0,
    first_day: int = FIRST_DAY,
    false_draw_rate: float = FALSE_DRAW_RATE,
) -> Synth:
    rng = np.random.default_rng(seed)
    pb, pp, pt = default_probabilities()
    c = coups_per_day
    td_count = tables * days
    n = td_count * c
    td = np.repeat(np.arange(td_count), c)
    pos = np.tile(np.arange(c), td_count)

    # shoes: 55-60 coups each, cut at the day's end
    lengths = rng.integers(55, 61, size=(td_count, c // 55 + 2))
    ends = np.cumsum(lengths, axis=1)
    shoe_in_day = np.empty(n, dtype=np.int64)
    for t in range(td_count):  # one searchsorted per table-day
        shoe_in_day[t * c:(t + 1) * c] = np.searchsorted(
            ends[t], np.arange(c), side="right")
    shoe = td * 1000 + shoe_in_day + 1
    starts = np.zeros_like(ends)
    starts[:, 1:] = ends[:, :-1]
    seq = pos - starts[td, shoe_in_day] + 1

    u = rng.random(n)
    outcome = np.where(u < pb, BANKER, np.where(u < pb + pp, PUNTER, 2)).astype(
        np.int8)
    rows, turn, shift = assemble(
        rng, td=td, pos=pos, c=c, tables=tables, days=days, first_day=first_day,
        shoe=shoe, seq=seq, outcome=outcome,
        false_draw=false_draw_rate, probs=(pb, pp, pt))
    shoes = _close_shoes(rows, rng)
    return Synth(rows, shoes, turn, shift, {})


def assemble(rng, *, td, pos, c: int, tables: int, days: int, first_day: int,
             shoe, seq, outcome, false_draw, probs) -> tuple[CoupRows, np.ndarray,
                                                           np.ndarray]:
    """The floor around the cards: croupiers' shifts, banker turns (a new
    one after a punter win, or after a win and a pass), the bankers'
    identities, covered amounts, levies and the other findings at floor
    rates; (rows, turn, shift). ``td``: each coup's table-day (0..), ``pos``
    its place in the day (0..c-1); ``probs``: (P banker, P punter, P tie),
    three floats or three arrays; ``false_draw``: each coup's flag, or a
    floor rate to draw them at."""
    n = len(td)
    td_count = tables * days
    table = td // days + 1
    day = first_day + td % days
    pb, pp, pt = (np.broadcast_to(np.asarray(x, dtype=float), (n,)).copy()
                  for x in probs)

    # croupiers: three shifts a table-day from a pool
    shift_in_day = pos * 3 // c
    shift = td * 3 + shift_in_day
    pool = max(6, tables * 3 // 2)
    croupier = 100 + rng.integers(0, pool, size=td_count * 3)[shift]

    # banker turns: a new turn after a punter win, or after a win and a pass
    passes = rng.random(n) < PASS_RATE
    ends_turn = (outcome == PUNTER) | ((outcome == BANKER) & passes)
    new_turn = np.empty(n, dtype=bool)
    new_turn[0] = True
    new_turn[1:] = ends_turn[:-1] | (td[1:] != td[:-1])
    turn = np.cumsum(new_turn) - 1
    turn_start = np.flatnonzero(new_turn)
    turn_td = td[turn_start]
    first_turn_of_td = np.searchsorted(turn_td, np.arange(td_count))
    turn_in_td = np.arange(len(turn_start)) - first_turn_of_td[turn_td]
    first_seat = rng.integers(0, SEATS, size=td_count)
    seat = (first_seat[td] + turn_in_td[turn]) % SEATS
    cards = rng.integers(1, 20 * tables + 1, size=(td_count, SEATS))
    has_card = rng.random((td_count, SEATS)) < CARD_SHARE
    names = np.empty((td_count, SEATS), dtype=object)
    for t in range(td_count):
        for s in range(SEATS):
            names[t, s] = (f"card:{cards[t, s]}" if has_card[t, s]
                           else f"seat:{s + 1}@session:{t + 1}")
    banker = names[td, seat]

    covered = np.maximum(10.0, np.round(rng.lognormal(np.log(400), 0.8, n) / 10)
                         * 10)
    levy_win = np.round(0.05 * covered, 1)
    rows = CoupRows(
        table=table.astype(np.int64), day=day.astype(np.int64),
        shoe=shoe.astype(np.int64), seq=seq.astype(np.int64),
        at=(td % days * 86_400 + pos * 60).astype(np.int64),
        croupier=croupier.astype(np.int64), banker=banker, outcome=outcome,
        covered=covered, commission=np.zeros(n), banker_net=np.zeros(n),
        levy_win=levy_win, p_banker=pb, p_punter=pp, p_tie=pt,
        false_draw=(rng.random(n) < false_draw if np.isscalar(false_draw)
                    else np.asarray(false_draw, dtype=bool)),
        corrected=rng.random(n) < CORRECTION_RATE,
        bank_mismatch=rng.random(n) < BANK_MISMATCH_RATE,
    )
    return _settle(rows), turn, shift


def _settle(rows: CoupRows) -> CoupRows:
    win = rows.outcome == BANKER
    lose = rows.outcome == PUNTER
    commission = np.where(win, rows.levy_win, 0.0)
    net = np.where(win, rows.covered - rows.levy_win,
                   np.where(lose, -rows.covered, 0.0))
    return replace(rows, commission=commission, banker_net=net)


def _close_shoes(rows: CoupRows, rng, short: dict | None = None) -> list[ShoeClose]:
    ids, first, counts = np.unique(rows.shoe, return_index=True, return_counts=True)
    cards = 4 + rng.binomial(2, 0.45, size=len(rows.shoe))
    dealt_all = np.bincount(np.searchsorted(ids, rows.shoe), weights=cards,
                            minlength=len(ids)).astype(int)
    out = []
    for i, s in enumerate(ids):
        out.append(_close(int(s), int(rows.table[first[i]]), int(rows.day[first[i]]),
                          int(dealt_all[i]), rng, (short or {}).get(int(s))))
    return out


def _close(shoe, table, day, dealt, rng, missing=None) -> ShoeClose:
    full = [4 * DECKS] * len(RANKS)
    if missing:
        for rank, k in missing.items():
            full[RANKS.index(rank)] -= k
    burned = int(rng.integers(1, 11))
    size = sum(full)
    dealt = min(dealt, size - burned - 7)
    ranks = rng.multivariate_hypergeometric(full, dealt)
    return ShoeClose(
        shoe=shoe, table=table, day=day, decks=DECKS, burned=burned, dealt=dealt,
        left_counted=size - burned - dealt,
        rank_counts={r: int(k) for r, k in zip(RANKS, ranks, strict=True)},
    )


def _pick_groups(group: np.ndarray, budget: int, rng, where=None) -> np.ndarray:
    """Random whole groups (shifts, turns) adding up to at most ``budget``
    rows, among the rows ``where`` (a mask; default all); a mask of their
    rows."""
    ids, sizes = np.unique(group if where is None else group[where],
                           return_counts=True)
    order = rng.permutation(len(ids))
    take = order[np.cumsum(sizes[order]) <= budget]
    return np.isin(group, ids[take])


def inject_croupier(s: Synth, *, seed: int, coups: int = CROUPIER_COUPS,
                    factor: float = CROUPIER_FACTOR, croupier: int = 99,
                    where: np.ndarray | None = None,
                    rate: float = FALSE_DRAW_RATE) -> Synth:
    """A croupier at ``factor`` x the floor's false-draw ``rate`` over whole
    shifts adding up to at most ``coups``."""
    rng = np.random.default_rng(seed)
    mine = _pick_groups(s.shift, coups, rng, where)
    cr = s.rows.croupier.copy()
    cr[mine] = croupier
    fd = s.rows.false_draw.copy()
    fd[mine] = rng.random(int(mine.sum())) < rate * factor
    rows = replace(s.rows, croupier=cr, false_draw=fd)
    truth = {**s.truth, "croupier": {"subject": f"croupier:{croupier}",
                                     "coups": int(mine.sum())}}
    return replace(s, rows=rows, truth=truth)


def inject_banker(s: Synth, *, seed: int, coups: int = BANKER_COUPS,
                  share: float = BANKER_SHARE, card: int = 999_999,
                  where: np.ndarray | None = None) -> Synth:
    rng = np.random.default_rng(seed)
    mine = _pick_groups(s.turn, coups, rng, where)
    label = f"card:{card}"
    banker = s.rows.banker.copy()
    banker[mine] = label
    out = s.rows.outcome.copy()
    flip = ((share - s.rows.p_banker) / s.rows.p_punter)
    turn_to_win = mine & (out == PUNTER) & (rng.random(len(out)) < flip)
    out[turn_to_win] = BANKER
    rows = _settle(replace(s.rows, banker=banker, outcome=out))
    truth = {**s.truth, "banker": {"subject": label, "coups": int(mine.sum())}}
    return replace(s, rows=rows, truth=truth)


def inject_table(s: Synth, *, seed: int, table: int, from_day: int,
                 share: float = TABLE_SHARE) -> Synth:
    """A table whose recorded banker wins fall to ``share`` from a day on
    (banker wins recorded as punter wins), or rise to it (the other way)."""
    rng = np.random.default_rng(seed)
    mine = (s.rows.table == table) & (s.rows.day >= from_day)
    out = s.rows.outcome.copy()
    u = rng.random(len(out))
    drop = 1 - share / s.rows.p_banker
    lost = mine & (out == BANKER) & (u < drop)
    gain = (share - s.rows.p_banker) / s.rows.p_punter
    won = mine & (out == PUNTER) & (u < gain)
    out[lost] = PUNTER
    out[won] = BANKER
    rows = _settle(replace(s.rows, outcome=out))
    truth = {**s.truth, "table": {"subject": f"table:{table}", "table": table,
                                  "from_day": from_day}}
    return replace(s, rows=rows, truth=truth)


def inject_short_shoe(s: Synth, *, seed: int, shoe: int, rank: str = SHORT_RANK,
                      count: int = SHORT_COUNT) -> Synth:
    rng = np.random.default_rng(seed)
    shoes = []
    for c in s.shoes:
        if c.shoe == shoe:
            c = _close(c.shoe, c.table, c.day, c.dealt, rng, {rank: count})
        shoes.append(c)
    truth = {**s.truth, "shoe": {"subject": f"shoe:{shoe}", "shoe": shoe}}
    return replace(s, shoes=shoes, truth=truth)
