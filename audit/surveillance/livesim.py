"""The live surveillance simulated shift by shift (issue 38): what
``bench/calibrate.py --live`` and tests/surveillance/test_live_calibration.py
measure.

A shift is one gaming day of a floor of ``tables`` tables dealt from real
shoes (``dealer.honest``: card removal, burned cards, the cut card, free
choices at a mix, false draws at the floor's rate), ``coups`` coups a table
(a coup a minute), the tables dealing side by side. The live path looks
every ``every`` coups of each table (every few minutes; shoe closes fall
between). At each look every family's tallies of the day so far (per
croupier, banker, table: coups and events per group of the same null
probability) go through ``livetests.look`` with the levels the live path
uses:

- the budget: ``livetests.budget_for`` of the previous gaming day's subject
  counts (the day before tonight, dealt too) and the open tables;
- the levels: ``livetests.shift_levels(alpha, budget)``;
- the croupier's reference rate: ``livetests.reference_rate`` of the floor's
  false draws over the trailing ``history`` closed days (their count drawn
  as the dealer makes them: each coup independently at the floor's rate);
- the banker-win probability: each coup's exact odds at the floor's observed
  mix of free choices (as the nightly weighs it).

Each subject's test is also followed after every coup (``ever``): Lambda
only moves at a coup, so this is the most any schedule of looks (ticks,
shoe closes, both) could see -- the bound's worst case.

Planted (``Plant``): from coup ``start`` of the day (a quarter in by
default) a croupier who deals table 1 all day false-draws at ``croupier``
times the floor's rate, a banker who holds the bank at table 2 all day wins
``banker`` of the coups (punter wins turned into banker wins, as
``synth.inject_banker``), and table 3's recorded banker wins fall to
``table`` (banker wins recorded as punter wins). Each is found when its
test crosses at a look at or after the start; the delay is the subject's
coups from the start to that look.

``coups_to_alert`` is the test alone on Bernoulli coups without the end of
a shift: how many coups a cheat who went on would need.

Pure numpy (and the dealer): no Django, no database.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import dealer
from .data import BANKER, PUNTER, CoupRows
from .livetests import (
    FAMILIES,
    Tally,
    budget_for,
    look,
    over_budget,
    reference_rate,
    shift_levels,
)
from .sequential import Design, log_lambda

__all__ = ["Floor", "Plant", "Shift", "shift", "coups_to_alert", "PLANTED"]

PLANTED = {"croupier": "croupier:99999", "banker": "card:999999", "table": "table:3"}


@dataclass(frozen=True)
class Floor:
    tables: int = 40
    coups: int = 1000  # a table's coups in the gaming day
    rate: float = 0.003  # the floor's false-draw rate
    alpha: float = 0.03  # the per-shift bound on any live alert
    every: int = 5  # a look every `every` coups of each table
    history: int = 28  # closed days behind the croupier's reference rate
    history_rate: float | None = None  # their rate (None: the floor's rate)
    # the tables split evenly over houses of these decks (several houses:
    # the banker and table tallies carry a group per house's odds)
    decks: tuple[int, ...] = (6,)


@dataclass(frozen=True)
class Plant:
    croupier: float = 3.0  # false draws at this factor of the floor's rate
    banker: float = 0.52  # the banker's share of wins
    table: float = 0.42  # the table's recorded banker-win share
    start: int | None = None  # the coup of the day it starts (None: a quarter in)


@dataclass
class Shift:
    budget: dict
    levels: dict
    q_croupier: float
    alerts: dict = field(default_factory=dict)  # (family, subject) -> (look, LiveAlert)
    ever: dict = field(default_factory=dict)  # family -> crossed after some coup
    over: dict = field(default_factory=dict)  # livetests.over_budget at the last look
    # planted: family -> {"coups": his coups from the start, "delay": coups
    # from the start to the alert (None: not found), "early": alerted before}
    planted: dict = field(default_factory=dict)

    @property
    def any_alert(self) -> bool:
        return bool(self.alerts)

    @property
    def any_ever(self) -> bool:
        return any(self.ever.values())


def _families(table, croupier, banker, outcome, false_draw, p_banker, q_croupier):
    """Per family: (subject labels of each row, event of each row, null q)."""
    win = outcome == BANKER
    return {
        "croupier": (np.char.add("croupier:", croupier.astype(str)), false_draw,
                     np.full(len(table), q_croupier)),
        "banker": (banker.astype(str), win, p_banker),
        "table": (np.char.add("table:", table.astype(str)), win, p_banker),
    }


def _deal(floor: Floor, seed: int) -> CoupRows:
    """Two gaming days of the floor (the previous one and tonight), its
    tables split over ``floor.decks``' houses, each dealt from real shoes
    with its own croupiers and the expectation of its own house at its
    observed mix; the bankers' card numbers are the floor's (one may bank at
    tables of two houses)."""
    parts = []
    split = np.array_split(np.arange(floor.tables), len(floor.decks))
    for i, (decks, tables) in enumerate(zip(floor.decks, split, strict=True)):
        if not len(tables):
            continue
        rows = dealer.honest(tables=len(tables), days=2, coups_per_day=floor.coups,
                             seed=seed if i == 0 else seed * 100 + i, decks=decks,
                             false_draw_rate=floor.rate).rows
        parts.append(replace(rows, table=rows.table + int(tables[0]),
                             croupier=rows.croupier + 10_000 * i))
    return parts[0] if len(parts) == 1 else CoupRows.concat(parts)


def shift(floor: Floor, seed: int, plant: Plant | None = None) -> Shift:
    """One simulated gaming day, looked at as the live path looks."""
    rows = _deal(floor, seed)
    prev = rows.day == rows.day.min()
    budget = budget_for({"croupier": len(np.unique(rows.croupier[prev])),
                         "banker": len(np.unique(rows.banker[prev])),
                         "table": len(np.unique(rows.table[prev]))}, floor.tables)
    levels = shift_levels(floor.alpha, budget)
    rng = np.random.default_rng([seed, 38])
    past = floor.history * floor.tables * floor.coups
    before = floor.rate if floor.history_rate is None else floor.history_rate
    q_cr = reference_rate(int(rng.binomial(past, before)), past)
    night = ~prev
    table = rows.table[night]
    pos = (rows.at[night] % 86_400) // 60
    croupier = rows.croupier[night].copy()
    banker = rows.banker[night].copy()
    outcome = rows.outcome[night].copy()
    false_draw = rows.false_draw[night].copy()
    pb, pp = rows.p_banker[night], rows.p_punter[night]
    out = Shift(budget=budget, levels=levels, q_croupier=q_cr)
    mine = {}
    if plant is not None:
        start = floor.coups // 4 if plant.start is None else plant.start
        t1, t2 = table == 1, table == 2
        croupier[t1] = 99_999
        cheat = t1 & (pos >= start)
        false_draw[cheat] = rng.random(int(cheat.sum())) < plant.croupier * floor.rate
        banker[t2] = PLANTED["banker"]
        u = rng.random(len(outcome))
        won = t2 & (pos >= start) & (outcome == PUNTER) & (u < (plant.banker - pb) / pp)
        fell = (table == 3) & (pos >= start) & (outcome == BANKER) & (
            u < 1 - plant.table / pb)
        outcome[won] = BANKER
        outcome[fell] = PUNTER
        mine = {"croupier": t1, "banker": t2, "table": table == 3}
    fam = _families(table, croupier, banker, outcome, false_draw, pb, q_cr)
    looks = -(-floor.coups // floor.every)
    window = pos // floor.every
    tallies_last = {}
    for family, (label, event, q) in fam.items():
        subjects, subj = np.unique(label, return_inverse=True)
        qs, grp = np.unique(q, return_inverse=True)
        n_s, n_g = len(subjects), len(qs)
        key = (subj * n_g + grp) * looks + window
        size = n_s * n_g * looks
        n = np.bincount(key, minlength=size).reshape(n_s, n_g, looks).cumsum(axis=2)
        x = np.bincount(key, weights=event, minlength=size).reshape(
            n_s, n_g, looks).cumsum(axis=2)
        for w in range(looks):
            seen = n[:, :, w].sum(axis=1) > 0
            tally = Tally(subjects=tuple(subjects[seen].tolist()),
                          n=n[seen, :, w], x=x[seen, :, w], q=qs)
            for a in look({family: tally}, levels):
                out.alerts.setdefault((family, a.subject), (w, a))
            tallies_last[family] = tally
        # after every coup: each row's subject's tally so far
        order = np.lexsort((pos, subj))
        onehot = np.zeros((len(order), n_g))
        onehot[np.arange(len(order)), grp[order]] = 1.0
        cn = onehot.cumsum(axis=0)
        cx = (onehot * event[order][:, None]).cumsum(axis=0)
        first = np.searchsorted(subj[order], np.arange(n_s))
        base = np.vstack([np.zeros((1, n_g)), cn])[first][subj[order]]
        basex = np.vstack([np.zeros((1, n_g)), cx])[first][subj[order]]
        ll = log_lambda(FAMILIES[family], cn - base, cx - basex, qs)
        out.ever[family] = bool((ll >= -np.log(levels[family])).any())
        if family in mine:
            sub = PLANTED[family]
            rows_of = mine[family]
            hit = out.alerts.get((family, sub))
            after = rows_of & (pos >= start)
            rec = {"coups": int(after.sum()), "delay": None, "early": False}
            if hit is not None:
                end = (hit[0] + 1) * floor.every  # the look sees pos < end
                if end <= start:
                    rec["early"] = True
                else:
                    rec["delay"] = int((after & (pos < end)).sum())
            out.planted[family] = rec
    out.over = over_budget(tallies_last, budget)
    return out


def coups_to_alert(design: Design, q_null: float, q_true: float, level: float, *,
                   runs: int, max_coups: int, seed: int) -> np.ndarray:
    """Coups until the test crosses 1/level, a look after every coup, for
    ``runs`` subjects whose events come at ``q_true`` against the null
    ``q_null`` (np.inf: not within ``max_coups``)."""
    rng = np.random.default_rng(seed)
    x = (rng.random((runs, max_coups)) < q_true).cumsum(axis=1, dtype=np.int64)
    n = np.arange(1, max_coups + 1)
    acc = np.full((runs, max_coups), -np.inf)
    for theta, lw in zip(design.thetas, design.log_weights, strict=True):
        acc = np.logaddexp(acc, lw + x * theta - n * np.log1p(q_null * np.expm1(theta)))
    crossed = acc >= -np.log(level)
    at = np.where(crossed.any(axis=1), crossed.argmax(axis=1) + 1.0, np.inf)
    return at
