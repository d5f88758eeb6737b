"""Exact odds of a coup, by enumeration with card removal (standard library only;
docs/rules.md, "The punter's rule", "The banker's tableau" and "House rules").

A coup's outcome depends only on the point values of the cards, so instead of
enumerating cards we enumerate point values (0..9) and weigh each sequence by
how many card sequences give it: drawing value ``v`` when ``r[v]`` cards of that
value are left multiplies the weight by ``r[v]`` (card removal, exactly).
The two-card hands are enumerated as unordered pairs times their orderings.

Counts are over all ordered six-card sequences (the convention of the published
baccarat tables): a coup that uses k cards is weighed by the number of ways to
deal the 6 - k cards that follow it. With ``punto_banco()`` options on 8 decks
this reproduces the published counts (banker 2,292,252,566,437,888; player
2,230,518,282,592,256; tie 475,627,426,473,216) — tested.

Optional plays are parameters: the punter's 5 (draw or stand) and each optional
("O") cell of the tableau (draw or stand). Default: draw in all of them.
Reference: docs/rules.md, "The punter's rule" and "The banker's tableau".

A house's own play (``house_odds``): a cell the house prescribes (docs/rules.md,
"House rules": the punter's 5, the banker's optional cells) is played as
prescribed; a free cell is played by the default above, draw. That is the
strategy these odds have always assumed. A floor whose players stand where
they may is given by a mix (``house_odds(..., mix=...)``): the share of
draws observed at each free cell, played as a mixed strategy (each free
cell drawn with its probability, independently of the cards: a coup meets
at most one punter's and one banker's choice), enumerated exactly as above.
The counts of a mixed strategy are scaled by the denominators of its shares
(``Odds.scale``); the probabilities are exact fractions either way.

The levy (``expected_levy``): the commission on a covered amount C is
``round(rate x C, unit, mode)`` when the banker wins and nothing otherwise, so
its expectation is P(banker) times that rounded amount, not rate x C x
P(banker): the rounding is the house's and it is exact (the engine's own
``round_money``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache
from math import gcd as _gcd

from .house import Prescriptions, cell_key, rounding_mode
from .settlement import round_money
from .tableau import (
    COLUMNS,
    PUNTO_BANCO_TABLEAU,
    STANDARD_TABLEAU,
    Action,
    Tableau,
)

__all__ = [
    "Odds",
    "as_decimal",
    "chemmy_odds",
    "compute_odds",
    "house_odds",
    "levy",
    "punto_banco_odds",
]

# (banker total, punter's third card value or None) -> True to draw
OptionalCells = Mapping[tuple[int, int | None], bool]


@dataclass(frozen=True)
class Odds:
    decks: int
    tableau: str
    punter_draws_on_5: bool
    banker: int  # ordered six-card sequences the banker wins
    punter: int
    tie: int
    # the optional cells the banker stands in ("3/9"), the others he draws in
    banker_stands: tuple[str, ...] = ()
    # a mixed strategy: (cell, share of draws as "k/n") for each free cell
    # played at a mix ("punter" is the punter's 5), and the factor the counts
    # are scaled by (the product of the shares' denominators)
    mix: tuple[tuple[str, str], ...] = ()
    scale: int = 1

    @property
    def total(self) -> int:
        return self.banker + self.punter + self.tie

    @property
    def p_banker(self) -> Fraction:
        return Fraction(self.banker, self.total)

    @property
    def p_punter(self) -> Fraction:
        return Fraction(self.punter, self.total)

    @property
    def p_tie(self) -> Fraction:
        return Fraction(self.tie, self.total)

    def expected_commission_per_unit(self, rate) -> Fraction:
        """Commission is taken on the banker's wins only: rate x P(banker) per
        unit covered (before rounding to the commission unit)."""
        return Fraction(rate) * self.p_banker

    def expected_levy(self, covered: Decimal, *, rate: Decimal, unit: Decimal,
                      rounding: str = "half_up") -> Fraction:
        """The commission one coup with covered amount ``covered`` is
        expected to bring: P(banker) x round(rate x C, unit, mode), exact."""
        return self.p_banker * Fraction(levy(covered, rate=rate, unit=unit,
                                             rounding=rounding))

    def as_dict(self) -> dict:
        return {
            "decks": self.decks,
            "tableau": self.tableau,
            "punter_draws_on_5": self.punter_draws_on_5,
            "banker_stands_in": list(self.banker_stands),
            "mix": dict(self.mix),
            "scale": self.scale,
            "counts": {
                "banker": self.banker,
                "punter": self.punter,
                "tie": self.tie,
                "total": self.total,
            },
            "probabilities": {
                "banker": float(self.p_banker),
                "punter": float(self.p_punter),
                "tie": float(self.p_tie),
            },
        }


def _falling(n: int, k: int) -> int:
    out = 1
    for i in range(k):
        out *= n - i
    return out


def _pairs():
    # unordered two-card hands by value, with the number of orderings
    return [(a, b, 1 if a == b else 2) for a in range(10) for b in range(a, 10)]


def compute_odds(
    *,
    decks: int,
    tableau: Tableau = STANDARD_TABLEAU,
    punter_draws_on_5: bool = True,
    banker_optional: bool | OptionalCells = True,
) -> Odds:
    """Exact counts of banker wins, punter wins and ties for a shoe of ``decks``
    packs, the banker's ``tableau`` and the optional plays given."""
    if type(decks) is not int or not 1 <= decks <= 8:
        raise ValueError(f"decks must be an integer 1..8, not {decks!r}")
    # action table: cell index -> True draw / False stand
    draws = []
    for total in range(8):
        for col in range(COLUMNS):
            action = tableau.cells[total * COLUMNS + col]
            if action is Action.OPTIONAL:
                third = None if col == 0 else col - 1
                if isinstance(banker_optional, bool):
                    draws.append(banker_optional)
                else:
                    draws.append(bool(banker_optional.get((total, third), True)))
            else:
                draws.append(action is Action.DRAW)
    counts = _enumerate(decks, tuple(draws), punter_draws_on_5)
    stands = tuple(
        cell_key(i // COLUMNS, None if i % COLUMNS == 0 else i % COLUMNS - 1)
        for i, draw in enumerate(draws)
        if not draw and tableau.cells[i] is Action.OPTIONAL
    )
    return Odds(decks, tableau.version, punter_draws_on_5, *counts, stands)


def house_odds(
    *,
    decks: int,
    tableau: Tableau = STANDARD_TABLEAU,
    punter_five: str = "free",
    banker_prescriptions: Mapping[str, str] | None = None,
    mix: Mapping[str, object] | None = None,
) -> Odds:
    """The odds of a house's own play: each cell it prescribes played as
    prescribed, each free cell drawn, or at its share of draws in ``mix``
    (see the module's docstring). The prescriptions are the house rules'
    (``"draw"``, ``"stand"`` or ``"free"`` for the punter's 5;
    ``{"3/9": "stand", ...}`` for the banker), checked as the engine checks
    them. ``mix``: ``{"punter": share, "3/9": share, ...}``, each share the
    probability of a draw at that cell (a Fraction, an int, or a string such
    as "12/31"; 0..1); a share for a cell the house prescribes, or that the
    tableau does not leave optional, is not used (a floor's mix is pooled
    over tables whose rules differ)."""
    rules = Prescriptions(punter_five=punter_five, banker=banker_prescriptions or {})
    rules.check_against(tableau)
    cells: dict[tuple[int, int | None], bool] = {}
    for key, choice in rules.banker.items():
        total, _, third = key.partition("/")
        cells[(int(total), None if third == "stood" else int(third))] = (
            choice.value == "draw"
        )
    if not mix:
        return compute_odds(
            decks=decks,
            tableau=tableau,
            punter_draws_on_5=rules.punter_five.value != "stand",
            banker_optional=cells,
        )
    return _mixed_odds(decks, tableau, rules, cells, mix)


def _share(key: str, value: object) -> Fraction:
    try:
        share = Fraction(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(f"mix[{key}]: {value!r} is not a share such as 1/3") from None
    if not 0 <= share <= 1:
        raise ValueError(f"mix[{key}]: {share} is not between 0 and 1")
    return share


def _mixed_odds(decks: int, tableau: Tableau, rules: Prescriptions,
                prescribed: Mapping[tuple[int, int | None], bool],
                mix: Mapping[str, object]) -> Odds:
    if type(decks) is not int or not 1 <= decks <= 8:
        raise ValueError(f"decks must be an integer 1..8, not {decks!r}")
    used: dict[str, Fraction] = {}
    free_five = rules.punter_five.value == "free"
    if "punter" in mix and free_five:
        used["punter"] = _share("punter", mix["punter"])
    banker: dict[int, Fraction] = {}
    for key, value in mix.items():
        if key == "punter":
            continue
        total, third = _cell(key)
        index = total * COLUMNS + (0 if third is None else third + 1)
        if tableau.cells[index] is not Action.OPTIONAL or (total, third) in prescribed:
            continue
        banker[index] = used[key] = _share(key, value)
    bden = 1
    for share in banker.values():
        bden = bden * share.denominator // _gcd(bden, share.denominator)
    weights = []
    for i, action in enumerate(tableau.cells):
        if i in banker:
            weights.append(int(banker[i] * bden))
        elif action is Action.OPTIONAL:
            key_cell = (i // COLUMNS, None if i % COLUMNS == 0 else i % COLUMNS - 1)
            weights.append(bden if prescribed.get(key_cell, True) else 0)
        else:
            weights.append(bden if action is Action.DRAW else 0)
    five = used.get("punter", Fraction(0 if rules.punter_five.value == "stand" else 1))
    counts = _enumerate_mixed(decks, tuple(weights), bden, five.numerator,
                              five.denominator)
    stands = tuple(
        cell_key(i // COLUMNS, None if i % COLUMNS == 0 else i % COLUMNS - 1)
        for i, w in enumerate(weights)
        if w == 0 and tableau.cells[i] is Action.OPTIONAL
    )
    return Odds(decks, tableau.version, five > 0, *counts, stands,
                tuple((k, f"{v.numerator}/{v.denominator}")
                      for k, v in sorted(used.items())),
                bden * five.denominator)


def _cell(key: str) -> tuple[int, int | None]:
    total, sep, third = key.partition("/")
    if sep and total.isdigit() and int(total) < 8 and (
            third == "stood" or (third.isdigit() and int(third) <= 9)):
        return int(total), None if third == "stood" else int(third)
    raise ValueError(f"mix: {key!r} is not 'punter' nor a cell such as '3/9'")


def as_decimal(value: Fraction, places: int = 12) -> Decimal:
    """An exact probability or rate as a Decimal of ``places`` decimals (for
    JSON and pages: a decimal string, never a binary float)."""
    q = Decimal(1).scaleb(-places)
    with localcontext() as ctx:
        ctx.prec = 60
        return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(q)


def levy(covered: Decimal, *, rate: Decimal, unit: Decimal,
         rounding: str = "half_up") -> Decimal:
    """The commission a banker win on ``covered`` takes under the house's rate,
    unit and rounding mode (a house rule's name: half_up, half_even, down):
    the engine's own rounding, so this is what settlement writes."""
    return round_money(Decimal(rate) * Decimal(covered), Decimal(unit),
                       rounding_mode(rounding))


@lru_cache(maxsize=64)
def _enumerate(decks: int, draws: tuple[bool, ...], punter_5: bool):
    """Counts of a pure strategy: every choice a draw (True) or a stand."""
    return _enumerate_mixed(decks, tuple(int(d) for d in draws), 1, int(punter_5), 1)


@lru_cache(maxsize=256)
def _enumerate_mixed(decks: int, weights: tuple[int, ...], bden: int,
                     pweight: int, pden: int):
    """Counts of a mixed strategy, scaled by ``pden x bden``: at each banker
    cell i the banker draws with probability weights[i] / bden (bden or 0
    for a prescribed or mandatory cell), the punter draws at 5 with
    probability pweight / pden. A coup meets at most one punter's and one
    banker's choice, so weighing each branch by its share is exact; every
    path carries the factor pden x bden once, so the ratios are the
    probabilities. With bden = pden = 1 and 0/1 weights: a pure strategy."""
    r = [16 * decks] + [4 * decks] * 9  # cards left by point value
    n = 52 * decks
    rest4, rest5 = _falling(n - 4, 2), n - 5  # ways to deal the unused cards
    both = pden * bden
    ban = pun = tie = 0
    pairs = _pairs()
    values = range(10)
    for p1, p2, po in pairs:
        w = po * r[p1]
        r[p1] -= 1
        w *= r[p2]
        r[p2] -= 1
        pt = (p1 + p2) % 10
        if pt <= 4:
            pdraw = pden
        elif pt == 5:
            pdraw = pweight
        else:
            pdraw = 0
        pstand = pden - pdraw
        for b1, b2, bo in pairs:
            w4 = w * bo * r[b1]
            r[b1] -= 1
            w4 *= r[b2]
            r[b2] -= 1
            bt = (b1 + b2) % 10
            if w4:
                if pt >= 8 or bt >= 8:
                    w4 *= rest4 * both
                    if bt > pt:
                        ban += w4
                    elif pt > bt:
                        pun += w4
                    else:
                        tie += w4
                else:
                    if pdraw:
                        row = bt * COLUMNS + 1
                        for v in values:
                            w5 = w4 * r[v] * pdraw
                            if not w5:
                                continue
                            pf = (pt + v) % 10
                            bdraw = weights[row + v]
                            if bdraw:
                                r[v] -= 1
                                b, p, t = _third(r, bt, pf)
                                r[v] += 1
                                wd = w5 * bdraw
                                ban += wd * b
                                pun += wd * p
                                tie += wd * t
                            if bdraw != bden:
                                ws = w5 * (bden - bdraw) * rest5
                                if bt > pf:
                                    ban += ws
                                elif pf > bt:
                                    pun += ws
                                else:
                                    tie += ws
                    if pstand:
                        ws4 = w4 * pstand
                        bdraw = weights[bt * COLUMNS]
                        if bdraw:
                            b, p, t = _third(r, bt, pt)
                            wd = ws4 * bdraw * rest5
                            ban += wd * b
                            pun += wd * p
                            tie += wd * t
                        if bdraw != bden:
                            ws = ws4 * (bden - bdraw) * rest4
                            if bt > pt:
                                ban += ws
                            elif pt > bt:
                                pun += ws
                            else:
                                tie += ws
            r[b1] += 1
            r[b2] += 1
        r[p1] += 1
        r[p2] += 1
    return ban, pun, tie


def _third(r: list[int], bt: int, pt: int) -> tuple[int, int, int]:
    """Ways the banker's third card makes him win / lose / tie against ``pt``
    (the caller weighs the card positions left after it)."""
    b = p = t = 0
    for v in range(10):
        f = (bt + v) % 10
        if f > pt:
            b += r[v]
        elif pt > f:
            p += r[v]
        else:
            t += r[v]
    return b, p, t


def punto_banco_odds(decks: int = 8) -> Odds:
    """Punto banco: its banker table, the player draws on 0-5 and stands on 6-7."""
    return compute_odds(
        decks=decks, tableau=PUNTO_BANCO_TABLEAU, punter_draws_on_5=True
    )


def chemmy_odds(decks: int = 6, tableau: Tableau = STANDARD_TABLEAU) -> Odds:
    """Chemin de fer with the default optional plays (punter draws at 5, the
    banker draws in every optional cell)."""
    return compute_odds(decks=decks, tableau=tableau)
