"""The live surveillance simulated over a run of gaming days (issue 38):
what ``bench/calibrate.py --live`` and
tests/surveillance/test_live_calibration.py measure.

A run is ``days`` consecutive gaming days of a floor of ``tables`` tables
(plus the day before the first, dealt for the first day's budget), each day
dealt from real shoes (``dealer.honest``: card removal, burned cards, the
cut card, free choices at a mix, false draws at the floor's rate), ``coups``
coups a table (a coup a minute), the tables dealing side by side. Each day
is dealt on its own (its own shoes, its own croupiers' shifts drawn from the
floor's pool, its own observed mix of free choices, so its own banker-win
odds); croupiers and card-holding bankers come back from day to day as on a
real floor (the pool and the card numbers are the floor's), a seat without
a card is a new subject each day.

The live path looks every ``every`` coups of each table. At each look,
exactly as the live path does (``livetests``): each family's ``DayTally`` of
the closed days still in a window and of tonight so far (per subject and
group of the same null probability: the day's croupier reference rate, the
day's banker-win odds of each house) go through ``windows(window_days=)``,
``look_windows`` with each window's levels (``shift_levels(alpha,
budget_for(the counts of the day before its first day, the tables))``) and
``raise_once`` with the charged windows carried from look to look and day to
day; what ``raise_once`` returns are the alerts raised.

The croupier's reference rate of day d is ``reference_rate`` of the floor's
false draws over the ``history`` closed days before d: the days of the run
before d as dealt (a planted cheat's false draws included), the days before
the run drawn as the dealer makes them (each coup independently at
``history_rate``, by default the floor's rate).

**Every look, computed cheaply.** Calling ``windows`` / ``look_windows`` at
each of a run's 2,000 looks would cost about 20 s a run; instead each
subject's log Lambda in each window is followed after *every* coup (it is a
sum over his coups of each alternative's log likelihood ratio, so a cumulative
sum), which also gives the bound's worst case (``ever``: had the live path
looked after every coup, an alert is raised on the day a window of a subject
first crosses). A look can raise an alert only if a window of a subject is
crossed at it and was not charged before, and a window crossed at a look was
crossed after the subject's last coup before it, which that look (or an
earlier one that then charged it) saw: so the live functions are called at
the looks that follow a coup after which some uncharged window had crossed
(a margin of 1e-9 on the level makes the screen a superset), and every other
look would have raised nothing. ``run(..., every_look=True)`` calls them at
every look instead (tests/surveillance/test_live_calibration.py checks that
both give the same alerts).

Planted (``Plant``): from coup ``start`` of gaming day ``day`` of the run
(by default the second day, a quarter in: the first day and the first
quarter of the second are honest) to the end of the run, a croupier
(99999) who deals table 1 every day false-draws at ``croupier`` times the
floor's rate, a banker (card 999999) who holds the bank at table 2 every day
wins ``banker`` of the coups (punter wins turned into banker wins, as
``synth.inject_banker``), and table 3's recorded banker wins fall to
``table`` (banker wins recorded as punter wins). Each is found at the first
alert raised on him at a look that has seen a coup of the cheating; the
delay is his coups from the start to that look, and the gaming days to it (1:
the day the cheating started).

``coups_to_alert`` is the test alone on Bernoulli coups: how many coups a
cheat needs at a level.

Pure numpy (and the dealer): no Django, no database.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import dealer
from . import livetests as lt
from .data import BANKER, PUNTER, CoupRows
from .livetests import FAMILIES, WINDOW_DAYS, DayTally, budget_for, reference_rate
from .sequential import Design

__all__ = ["Floor", "Plant", "Run", "deal", "run", "coups_to_alert", "PLANTED"]

PLANTED = {"croupier": "croupier:99999", "banker": "card:999999", "table": "table:3"}
# the screen's margin on the level (a superset of the live path's crossings)
MARGIN = 1e-9


@dataclass(frozen=True)
class Floor:
    tables: int = 40
    coups: int = 1000  # a table's coups in a gaming day
    rate: float = 0.003  # the floor's false-draw rate
    alpha: float = 0.03  # the per-shift bound on any live alert
    every: int = 5  # a look every `every` coups of each table
    history: int = 28  # closed days behind the croupier's reference rate
    history_rate: float | None = None  # the rate before the run (None: the floor's)
    # the tables split evenly over houses of these decks (several houses:
    # the banker and table tallies carry a group per house's odds)
    decks: tuple[int, ...] = (6,)
    days: int = 10  # gaming days looked at (the day before the first is dealt too)
    window_days: int = WINDOW_DAYS


@dataclass(frozen=True)
class Plant:
    croupier: float | None = 3.0  # false draws at this factor of the floor's rate
    banker: float | None = 0.52  # the banker's share of wins
    table: float | None = 0.42  # the table's recorded banker-win share
    day: int = 2  # the gaming day of the run (1..days) it starts
    start: int | None = None  # the coup of that day (None: a quarter in)

    def families(self) -> list[str]:
        """The families planted (a pattern set to None is not)."""
        return [f for f in ("croupier", "banker", "table")
                if getattr(self, f) is not None]


@dataclass
class Run:
    budgets: dict  # day -> the day's budget (budget_for of the day before)
    levels: dict  # window start (day) -> shift_levels
    q_croupier: dict  # day -> the croupier reference rate
    # raised alerts, in order: (day, look of the day, LiveAlert)
    alerts: list = field(default_factory=list)
    # had every coup been looked at: (family, subject, window start) -> the
    # day its window first crossed
    ever: dict = field(default_factory=dict)
    over: dict = field(default_factory=dict)  # day -> over_budget of the day
    calls: int = 0  # looks at which the live functions were called
    # planted: family -> {"coups": his coups from the start to the run's end,
    # "delay": coups from the start to the alert, "days": gaming days to it
    # (None: not found), "early": raised on him before the start}
    planted: dict = field(default_factory=dict)
    days: int = 0
    window_days: int = WINDOW_DAYS

    @property
    def alert_days(self) -> set[int]:
        """The gaming days with any live alert raised."""
        return {d for d, _, _ in self.alerts}

    @property
    def ever_days(self) -> set[int]:
        """The days with an alert had every coup been looked at."""
        return set(self.ever.values())

    @property
    def steady(self) -> range:
        """The days with every window of the run open: from ``window_days``."""
        return range(min(self.window_days, self.days + 1), self.days + 1)

    @property
    def complete(self) -> range:
        """The windows started on a day that ran their full length."""
        return range(1, self.days - self.window_days + 2)


def _seed(seed: int, *parts: int) -> int:
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0])


def _deal_day(floor: Floor, seed: int, day: int) -> CoupRows:
    """Gaming day ``day`` (0: the day before the run) of the floor, its
    tables split over ``floor.decks``' houses, each dealt from real shoes
    with its own croupiers (the pool's ids: they come back each day) and the
    odds of its own house at the day's observed mix. A seat without a card
    ("seat:..@session:..") is a new subject each day (``_families``)."""
    parts = []
    split = np.array_split(np.arange(floor.tables), len(floor.decks))
    for i, (decks, tables) in enumerate(zip(floor.decks, split, strict=True)):
        if not len(tables):
            continue
        rows = dealer.honest(tables=len(tables), days=1, coups_per_day=floor.coups,
                             seed=_seed(seed, day, i), decks=decks,
                             false_draw_rate=floor.rate).rows
        parts.append(replace(rows, table=rows.table + int(tables[0]),
                             croupier=rows.croupier + 10_000 * i,
                             day=np.full(len(rows.day), day, dtype=np.int64)))
    return parts[0] if len(parts) == 1 else CoupRows.concat(parts)


@dataclass
class _Family:
    """One family's coups of days 1..D: each row's subject (an index into
    ``labels``), event, null probability, day and coup of the day."""

    name: str
    labels: np.ndarray
    subj: np.ndarray
    event: np.ndarray
    q: np.ndarray
    day: np.ndarray
    pos: np.ndarray


def _factorize(label, day) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct subjects' labels, each row's index into them): a card
    is the same subject every day, a seat without a card one subject a day
    (its label gets the day)."""
    names, k = np.unique(label.astype("S"), return_inverse=True)
    card = np.char.startswith(names, b"card:")
    key = k * (int(day.max()) + 1) + np.where(card[k], 0, day)
    keys, subj = np.unique(key, return_inverse=True)
    k_of, d_of = np.divmod(keys, int(day.max()) + 1)
    labels = np.array([n.decode() if c else f"{n.decode()}/day:{d}" for n, c, d in
                       zip(names[k_of].tolist(), card[k_of].tolist(), d_of.tolist(),
                           strict=True)], dtype=object)
    return labels, subj


def _families(day, pos, table, croupier, banker, outcome, false_draw, pb, q_day):
    win = (outcome == BANKER).astype(float)
    out = {}
    for name, prefix, who, event, q in (
            ("croupier", "croupier:", croupier, false_draw.astype(float), q_day[day]),
            ("banker", None, banker, win, pb),
            ("table", "table:", table, win, pb)):
        if prefix is None:
            labels, subj = _factorize(who, day)
        else:
            ids, subj = np.unique(who, return_inverse=True)
            labels = np.array([f"{prefix}{i}" for i in ids.tolist()], dtype=object)
        out[name] = _Family(name, labels, subj, event, q, day, pos)
    return out


def _day_tally(f: _Family, d: int, upto: int | None = None) -> DayTally:
    """The family's DayTally of day d, its coups before coup ``upto`` of the
    day (None: the whole day)."""
    m = f.day == d
    if upto is not None:
        m &= f.pos < upto
    subj, q = f.subj[m], f.q[m]
    ids, s = np.unique(subj, return_inverse=True)
    qs, g = np.unique(q, return_inverse=True)
    key = s * len(qs) + g
    n = np.bincount(key, minlength=len(ids) * len(qs)).reshape(len(ids), len(qs))
    x = np.bincount(key, weights=f.event[m], minlength=len(ids) * len(qs)).reshape(
        len(ids), len(qs))
    return DayTally(day=d, subjects=tuple(f.labels[ids].tolist()), n=n.astype(float),
                    x=x, q=qs if len(qs) else np.array([0.5]))


def _screen(f: _Family, floor: Floor, thresholds: dict[int, float]):
    """Each subject's Lambda in each window after every coup: (window start,
    subject, day and coup of each coup after which it had crossed 1/level,
    less the margin). Lambda <= the largest likelihood ratio of the mixture,
    so only a subject-day whose largest log ratio reaches log(1/level) is
    followed coup by coup."""
    design = FAMILIES[f.name]
    theta, w = design.thetas, np.exp(design.log_weights)
    n_days, n_win = floor.days, floor.window_days
    order = np.lexsort((f.pos, f.day, f.subj))
    subj, day, pos = f.subj[order], f.day[order], f.pos[order]
    inc = (f.event[order, None] * theta[None]
           - np.log1p(f.q[order, None] * np.expm1(theta)[None]))
    after = inc.cumsum(axis=0)  # each alternative's log ratio after each coup
    # a subject's coups of a day are contiguous: a segment
    key = subj * (n_days + 1) + day
    seg = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    seg_end = np.r_[seg[1:], len(key)]
    top = np.maximum.reduceat(after, seg, axis=0)
    seg_subj, seg_day = subj[seg], day[seg]
    base = np.zeros((len(f.labels), len(theta)))
    out = []
    for s in range(1, n_days + 1):
        first = seg[seg_day == s]  # each subject of day s: his first coup of it
        if not len(first):
            continue
        playing = np.zeros(len(f.labels), dtype=bool)
        playing[subj[first]] = True
        base[subj[first]] = after[first] - inc[first]
        m = np.flatnonzero(playing[seg_subj] & (seg_day >= s) & (seg_day < s + n_win))
        bound = (top[m] - base[seg_subj[m]]).max(axis=1)
        log_thr = np.log(thresholds[s] * (1 - MARGIN))
        m = m[bound >= log_thr]
        if not len(m):
            continue
        lengths = seg_end[m] - seg[m]
        idx = np.repeat(seg[m] - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + \
            np.arange(lengths.sum())
        with np.errstate(over="ignore"):
            lam = np.exp(after[idx] - base[subj[idx]]) @ w
        hit = idx[lam >= thresholds[s] * (1 - MARGIN)]
        out.append((np.full(len(hit), s), subj[hit], day[hit], pos[hit]))
    if not out:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e, e
    return tuple(np.concatenate(c) for c in zip(*out, strict=True))


def deal(floor: Floor, seed: int) -> CoupRows:
    """The run's honest coups: days 0 (the day before the run) to
    ``floor.days``, each dealt on its own (``day``: 0..days)."""
    if floor.days < 1:
        raise ValueError("a run needs at least one gaming day")
    return CoupRows.concat([_deal_day(floor, seed, d) for d in range(floor.days + 1)])


def run(floor: Floor, seed: int, plant: Plant | None = None, *,
        rows: CoupRows | None = None, every_look: bool = False) -> Run:
    """A run of ``floor.days`` gaming days, looked at as the live path
    looks: ``rows`` the honest deal (``deal(floor, seed)`` when None; an
    honest and a planted run may share one), ``plant`` the cheating put on
    it."""
    n_days, n_win = floor.days, floor.window_days
    if rows is None:
        rows = deal(floor, seed)
    if int(rows.day.max()) != n_days:
        raise ValueError(f"the deal has days 0..{int(rows.day.max())}, not 0..{n_days}")
    rng = np.random.default_rng(_seed(seed, 38))
    day = rows.day
    pos = (rows.at % 86_400) // 60
    table, croupier = rows.table, rows.croupier.copy()
    banker, outcome = rows.banker.copy(), rows.outcome.copy()
    false_draw = rows.false_draw.copy()
    pb, pp = rows.p_banker, rows.p_punter
    start = None
    if plant is not None:
        if not 1 <= plant.day <= n_days:
            raise ValueError("the cheating must start on a day of the run"
                             f" (1..{n_days})")
        start = floor.coups // 4 if plant.start is None else plant.start
        t1, t2 = table == 1, table == 2
        cheating = (day > plant.day) | ((day == plant.day) & (pos >= start))
        croupier[t1] = 99_999
        if plant.croupier is not None:
            cheat = t1 & cheating
            false_draw[cheat] = rng.random(int(cheat.sum())) < (
                plant.croupier * floor.rate)
        banker[t2] = PLANTED["banker"]
        u = rng.random(len(outcome))
        if plant.banker is not None:
            won = t2 & cheating & (outcome == PUNTER) & (u < (plant.banker - pb) / pp)
            outcome[won] = BANKER
        if plant.table is not None:
            fell = (table == 3) & cheating & (outcome == BANKER) & (
                u < 1 - plant.table / pb)
            outcome[fell] = PUNTER
    # the croupier's reference rate of each day: the history's closed days
    before = floor.rate if floor.history_rate is None else floor.history_rate
    per_day = floor.tables * floor.coups
    past = rng.binomial(per_day, before, size=floor.history)  # the days before day 0
    fd = np.bincount(day, weights=false_draw, minlength=n_days + 1).astype(np.int64)
    n_day = np.bincount(day, minlength=n_days + 1)
    hist_x = np.concatenate([past, fd])
    hist_n = np.concatenate([np.full(floor.history, per_day), n_day])
    q_day = np.zeros(n_days + 1)
    for d in range(1, n_days + 1):
        lo, hi = d, d + floor.history  # history days before d, in hist_ order
        q_day[d] = reference_rate(int(hist_x[lo:hi].sum()), int(hist_n[lo:hi].sum()))
    # the budgets and each window's levels
    counts = {d: {"croupier": len(np.unique(croupier[day == d])),
                  "banker": len(set(banker[day == d].tolist())),
                  "table": len(np.unique(table[day == d]))} for d in range(n_days + 1)}
    budgets = {d: budget_for(counts[d - 1], floor.tables) for d in range(1, n_days + 1)}
    levels = {d: lt.shift_levels(floor.alpha, budgets[d]) for d in range(1, n_days + 1)}
    out = Run(budgets=budgets, levels=levels,
              q_croupier={d: float(q_day[d]) for d in range(1, n_days + 1)},
              days=n_days, window_days=n_win)
    live = day >= 1
    fams = _families(day[live], pos[live], table[live], croupier[live], banker[live],
                     outcome[live], false_draw[live], pb[live], q_day)
    full = {name: {d: _day_tally(f, d) for d in range(1, n_days + 1)}
            for name, f in fams.items()}
    for d in range(1, n_days + 1):
        over = lt.over_budget({name: full[name][d] for name in fams}, budgets[d])
        if over:
            out.over[d] = over
    # the screen: every coup
    looks_a_day = -(-floor.coups // floor.every)
    cand: list[tuple[np.ndarray, ...]] = []
    for k, (name, f) in enumerate(fams.items()):
        thr = {s: 1 / levels[s][name] for s in levels}
        s, subj, d, p = _screen(f, floor, thr)
        first: dict = {}
        for a, b, c, e in zip(s.tolist(), subj.tolist(), d.tolist(), p.tolist(),
                              strict=True):
            first.setdefault((name, f.labels[b], a), (c, e))
        out.ever.update({key: c for key, (c, _) in first.items()})
        cand.append((d * looks_a_day + p // floor.every, np.full(len(s), k), subj, s))
    names = list(fams)
    if every_look:
        todo = [(d * looks_a_day + k, ()) for d in range(1, n_days + 1)
                for k in range(looks_a_day)]
    else:
        look_id, fam_k, subj, s = (np.concatenate(c) for c in zip(*cand, strict=True))
        order = np.argsort(look_id, kind="stable")
        look_id, fam_k, subj, s = look_id[order], fam_k[order], subj[order], s[order]
        cuts = np.flatnonzero(np.diff(look_id)) + 1
        todo = [(int(look_id[i]), list(zip(fam_k[i:j].tolist(), subj[i:j].tolist(),
                                           s[i:j].tolist(), strict=True)))
                for i, j in zip(np.r_[0, cuts], np.r_[cuts, len(look_id)], strict=True)
                if j > i]
    charged: dict[tuple[str, str], set[int]] = {}
    for lid, triples in todo:
        if triples and all(
                s_ in charged.get((names[k], fams[names[k]].labels[j]), ())
                for k, j, s_ in triples):
            continue  # every window crossed here was charged: nothing to raise
        t, k = divmod(lid, looks_a_day)
        upto = (k + 1) * floor.every
        fam_windows = {
            name: lt.windows([full[name][d] for d in range(max(1, t - n_win + 1), t)]
                             + [_day_tally(f, t, upto)], window_days=n_win)
            for name, f in fams.items()}
        out.calls += 1
        crossed = lt.look_windows(fam_windows, levels)
        for a in lt.raise_once(crossed, charged):
            charged.setdefault((a.family, a.subject), set()).update(a.windows)
            out.alerts.append((t, k, a))
    if plant is not None:
        mine = {"croupier": table == 1, "banker": table == 2, "table": table == 3}
        for fam in plant.families():
            where = mine[fam]
            after = where & (day >= 1) & cheating
            rec = {"coups": int(after.sum()), "delay": None, "days": None,
                   "early": False}
            for t, k, a in out.alerts:
                if (a.family, a.subject) != (fam, PLANTED[fam]):
                    continue
                end = (k + 1) * floor.every  # the look sees the coups before `end`
                if t < plant.day or (t == plant.day and end <= start):
                    rec["early"] = True
                    continue
                seen = (day < t) | ((day == t) & (pos < end))
                rec["delay"] = int((after & seen).sum())
                rec["days"] = t - plant.day + 1
                break
            out.planted[fam] = rec
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
