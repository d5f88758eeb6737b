"""The long proof of the surveillance's calibration and power on floors dealt
from real shoes (audit/surveillance/dealer.py): `make calibrate`, run outside
CI (the suite keeps short versions: tests/surveillance/test_calibration.py,
test_power.py, test_dealer.py).

    .venv/bin/python bench/calibrate.py                 # 400 honest runs
    .venv/bin/python bench/calibrate.py --runs 40 --power-runs 20   # a look

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

from audit.surveillance import dealer, detect, power, synth  # noqa: E402

Q = 0.05


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
    args = ap.parse_args()
    t0 = time.perf_counter()
    power_table()
    if args.runs:
        honest(args)
    if args.power_runs:
        planted(args)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
