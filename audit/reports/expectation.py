"""Expected commission and its 95 % band, in Decimal, under each coup's own
house rules.

A coup's commission is L = round(rate x C, unit, mode) when the banker wins
(probability p) and nothing otherwise: C is the coup's covered amount, and
rate, unit, rounding mode, decks, tableau and the prescribed cells are those
of the house-rules version the coup was played under (coup.rules, its
tableau_version). p is exact (odds.house_odds: prescribed cells as prescribed,
free cells drawn). Over independent coups the sum has
    mean     = sum(p * L)
    variance = sum(p * (1 - p) * L^2)
so the band depends on the turnover *and* on the stake mix (a few big bancos
spread it more than many small stakes). L is the levy the house's rounding
actually takes (51.30, not 51.25, on C = 1025.00 at 5 % to 0.10 half up): the
expectation per coup is exact for the covered amounts actually played, which
the report reads from the coups grouped by covered amount (selectors).
The 95 % band is mean +/- 1.96 sd (normal approximation, fine over the
hundreds of coups of a table-day).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from tables.services.coups import tableau_for

from .odds import compute_odds, house_odds, levy

Z95 = Decimal("1.96")
CENT = Decimal("0.01")


def _dec(f: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 34
        return Decimal(f.numerator) / Decimal(f.denominator)


def p_banker(decks: int, tableau_version: str) -> Decimal:
    """P(banker wins) for a table's decks and tableau, default optional plays."""
    odds = compute_odds(decks=decks, tableau=tableau_for(tableau_version))
    return _dec(odds.p_banker)


def rules_play(rules, tableau_version: str | None = None) -> tuple:
    """What p depends on in a house-rules version: decks, tableau, and the
    prescribed cells (a hashable key: many versions share it)."""
    return (
        rules.decks,
        tableau_version or rules.tableau.version,
        rules.punter_five,
        tuple(sorted((rules.banker_prescriptions or {}).items())),
    )


_P_HOUSE: dict[tuple, Decimal] = {}


def p_banker_play(play: tuple) -> Decimal:
    """P(banker wins) for a rules_play key (computed once per process)."""
    p = _P_HOUSE.get(play)
    if p is None:
        decks, tableau_version, punter_five, cells = play
        odds = house_odds(decks=decks, tableau=tableau_for(tableau_version),
                          punter_five=punter_five, banker_prescriptions=dict(cells))
        p = _P_HOUSE[play] = _dec(odds.p_banker)
    return p


def coup_levy(rules, covered: Decimal) -> Decimal:
    """The commission a banker win on ``covered`` takes under ``rules``."""
    return levy(covered, rate=rules.commission_rate, unit=rules.commission_unit,
                rounding=rules.commission_rounding)


@dataclass
class Expectation:
    mean: Decimal = Decimal("0")
    var: Decimal = Decimal("0")

    def add(self, *, rate: Decimal, p: Decimal, covered, covered_sq) -> None:
        with localcontext() as ctx:
            ctx.prec = 34
            self.mean += rate * p * Decimal(covered)
            self.var += rate * rate * p * (1 - p) * Decimal(covered_sq)

    def add_coups(self, *, n: int, p: Decimal, levy: Decimal) -> None:
        """``n`` coups whose banker win (probability ``p``) takes ``levy``."""
        with localcontext() as ctx:
            ctx.prec = 34
            self.mean += n * p * levy
            self.var += n * p * (1 - p) * levy * levy

    def copy(self) -> Expectation:
        return Expectation(self.mean, self.var)

    def merge(self, other: Expectation) -> None:
        with localcontext() as ctx:
            ctx.prec = 34
            self.mean += other.mean
            self.var += other.var

    @property
    def sd(self) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = 34
            return self.var.sqrt() if self.var > 0 else Decimal("0")

    @property
    def low(self) -> Decimal:
        return max(Decimal("0"), self.mean - Z95 * self.sd).quantize(CENT)

    @property
    def high(self) -> Decimal:
        return (self.mean + Z95 * self.sd).quantize(CENT)

    @property
    def expected(self) -> Decimal:
        return self.mean.quantize(CENT)

    def z(self, actual: Decimal) -> Decimal | None:
        """How many standard deviations the actual commission is from the mean."""
        sd = self.sd
        if not sd:
            return None
        return ((Decimal(actual) - self.mean) / sd).quantize(CENT)

    def outside(self, actual: Decimal) -> bool:
        # (actual - mean)^2 > 1.96^2 var: no square root per cell
        if not self.var:
            return False
        gap = Decimal(actual) - self.mean
        return gap * gap > Z95 * Z95 * self.var
