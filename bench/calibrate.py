"""The long proof of the surveillance's calibration and power on floors dealt
from real shoes (audit/surveillance/dealer.py): `make calibrate`, run outside
CI (the suite keeps short versions: tests/surveillance/test_calibration.py,
test_power.py, test_dealer.py).

    .venv/bin/python bench/calibrate.py                 # 400 honest runs
    .venv/bin/python bench/calibrate.py --runs 40 --power-runs 20   # a look
    .venv/bin/python bench/calibrate.py --live          # the live part alone
    .venv/bin/python bench/calibrate.py --live --live-quick   # a quick look

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

The live surveillance (issue 38; ``--live`` runs only this part): at each
floor rate, LIVE_RUNS runs of LIVE_DAYS consecutive gaming days (plus the
day before the first, dealt for its budget) of a floor of LIVE_TABLES
tables x 1,000 coups, each day dealt from real shoes, looked at every
LOOK_EVERY coups of each table as the live path looks
(audit/surveillance/livesim.py: livetests.windows of LIVE_WINDOW days,
look_windows with each window's shift_levels of budget_for of the day before
its first day, raise_once with the charged windows carried from look to look
and day to day, each day's croupier reference rate from its 28 trailing
days), alpha = ALPHA. Each run's honest deal is looked at three times: as
dealt (honest), and with each set of PATTERNS planted on it from coup 250 of
its second day to its end (a paired design: the honest and planted figures
are each over independent runs). One more honest set (LIVE_HOUSE_RUNS runs)
at the first rate has its tables split over houses of 6 and 8 decks (the
banker and table tallies in groups). The runs are spread over --jobs
processes (2). Printed:

- honest: the shifts (gaming days) with any live alert, over all the days
  and over the days from LIVE_WINDOW on (every window open: the long run),
  with their 95 % Clopper-Pearson intervals against alpha (the days of a
  run share their subjects' windows; the interval takes them as
  independent);
  the same had every coup been looked at (the worst any schedule of looks
  can do); the false alerts per shift and the windows crossed (every coup)
  per window that ran its LIVE_WINDOW days, each against alpha; the alerts
  by family, the days over budget;
- planted: the share found within the run and within the first day of
  cheating (what one gaming day's test could do), the median coups of the
  cheat from the start to the alert and the median gaming days to it (1: the
  day it started), and the median coups the test alone needs at the
  window's level (livesim.coups_to_alert).

Seeds are fixed (--seed) so a run can be repeated; nothing is tuned to them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scipy import stats as ss  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from audit.surveillance import dealer, detect, livesim, power, synth  # noqa: E402
from audit.surveillance import livetests as lt  # noqa: E402

Q = 0.05
ALPHA = 0.03  # SURVEILLANCE_LIVE_ALPHA's default
LOOK_EVERY = 5  # coups of each table between looks (about 5 minutes)
LIVE_RUNS = 120  # runs a floor rate (honest and planted share the deal)
LIVE_DAYS = 10  # gaming days a run
LIVE_WINDOW = lt.WINDOW_DAYS  # days a window's test runs (7)
LIVE_TABLES = 40
LIVE_HOUSE_RUNS = 50
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


def live_honest(label: str, floor, runs: list, seconds: float) -> None:
    n_runs, n_days, n_win = len(runs), floor.days, floor.window_days
    steady = list(runs[0].steady)
    shifts, steady_shifts = n_runs * n_days, n_runs * len(steady)
    any_day = sum(len(r.alert_days) for r in runs)
    any_steady = sum(len(r.alert_days & set(steady)) for r in runs)
    ever_steady = sum(len(r.ever_days & set(steady)) for r in runs)
    alerts_steady = sum(1 for r in runs for d, _, _ in r.alerts if d in steady)
    complete = list(runs[0].complete)
    crossed = sum(1 for r in runs for (_, _, s) in r.ever if s in complete)
    by_family = Counter(a.family for r in runs for _, _, a in r.alerts)
    over = sum(len(r.over) for r in runs)
    budgets = [b for r in runs for b in r.budgets.values()]
    mean_budget = {f: float(np.mean([b[f] for b in budgets])) for f in budgets[0]}
    lo, hi = proportion_confint(any_day, shifts, alpha=0.05, method="beta")
    slo, shi = proportion_confint(any_steady, steady_shifts, alpha=0.05,
                                  method="beta")
    elo, ehi = proportion_confint(ever_steady, steady_shifts, alpha=0.05,
                                  method="beta")
    ever_all = sum(len(r.ever_days) for r in runs)
    print(f"\n== live surveillance, honest ({label}): {n_runs} runs of {n_days}"
          f" gaming days x {floor.tables} tables x {floor.coups:,} coups dealt from"
          " real shoes"
          f" (floor false-draw rate {floor.rate:.1%}"
          + (f"; houses of {'/'.join(map(str, floor.decks))} decks, the tables"
             " split evenly" if len(floor.decks) > 1 else "")
          + f"), windows of {n_win} days, a look every {floor.every} coups of each"
          f" table, alpha = {floor.alpha}")
    print(f"shifts with any live alert: {any_day}/{shifts} = {any_day / shifts:.2%},"
          f" 95 % interval [{lo:.2%}, {hi:.2%}], stated bound {floor.alpha:.0%}"
          f" -> {'within' if lo <= floor.alpha else 'ABOVE'} the bound; from day"
          f" {n_win} on (every window open): {any_steady}/{steady_shifts} ="
          f" {any_steady / steady_shifts:.2%} [{slo:.2%}, {shi:.2%}]")
    print(f"had every coup been looked at: {ever_all}/{shifts} ="
          f" {ever_all / shifts:.2%}; from day {n_win} on: {ever_steady}/"
          f"{steady_shifts} = {ever_steady / steady_shifts:.2%}"
          f" [{elo:.2%}, {ehi:.2%}]")
    print(f"false alerts per shift from day {n_win} on: {alerts_steady}/{steady_shifts}"
          f" = {alerts_steady / steady_shifts:.4f}; windows crossed (every coup) per"
          f" window run to its end: {crossed}/{n_runs * len(complete)} ="
          f" {crossed / max(1, n_runs * len(complete)):.4f} (each at most alpha ="
          f" {floor.alpha} in expectation)")
    print(f"alerts by family {dict(by_family)}; days over budget {over}; mean"
          " budget " + ", ".join(f"{f} {b:,.0f}" for f, b in mean_budget.items())
          + f"; live functions called at {sum(r.calls for r in runs):,} looks"
          f" ({seconds:.0f} s)")


def live_planted(label: str, plant, floor, runs: list) -> None:
    n = len(runs)
    start = floor.coups // 4 if plant.start is None else plant.start
    print(f"\n== live, planted ({label}: croupier at {plant.croupier:g}x, banker at"
          f" {plant.banker:.0%}, table at {plant.table:.0%}), floor rate"
          f" {floor.rate:.1%}: {n} runs, cheating from coup {start} of day"
          f" {plant.day} of {floor.days} to the end"
          f" ({int(np.median([r.planted['croupier']['coups'] for r in runs])):,} coups"
          " of each cheat)")
    q_cr = float(np.median([r.q_croupier[plant.day] for r in runs]))
    truth = {"croupier": (q_cr, plant.croupier * floor.rate),
             "banker": (0.4602, plant.banker), "table": (0.4602, plant.table)}
    for fam in ("croupier", "banker", "table"):
        recs = [r.planted[fam] for r in runs]
        found = [x for x in recs if x["delay"] is not None]
        first_day = sum(x["days"] == 1 for x in found)
        early = sum(x["early"] for x in recs)
        lo, hi = proportion_confint(len(found), n, alpha=0.05, method="beta")
        flo, fhi = proportion_confint(first_day, n, alpha=0.05, method="beta")
        med = (f"{np.median([x['delay'] for x in found]):,.0f} coups (gaming day"
               f" {np.median([x['days'] for x in found]):g} of the cheating)"
               if found else "-")
        alone = livesim.coups_to_alert(
            lt.FAMILIES[fam], *truth[fam], runs[0].levels[plant.day][fam],
            runs=200, max_coups=30_000, seed=1)
        print(f"  {fam:8s} found within the run {len(found)}/{n} ="
              f" {len(found) / n:.0%} ({lo:.0%}-{hi:.0%}); within the first day"
              f" {first_day}/{n} = {first_day / n:.0%} ({flo:.0%}-{fhi:.0%});"
              f" median {med} from the start to the alert; the test alone:"
              f" median {np.median(alone):,.0f} coups"
              + (f"; alerted before the start {early}" if early else ""))


def _live_triple(floor, seed: int) -> tuple:
    """One run's deal looked at honest and with each pattern planted."""
    rows = livesim.deal(floor, seed)
    return (livesim.run(floor, seed, rows=rows),
            *(livesim.run(floor, seed, plant, rows=rows)
              for plant in PATTERNS.values()))


