"""The long proof of the surveillance's calibration and power on floors dealt
from real shoes (audit/surveillance/dealer.py): `make calibrate`, run outside
CI (the suite keeps short versions: tests/surveillance/test_calibration.py,
test_power.py, test_dealer.py).

    .venv/bin/python bench/calibrate.py                 # 400 honest runs
    .venv/bin/python bench/calibrate.py --runs 40 --power-runs 20   # a look
    .venv/bin/python bench/calibrate.py --live          # the live part alone

Honest runs: RUNS casinos of TABLES x DAYS x COUPS coups, each dealt from
real shoes (burned cards, the cut card, punters' and bankers' free choices
at dealer.MIX, false draws at the floor's rate), the expectation at the
floor's observed mix (as the pipeline weighs it). Printed:

- the share of runs with any alert, its 95 % Clopper-Pearson interval, and
  the bound the detector states: q + 2 sum(n_table) / ARL0 (BH's false
  discovery rate is its family-wise rate when nothing is wrong; two CUSUMs
  a table);
- per test family, its p-values pooled over the runs: the observed share at
  or below a (a = 1e-5 ... 0.1: BH decides in the far tail) over a, with the one-sided
  binomial p-value of that many (a valid test is at most uniform: P(p <= a)
  <= a; a small value there means the test is too eager), and the
  Kolmogorov-Smirnov distance to the uniform;
- the four planted patterns' power on real-shoe casinos of 80,000 coups
  (8 tables x 10 days x 1,000) at floor false-draw rates of 0.3 % and
  0.5 %: a croupier at 3x within 5,000 coups, a banker at 52 % within
  5,000, a table falling to 42 % found within 7 gaming days, a shoe short of
  four 9s at its close; with the stated power of the croupier test
  (power.py) for the coups he dealt.

The live surveillance (issue 38; ``--live`` runs only this part):
LIVE_SHIFTS honest gaming days of a floor of LIVE_TABLES tables x 1,000
coups dealt from real shoes at each floor rate (and one more set at the
first rate with the tables split over houses of 6 and 8 decks: the banker
and table tallies in groups), looked at every LOOK_EVERY
coups of each table as the live path looks (audit/surveillance/livesim.py:
livetests.look, shift_levels, budget_for of the previous dealt day,
reference_rate of 28 trailing days), alpha = ALPHA. Printed: the share of
shifts with any live alert and its 95 % interval against alpha, the share
had every coup been looked at (the worst any schedule of looks can do),
the alerts by family; then LIVE_RUNS planted shifts a set (the issue's
patterns and gross ones) from a quarter into the day: the share found
within the shift, the median coups from the start to the alert, and the
median the test alone needs if the cheat went on (livesim.coups_to_alert).

Seeds are fixed (--seed) so a run can be repeated; nothing is tuned to them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scipy import stats as ss  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from audit.surveillance import dealer, detect, livesim, power, synth  # noqa: E402
from audit.surveillance import livetests as lt  # noqa: E402

Q = 0.05
ALPHA = 0.03  # SURVEILLANCE_LIVE_ALPHA's default
LOOK_EVERY = 5  # coups of each table between looks (about 5 minutes)
PATTERNS = {"the issue's": livesim.Plant(croupier=3.0, banker=0.52, table=0.42),
            "gross": livesim.Plant(croupier=10.0, banker=0.65, table=0.35)}


def honest(args) -> None:
    any_runs = bh_runs = cusum = 0
    budgets = []
    pooled = defaultdict(list)
    t0 = time.perf_counter()
    for i in range(args.runs):
        s = dealer.honest(tables=args.tables, days=args.days,
                          coups_per_day=args.coups, seed=args.seed + i,
                          false_draw_rate=args.honest_rate)
        r = detect.analyse(s.rows, s.shoes, fdr=Q)
        any_runs += bool(r.alerts)
        bh_runs += any(a.kind != "table_cusum" for a in r.alerts)
        cusum += sum(a.kind == "table_cusum" for a in r.alerts)
        budgets.append(r.cusum_budget)
        for name, p in r.pvalues.items():
            pooled[name].append(p)
        if args.verbose and r.alerts:
            print(f"  run {i}: " + ", ".join(f"{a.kind}/{a.test} {a.subject}"
                                             f" p={a.p_value:.2g}"
                                             for a in r.alerts), flush=True)
        if (i + 1) % 50 == 0:
            print(f"  ... {i + 1} runs, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    n = args.tables * args.days * args.coups
    bound = Q + float(np.mean(budgets))
    lo, hi = proportion_confint(any_runs, args.runs, alpha=0.05, method="beta")
    print(f"\n== honest casinos dealt from real shoes: {args.runs} runs x {n:,}"
          f" coups (floor false-draw rate {args.honest_rate:.1%}, mix"
          f" {dealer.MIX}), q = {Q}")
    print(f"runs with any alert: {any_runs}/{args.runs} = {any_runs / args.runs:.1%},"
          f" 95 % interval [{lo:.1%}, {hi:.1%}]; stated bound {bound:.1%}"
          f" (BH {Q:.0%} + CUSUMs {bound - Q:.2%})"
          f" -> {'within' if lo <= bound else 'ABOVE'} the bound")
    print(f"runs with a BH alert: {bh_runs}; CUSUM false alarms: {cusum}"
          f" (expected {sum(budgets):.1f})")
    print("\n== p-values per test family (pooled): observed/nominal share of"
          " p <= a [one-sided binomial p], KS distance")
    for name, parts in sorted(pooled.items()):
        p = np.concatenate(parts)
        cells = []
        for a in (1e-5, 1e-4, 0.001, 0.01, 0.05, 0.1):
            if a * len(p) < 1:  # too few p-values to see this tail
                continue
            k = int((p <= a).sum())
            tail = ss.binom.sf(k - 1, len(p), a)
            cells.append(f"{a:g}: {k / (a * len(p)):.2f} [{tail:.2g}]")
        ks = ss.kstest(p, "uniform", alternative="greater").statistic
        print(f"  {name:28s} n={len(p):8,d}  " + "  ".join(cells) +
              f"  KS+ {ks:.3f}")


def planted(args) -> None:
    print(f"\n== planted patterns on real-shoe casinos: {args.power_runs} runs"
          " x 80,000 coups (8 tables x 10 days x 1,000), q = 0.05")
    first = synth.FIRST_DAY
    for rate in args.rates:
        found = Counter()
        stated, delays = [], []
        for i in range(args.power_runs):
            seed = args.seed + 100_000 + i
            s = dealer.honest(tables=8, days=10, coups_per_day=1000, seed=seed,
                              false_draw_rate=rate)
            away = s.rows.table != 2
            s = synth.inject_croupier(s, seed=seed, where=away, rate=rate)
            s = synth.inject_banker(s, seed=seed, where=away)
            s = synth.inject_table(s, seed=seed, table=2, from_day=first + 3)
            short = s.shoes[int(np.random.default_rng(seed).integers(len(s.shoes)))]
            s = synth.inject_short_shoe(s, seed=seed, shoe=short.shoe)
            r = detect.analyse(s.rows, s.shoes, fdr=Q)
            got = {(a.kind, a.subject) for a in r.alerts}
            cusum = [a for a in r.alerts if a.kind == "table_cusum"
                     and a.subject == "table:2"
                     and a.test == "cusum_banker_share"]
            found["croupier"] += ("croupier", "croupier:99") in got
            found["banker"] += ("banker", "card:999999") in got
            on_time = bool(cusum) and 0 <= cusum[0].day - (first + 3) < 7
            found["table"] += on_time
            if cusum:
                delays.append(cusum[0].day - (first + 3) + 1)
            found["shoe"] += ("shoe_count", f"shoe:{short.shoe}") in got
            mine = s.truth["croupier"]["coups"]
            stated.append(float(power.power(power.Floor(
                rate, len(s.rows) - mine, r.tests, Q), mine)[0]))
        print(f"floor false-draw rate {rate:.1%}:")
        for name in ("croupier", "banker", "table", "shoe"):
            k = found[name]
            lo, hi = proportion_confint(k, args.power_runs, alpha=0.05,
                                        method="beta")
            extra = (f"; stated power for the coups he dealt"
                     f" {np.mean(stated):.1%}" if name == "croupier" else "")
            print(f"  {name:8s} found {k}/{args.power_runs} ="
                  f" {k / args.power_runs:.0%} (95 % interval {lo:.0%}-{hi:.0%})"
                  + extra)
        print(f"  table found on day (1 = the first at 42 %):"
              f" {sorted(Counter(delays).items())}")


def live(args) -> None:
    floors = {rate: livesim.Floor(tables=args.live_tables, coups=1000, rate=rate,
                                  alpha=ALPHA, every=LOOK_EVERY)
              for rate in args.rates}
    honest_floors = list(floors.values())
    if args.live_houses and args.live_houses != (6,):
        honest_floors.append(livesim.Floor(
            tables=args.live_tables, coups=1000, rate=args.rates[0], alpha=ALPHA,
            every=LOOK_EVERY, decks=args.live_houses))
    for floor in honest_floors if args.live_shifts else []:
        rate = floor.rate
        t0 = time.perf_counter()
        any_alert = ever = over = 0
        by_family = Counter()
        budgets = []
        for i in range(args.live_shifts):
            r = livesim.shift(floor, args.seed + 380_000 + i)
            any_alert += r.any_alert
            ever += r.any_ever
            over += bool(r.over)
            by_family.update(f for f, _ in r.alerts)
            budgets.append(r.budget)
            if args.verbose and r.alerts:
                print("  shift", i, [(f, s, w, f"{a.p_value:.2g}")
                                     for (f, s), (w, a) in r.alerts.items()])
        n = args.live_shifts
        lo, hi = proportion_confint(any_alert, n, alpha=0.05, method="beta")
        elo, ehi = proportion_confint(ever, n, alpha=0.05, method="beta")
        mean_budget = {f: float(np.mean([b[f] for b in budgets])) for f in budgets[0]}
        print(f"\n== live surveillance, honest shifts: {n} gaming days x"
              f" {floor.tables} tables x {floor.coups:,} coups dealt from real shoes"
              f" (floor false-draw rate {rate:.1%}"
              + (f"; houses of {'/'.join(map(str, floor.decks))} decks, the"
                 " tables split evenly" if len(floor.decks) > 1 else "")
              + f"), a look every {floor.every}"
              f" coups of each table, alpha = {floor.alpha}")
        print(f"shifts with any live alert: {any_alert}/{n} = {any_alert / n:.1%},"
              f" 95 % interval [{lo:.1%}, {hi:.1%}], stated bound {floor.alpha:.0%}"
              f" -> {'within' if lo <= floor.alpha else 'ABOVE'} the bound")
        print(f"had every coup been looked at: {ever}/{n} = {ever / n:.1%}"
              f" [{elo:.1%}, {ehi:.1%}]; alerts by family {dict(by_family)};"
              f" shifts over budget {over}; mean budget "
              + ", ".join(f"{f} {b:,.0f}" for f, b in mean_budget.items())
              + f" ({time.perf_counter() - t0:.0f} s)")
    for rate, floor in floors.items() if args.live_runs else []:
        for label, plant in PATTERNS.items():
            found, delays, early, cheat = Counter(), defaultdict(list), Counter(), []
            levels, q_cr = None, []
            for i in range(args.live_runs):
                r = livesim.shift(floor, args.seed + 390_000 + i, plant)
                levels = r.levels
                q_cr.append(r.q_croupier)
                for fam, rec in r.planted.items():
                    early[fam] += rec["early"]
                    if rec["delay"] is not None:
                        found[fam] += 1
                        delays[fam].append(rec["delay"])
                cheat.append(r.planted["croupier"]["coups"])
            print(f"\n== live, planted ({label}: croupier at {plant.croupier:g}x,"
                  f" banker at {plant.banker:.0%}, table at {plant.table:.0%}),"
                  f" floor rate {rate:.1%}: {args.live_runs} shifts, cheating from"
                  f" coup {floor.coups // 4} of {floor.coups:,}"
                  f" ({int(np.median(cheat))} coups of the cheat in the shift)")
            truth = {"croupier": (float(np.median(q_cr)), plant.croupier * rate),
                     "banker": (0.4602, plant.banker), "table": (0.4602, plant.table)}
            for fam in ("croupier", "banker", "table"):
                k = found[fam]
                lo, hi = proportion_confint(k, args.live_runs, alpha=0.05,
                                            method="beta")
                med = f"{np.median(delays[fam]):,.0f}" if delays[fam] else "-"
                alone = livesim.coups_to_alert(
                    lt.FAMILIES[fam], *truth[fam], levels[fam], runs=200,
                    max_coups=30_000, seed=args.seed)
                before = f"; alerted before it {early[fam]}" if early[fam] else ""
                print(f"  {fam:8s} found within the shift {k}/{args.live_runs} ="
                      f" {k / args.live_runs:.0%} ({lo:.0%}-{hi:.0%}), median"
                      f" {med} coups from the start to the alert; the test alone"
                      f" (the cheat goes on): median {np.median(alone):,.0f}"
                      f" coups{before}")


def power_table() -> None:
    print("\n== how soon a croupier at 2x / 3x / 5x the floor's rate is found"
          " (90 %), a floor of 200,000 coups, 10,000 tests, q = 0.05")
    for rate in (0.001, 0.002, 0.003, 0.005, 0.01):
        floor = power.Floor(rate, 200_000, 10_000, Q)
        print(f"  {rate:.1%}: " + ", ".join(
            f"{f:g}x {power.coups_for(floor, f):,}" for f in power.FACTORS))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--tables", type=int, default=40)
    ap.add_argument("--days", type=int, default=5)
    ap.add_argument("--coups", type=int, default=1000)
    ap.add_argument("--honest-rate", type=float, default=0.003)
    ap.add_argument("--power-runs", type=int, default=100)
    ap.add_argument("--rates", type=lambda v: [float(x) for x in v.split(",")],
                    default=[0.003, 0.005])
    ap.add_argument("--seed", type=int, default=270_000)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--live", action="store_true",
                    help="only the live surveillance's part")
    ap.add_argument("--live-shifts", type=int, default=400)
    ap.add_argument("--live-runs", type=int, default=100)
    ap.add_argument("--live-tables", type=int, default=40)
    ap.add_argument("--live-houses", default=(6, 8),
                    type=lambda v: tuple(int(x) for x in v.split(",") if x),
                    help="decks of the houses of one more honest set (6,8)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if not args.live:
        power_table()
        if args.runs:
            honest(args)
        if args.power_runs:
            planted(args)
    if args.live_shifts or args.live_runs:
        live(args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
