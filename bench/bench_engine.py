"""Throughput of ``tables.chemmy.evaluate``: coups per second on one core.

Run from the project root:  python bench/bench_engine.py [--coups N] [--seed S]

The coups are dealt from shuffled 6-deck shoes by the rules (a random choice at
each optional cell), then a share of them is spoiled the way a croupier slips:
a mandatory decision flipped, a third card after a natural. Cards are kept as
the strings a tablet sends, some in lower case or with "10", so parsing is part
of what is timed. Generating the coups is not.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tables.chemmy import (  # noqa: E402
    ALL_CODES,
    POINTS,
    STANDARD_TABLEAU,
    Action,
    evaluate,
    punter_action,
)

Coup = tuple[list[str], list[str]]


def _spell(code: str, rng: random.Random) -> str:
    # One card in ten as a tablet might send it: lower case, or "10" for "T".
    r = rng.random()
    if r < 0.05:
        return code.lower()
    if r < 0.10 and code[0] == "T":
        return "10" + code[1]
    return code


def _decide(action: Action, rng: random.Random, spoil: bool) -> bool:
    if action is Action.OPTIONAL:
        return rng.random() < 0.5
    draw = action is Action.DRAW
    return (not draw) if spoil else draw


def deal_coups(n: int, seed: int, spoil_rate: float = 0.05) -> list[Coup]:
    rng = random.Random(seed)
    shoe: list[str] = []
    coups: list[Coup] = []
    while len(coups) < n:
        if len(shoe) < 7:
            shoe = list(ALL_CODES) * 6
            rng.shuffle(shoe)
        p = [shoe.pop(), shoe.pop()]
        b = [shoe.pop(), shoe.pop()]
        p2 = (POINTS[p[0]] + POINTS[p[1]]) % 10
        b2 = (POINTS[b[0]] + POINTS[b[1]]) % 10
        if p2 >= 8 or b2 >= 8:
            if rng.random() < spoil_rate:
                p.append(shoe.pop())
        else:
            spoil = rng.random() < spoil_rate
            if _decide(punter_action(p2), rng, spoil and rng.random() < 0.5):
                p.append(shoe.pop())
            third = POINTS[p[2]] if len(p) == 3 else None
            if _decide(STANDARD_TABLEAU.banker_action(b2, third), rng, spoil):
                b.append(shoe.pop())
        coups.append(([_spell(c, rng) for c in p], [_spell(c, rng) for c in b]))
    return coups


def run(coups: list[Coup]) -> tuple[float, int]:
    findings = 0
    start = time.perf_counter()
    for punter, banker in coups:
        findings += len(evaluate(punter, banker).findings)
    return time.perf_counter() - start, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coups", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    coups = deal_coups(args.coups, args.seed)
    run(coups[:10_000])  # warm the finding cache and the interpreter
    # The best of a few runs: the least disturbed by whatever else the machine does.
    elapsed, findings = min(run(coups) for _ in range(args.repeat))
    rate = len(coups) / elapsed
    print(
        f"engine: evaluate {rate:,.0f} coups/s "
        f"({len(coups):,} coups in {elapsed:.3f}s, {findings:,} findings)"
    )


if __name__ == "__main__":
    main()
