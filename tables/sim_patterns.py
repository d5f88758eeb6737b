"""What `manage.py simulate --inject` plants in a simulated floor, for the
surveillance to find: patterns no single coup shows.

- ``croupier-false-draw=3``: one croupier breaks the rules 3 times as often as
  the floor (the floor's rate is ``--false-draw-rate``, or FLOOR_FALSE_DRAW_RATE
  when that is 0);
- ``banker-win=0.52``: one player (a player card) wins 52 % of the coups he
  banks, where the cards give about 45.9 %;
- ``table-banker-share=0.42@2026-11-20``: one table's recorded banker wins
  fall to 42 % of its coups from that gaming day on;
- ``short-shoe=9x4``: one shoe is dealt short of four 9s (and closed with its
  true count, so that the shoe_count finding shows it).

Every coup is still dealt from a real shoe by the rules and recorded through
the services: a bias is made by dealing a coup again from the reshuffled
undealt cards (the shoe's composition never changes, so no card count finding
betrays it), with the probability that moves the win share to its target.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta

from django.utils import timezone

from . import chemmy

# The banker's share of all coups (ties included) the cards give under the
# standard tableau: about 45.9 % (docs/rules.md; the simulator's free choices
# move it by a few tenths of a point).
BANKER_WIN_SHARE = 0.4586
FLOOR_FALSE_DRAW_RATE = 0.02  # per mandatory decision, when none is given
REDEALS = 50  # a biased coup is dealt again at most this many times


@dataclass(frozen=True)
class Injection:
    croupier_false_draw: float | None = None  # the croupier's rate / the floor's
    banker_win: float | None = None  # the cheating banker's win share
    table_banker_share: float | None = None  # the table's banker-win share...
    table_from: date | None = None  # ...from this gaming day on
    short_rank: str | None = None  # a shoe short of `short_count` of this rank
    short_count: int = 0
    report: dict = field(default_factory=dict, compare=False)

    @property
    def any(self) -> bool:
        return any(
            v is not None
            for v in (
                self.croupier_false_draw,
                self.banker_win,
                self.table_banker_share,
                self.short_rank,
            )
        )


def _share(value: str, name: str) -> float:
    try:
        share = float(value)
    except ValueError:
        raise ValueError(f"{name}: {value!r} is not a share such as 0.52") from None
    if not 0.05 <= share <= 0.95:
        raise ValueError(f"{name}: the share must be between 0.05 and 0.95")
    return share


def injection_parse(specs: list[str] | tuple[str, ...]) -> Injection:
    """Injection from `--inject` values ("name=value"); ValueError naming the
    one that is wrong."""
    inj = Injection()
    for spec in specs:
        name, sep, value = spec.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not value:
            raise ValueError(f"{spec!r}: write name=value, e.g. banker-win=0.52")
        if name == "croupier-false-draw":
            try:
                times = float(value)
            except ValueError:
                raise ValueError(f"{name}: {value!r} is not a number") from None
            if not 1 <= times <= 20:
                raise ValueError(f"{name}: between 1 and 20 times the floor's rate")
            inj = replace(inj, croupier_false_draw=times)
        elif name == "banker-win":
            inj = replace(inj, banker_win=_share(value, name))
        elif name == "table-banker-share":
            share, at, day = value.partition("@")
            try:
                start = date.fromisoformat(day) if at else None
            except ValueError:
                raise ValueError(
                    f"{name}: {day!r} is not a date (YYYY-MM-DD)"
                ) from None
            inj = replace(inj, table_banker_share=_share(share, name), table_from=start)
        elif name == "short-shoe":
            m = re.fullmatch(r"(10|[AaTtJjQqKk2-9])[xX](\d{1,2})", value)
            if not m or not 1 <= int(m.group(2)) <= 32:
                raise ValueError(f"{name}: write rank x count, e.g. 9x4")
            rank = "T" if m.group(1) == "10" else m.group(1).upper()
            inj = replace(inj, short_rank=rank, short_count=int(m.group(2)))
        else:
            raise ValueError(
                f"{name!r}: unknown injection (croupier-false-draw, banker-win, "
                "table-banker-share, short-shoe)"
            )
    return inj


# -- a bias that keeps every coup a real deal ------------------------------------


def bias_for(target: float | None) -> tuple[str, float] | None:
    """("up", q): a coup the banker did not win is dealt again with
    probability q until he wins; ("down", q): a banker win is dealt again with
    probability q until he does not. q moves BANKER_WIN_SHARE to `target`."""
    if target is None:
        return None
    w = BANKER_WIN_SHARE
    if target >= w:
        return "up", (target - w) / (1 - w)
    return "down", 1 - target / w


def deal_biased(
    rng: random.Random,
    cards: list[str],
    deal: Callable[[list[str]], tuple[list[str], list[str], int]],
    tableau: chemmy.Tableau,
    bias: tuple[str, float] | None,
) -> tuple[list[str], list[str], int]:
    """`deal(cards)` -> (punter, banker, false draws), popping from `cards`;
    under a bias, perhaps again from the undealt cards reshuffled."""
    if bias is None:
        return deal(cards)
    direction, q = bias
    redeal = rng.random() < q
    keep = list(cards)
    for _ in range(REDEALS):
        punter, banker, fds = deal(cards)
        won = chemmy.evaluate(punter, banker, tableau=tableau).outcome == (
            chemmy.Outcome.BANKER
        )
        if not redeal or won == (direction == "up"):
            return punter, banker, fds
        cards[:] = keep
        rng.shuffle(cards)
    return punter, banker, fds


def short_shoe(rng: random.Random, cards: list[str], rank: str, count: int) -> list:
    """Take `count` cards of `rank` out of a shuffled shoe; the cards taken."""
    places = [i for i, c in enumerate(cards) if c[0] == rank]
    if count > len(places):
        raise ValueError(f"short-shoe: the shoe holds only {len(places)} {rank}s")
    taken = sorted(rng.sample(places, count), reverse=True)
    return [cards.pop(i) for i in taken]


# -- past gaming days -------------------------------------------------------------


@contextmanager
def clock_at(day: date, hour: int = 12) -> Iterator[None]:
    """Play a past (or future) gaming day: timezone.now() answers from `hour`
    local time of `day`, one second later at each call, so every record of
    the day (coups, log rows, sessions) carries that day's times, in order.
    For the simulator only: nothing else runs while it plays."""
    start = timezone.make_aware(datetime.combine(day, time(hour))).astimezone(UTC)
    state = {"t": start}
    real = timezone.now

    def now() -> datetime:
        t = state["t"]
        state["t"] = t + timedelta(seconds=1)
        return t

    timezone.now = now
    try:
        yield
    finally:
        timezone.now = real