def _live_honest(floor, seed: int) -> tuple:
    return (livesim.run(floor, seed),)


def _live_map(fn, floor, seeds: list[int], jobs: int, what: str) -> list[tuple]:
    """fn(floor, seed) for every seed, over ``jobs`` processes, in order."""
    t0 = time.perf_counter()
    out = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, r in enumerate(pool.map(fn, [floor] * len(seeds), seeds, chunksize=2)):
            out.append(r)
            if (i + 1) % 25 == 0:
                print(f"  ... {what}: {i + 1} runs, {time.perf_counter() - t0:.0f} s",
                      flush=True)
    return out


def live(args) -> None:
    if args.live_quick:
        args.live_runs, args.live_house_runs = 20, 10
    kw = dict(tables=args.live_tables, coups=1000, alpha=ALPHA, every=LOOK_EVERY,
              days=args.live_days, window_days=args.live_window)
    for rate in args.rates if args.live_runs else []:
        floor = livesim.Floor(rate=rate, **kw)
        t0 = time.perf_counter()
        seeds = [args.seed + 380_000 + i for i in range(args.live_runs)]
        triples = _live_map(_live_triple, floor, seeds, args.jobs, f"{rate:.1%}")
        live_honest("one house of 6 decks", floor, [t[0] for t in triples],
                    time.perf_counter() - t0)
        for k, (label, plant) in enumerate(PATTERNS.items(), start=1):
            live_planted(label, plant, floor, [t[k] for t in triples])
    if args.live_house_runs and len(args.live_houses) > 1:
        floor = livesim.Floor(rate=args.rates[0], decks=args.live_houses, **kw)
        t0 = time.perf_counter()
        seeds = [args.seed + 385_000 + i for i in range(args.live_house_runs)]
        runs = _live_map(_live_honest, floor, seeds, args.jobs, "two houses")
        live_honest("two houses", floor, [r[0] for r in runs],
                    time.perf_counter() - t0)


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
    ap.add_argument("--live-runs", type=int, default=LIVE_RUNS,
                    help="runs of gaming days at each floor rate, each looked at"
                    " honest and with each pattern planted")
    ap.add_argument("--live-days", type=int, default=LIVE_DAYS,
                    help="gaming days of a run")
    ap.add_argument("--live-window", type=int, default=LIVE_WINDOW,
                    help="gaming days a window's test runs")
    ap.add_argument("--live-tables", type=int, default=LIVE_TABLES)
    ap.add_argument("--live-house-runs", type=int, default=LIVE_HOUSE_RUNS,
                    help="runs of the honest two-house floor (0: none)")
    ap.add_argument("--live-houses", default=(6, 8),
                    type=lambda v: tuple(int(x) for x in v.split(",") if x),
                    help="decks of the houses of the two-house floor (6,8)")
    ap.add_argument("--jobs", type=int, default=2,
                    help="processes for the live runs (2: this machine's cores)")
    ap.add_argument("--live-quick", action="store_true",
                    help="a quick look: 20 runs a rate, 10 of the two houses")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if not args.live:
        power_table()
        if args.runs:
            honest(args)
        if args.power_runs:
            planted(args)
    if args.live_runs or args.live_house_runs:
        live(args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
