"""An honest floor dealt from real shoes (issue 27): the proof of
calibration under card removal.

``synth.honest`` draws each coup's outcome independently from the exact
odds; a real floor deals shoes. Here every shoe is a shuffled pack of
``decks`` x 52 cards: the first card is shown and as many cards as its
value burned (a ten or a picture: ten), coups are dealt in the rule book's
order (punter, banker, punter, banker, then the third cards) while at least
seven cards are left (the cut card before the seventh-last card: docs/rules.md,
"The shoe"), the punter's rule and the banker's tableau are played
(tables.chemmy.tableau), each free choice at a realistic mix (``MIX``), and
a croupier lets a mandatory rule go the wrong way at the floor's false-draw
rate (the coup is played as dealt and carries the false_draw flag). The
shoes of a table-day are dealt one after the other, the last one cut at the
day's end; each is closed with what was really dealt and burned.

Everything is vectorised over the shoes (one numpy step per coup of all the
shoes at once). tests/surveillance/test_dealer.py checks coups against the
rules engine (``tables.chemmy.evaluate``). The expectation the statistics
read is the pipeline's: the floor's observed mix of free choices, exactly
(mix.py), so the calibration tries the whole method.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tables.chemmy.cards import RANKS as CARD_RANKS
from tables.chemmy.cards import SUITS
from tables.chemmy.tableau import COLUMNS, STANDARD_TABLEAU, Action, Tableau

from .data import BANKER, PUNTER, RANKS, TIE, ShoeClose
from .mix import DRAW, NONE, STAND, floor_mix, mixed_probabilities
from .synth import DECKS, FIRST_DAY, Synth, assemble

# Share of draws at each free cell: a floor where many punters stand on 5
# and bankers split at 3 against a 9 and at 5 against a 4.
MIX = {"punter": 0.45, "3/9": 0.55, "5/4": 0.6}
FALSE_DRAW_RATE = 0.003
# the point value of each rank (A 2 .. 9 T J Q K)
_POINTS = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0], dtype=np.int8)
_OPTIONAL, _DRAW = 2, 1


@dataclass(frozen=True)
class Deal:
    """Every coup of S shoes, in (shoe, seq) order, and the shoes."""

    shoe: np.ndarray  # the shoe's index (0..S-1)
    seq: np.ndarray  # 1.. in the shoe
    start: np.ndarray  # the coup's first card's place in the shoe
    used: np.ndarray  # cards the coup took (4 to 6)
    outcome: np.ndarray  # BANKER / PUNTER / TIE
    false_draw: np.ndarray
    punter_choice: np.ndarray  # mix.NONE / DRAW / STAND
    banker_choice: np.ndarray
    banker_cell: np.ndarray  # total x 11 + column (-1: no choice)
    punter_drew: np.ndarray  # bool
    cards: np.ndarray  # (S, decks x 52): the card ids, in dealing order
    burned: np.ndarray  # (S,)

    def codes(self, i: int) -> tuple[list[str], list[str]]:
        """The punter's and the banker's cards of coup i, as the rule book
        writes them (for the rules engine)."""
        ids = self.cards[self.shoe[i], self.start[i]:self.start[i] + self.used[i]]
        code = [CARD_RANKS[(c % 52) // 4] + SUITS[c % 4] for c in ids.tolist()]
        punter, banker = [code[0], code[2]], [code[1], code[3]]
        extra = code[4:]
        if self.punter_drew[i]:
            punter.append(extra.pop(0))
        banker += extra
        return punter, banker


def _tableau_codes(tableau: Tableau) -> np.ndarray:
    code = {Action.STAND: 0, Action.DRAW: _DRAW, Action.OPTIONAL: _OPTIONAL}
    return np.array([code[a] for a in tableau.cells], dtype=np.int8)


def _natural_share(decks: int) -> float:
    """P(either side has a natural), exact over the first four cards."""
    left = [16 * decks] + [4 * decks] * 9
    size = 52 * decks
    total = hit = 0
    for a in range(10):
        wa = left[a]
        left[a] -= 1
        for b in range(10):
            wb = wa * left[b]
            left[b] -= 1
            for c in range(10):
                wc = wb * left[c]
                left[c] -= 1
                for d in range(10):
                    w = wc * left[d]
                    total += w
                    if (a + c) % 10 >= 8 or (b + d) % 10 >= 8:
                        hit += w
                left[c] += 1
            left[b] += 1
        left[a] += 1
    assert total == size * (size - 1) * (size - 2) * (size - 3)
    return hit / total


def deal(shoes: int, rng, *, decks: int = DECKS, tableau: Tableau = STANDARD_TABLEAU,
         mix: dict | None = None, false_draw_rate=FALSE_DRAW_RATE) -> Deal:
    """Deal ``shoes`` shoes to the cut card. ``false_draw_rate``: per coup
    (a float, or one per shoe), the share of coups with a false draw: a coup
    without a natural has a mandatory rule broken with probability
    rate / P(no natural) (the punter's or the banker's, at even odds, the
    other one's when that one's choice was free)."""
    mix = MIX if mix is None else mix
    size = 52 * decks
    cards = rng.permuted(np.tile(np.arange(size, dtype=np.int16), (shoes, 1)),
                         axis=1)
    value = _POINTS[(cards % 52) // 4]
    first = value[:, 0].astype(np.int64)
    burned = 1 + np.where(first == 0, 10, first)
    cells = _tableau_codes(tableau)
    bmix = np.ones(len(cells))
    for key, share in mix.items():
        if key != "punter":
            total, _, third = key.partition("/")
            bmix[int(total) * COLUMNS + (0 if third == "stood" else int(third) + 1)] = (
                float(share))
    p_five = float(mix.get("punter", 1.0))
    err = np.broadcast_to(np.asarray(false_draw_rate, dtype=float), (shoes,)) / (
        1 - _natural_share(decks))
    pos = burned.copy()
    out: dict[str, list] = {k: [] for k in (
        "shoe", "seq", "start", "used", "outcome", "false_draw", "pchoice",
        "bchoice", "bcell", "pdrew")}
    step = 0
    offsets = np.arange(6)
    while True:
        idx = np.flatnonzero(size - pos >= 7)
        if not len(idx):
            break
        step += 1
        c = value[idx[:, None], pos[idx, None] + offsets].astype(np.int64)
        a = len(idx)
        p2 = (c[:, 0] + c[:, 2]) % 10
        b2 = (c[:, 1] + c[:, 3]) % 10
        play = (p2 < 8) & (b2 < 8)
        # the punter: 0-4 draw, 5 free, 6-7 stand
        p_free = play & (p2 == 5)
        pdraw = play & np.where(p2 == 5, rng.random(a) < p_five, p2 <= 4)
        wrong = play & (rng.random(a) < err[idx])
        on_punter = wrong & ~p_free & (rng.random(a) < 0.5)
        pdraw ^= on_punter
        # the banker: his cell of the tableau
        col = np.where(pdraw, 1 + c[:, 4], 0)
        cell = np.where(play, b2 * COLUMNS + col, 0)
        action = cells[cell]
        b_free = play & (action == _OPTIONAL)
        bdraw = play & np.where(b_free, rng.random(a) < bmix[cell], action == _DRAW)
        on_banker = wrong & ~on_punter & ~b_free
        bdraw ^= on_banker
        # a wrong call the banker's free choice could not take goes to the punter
        late = wrong & ~on_punter & b_free & ~p_free
        if late.any():  # re-deal the banker's cell after the punter's error
            pdraw ^= late
            col = np.where(pdraw, 1 + c[:, 4], 0)
            cell = np.where(play, b2 * COLUMNS + col, 0)
            action = cells[cell]
            re = late & (action != _OPTIONAL)
            bdraw = np.where(re, action == _DRAW, bdraw)
            b_free = np.where(late, action == _OPTIONAL, b_free)
            bdraw = np.where(late & b_free, rng.random(a) < bmix[cell], bdraw)
        pt = (p2 + np.where(pdraw, c[:, 4], 0)) % 10
        third = np.where(pdraw, c[:, 5], c[:, 4])
        bt = (b2 + np.where(bdraw, third, 0)) % 10
        outcome = np.where(bt > pt, BANKER, np.where(pt > bt, PUNTER, TIE))
        used = 4 + pdraw.astype(np.int64) + bdraw.astype(np.int64)
        out["shoe"].append(idx)
        out["seq"].append(np.full(a, step))
        out["start"].append(pos[idx].copy())
        out["used"].append(used)
        out["outcome"].append(outcome.astype(np.int8))
        out["false_draw"].append(on_punter | on_banker | late)
        out["pchoice"].append(np.where(p_free, np.where(pdraw, DRAW, STAND), NONE))
        out["bchoice"].append(np.where(b_free, np.where(bdraw, DRAW, STAND), NONE))
        out["bcell"].append(np.where(b_free, cell, -1))
        out["pdrew"].append(pdraw)
        pos[idx] += used
    cols = {k: np.concatenate(v) for k, v in out.items()}
    order = np.lexsort((cols["seq"], cols["shoe"]))
    cols = {k: v[order] for k, v in cols.items()}
    d = Deal(shoe=cols["shoe"], seq=cols["seq"], start=cols["start"],
             used=cols["used"], outcome=cols["outcome"],
             false_draw=cols["false_draw"], punter_choice=cols["pchoice"],
             banker_choice=cols["bchoice"], banker_cell=cols["bcell"],
             punter_drew=cols["pdrew"], cards=cards, burned=burned)
    return d


def honest(*, tables: int = 40, days: int = 1, coups_per_day: int = 1000,
           seed: int = 0, first_day: int = FIRST_DAY, decks: int = DECKS,
           mix: dict | None = None,
           false_draw_rate: float = FALSE_DRAW_RATE) -> Synth:
    """A floor of tables x days x coups_per_day coups dealt from real shoes,
    its people and money as synth.honest's, its expectation at its own
    observed mix of free choices; the shoes it dealt from, closed."""
    rng = np.random.default_rng(seed)
    c = coups_per_day
    td_count = tables * days
    per_day = c // 40 + 2  # a shoe gives at least ~48 coups
    d = deal(td_count * per_day, rng, decks=decks, mix=mix,
             false_draw_rate=false_draw_rate)
    td_of_shoe = d.shoe // per_day
    # the day's coups: its shoes one after the other, cut at c coups
    counts = np.bincount(td_of_shoe, minlength=td_count)
    if counts.min() < c:
        raise ValueError("too few shoes dealt for a day")  # cannot happen
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    place = np.arange(len(d.shoe)) - first[td_of_shoe]
    keep = place < c
    td = td_of_shoe[keep]
    pos = place[keep]
    shoe_index = d.shoe[keep]
    shoe = td * 1000 + shoe_index % per_day + 1
    floor = floor_mix(punter_choice=d.punter_choice[keep],
                      banker_choice=d.banker_choice[keep],
                      banker_cell=d.banker_cell[keep],
                      punter_free=np.ones(len(td), bool),
                      banker_free=np.ones(len(td), bool))
    probs = mixed_probabilities(decks=decks, mix=floor)
    rows, turn, shift = assemble(
        rng, td=td, pos=pos, c=c, tables=tables, days=days, first_day=first_day,
        shoe=shoe, seq=d.seq[keep], outcome=d.outcome[keep],
        false_draw=d.false_draw[keep], probs=probs)
    closes = _closes(d, keep, shoe_index, shoe, rows, decks)
    return Synth(rows, closes, turn, shift, {"mix": floor.counts})


def _closes(d: Deal, keep, shoe_index, shoe_id, rows, decks) -> list[ShoeClose]:
    """Each shoe the floor dealt from, closed with the cards its kept coups
    took, the cards burned and the rest counted (the last shoe of a day is
    closed at the day's end)."""
    size = 52 * decks
    ids, at = np.unique(shoe_index, return_index=True)
    dealt = np.bincount(shoe_index, weights=d.used[keep],
                        minlength=len(d.burned)).astype(np.int64)
    out = []
    ranks = (d.cards % 52) // 4
    for s, i in zip(ids.tolist(), at.tolist(), strict=True):
        b, n = int(d.burned[s]), int(dealt[s])
        counts = np.bincount(ranks[s, b:b + n], minlength=13)
        out.append(ShoeClose(
            shoe=int(shoe_id[i]), table=int(rows.table[i]), day=int(rows.day[i]),
            decks=decks, burned=b, dealt=n, left_counted=size - b - n,
            rank_counts={r: int(k) for r, k in zip(RANKS, counts, strict=True)}))
    return out
