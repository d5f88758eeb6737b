"""Expected commission and its 95 % band, in Decimal.

Each coup's commission is rate x covered when the banker wins (probability p)
and nothing otherwise. Over independent coups the sum has
    mean     = rate * p * sum(covered)
    variance = rate^2 * p * (1 - p) * sum(covered^2)
so the band depends on the turnover *and* on the stake mix (a few big bancos
spread it more than many small stakes): that is why the rollups keep sum(covered^2).
The 95 % band is mean +/- 1.96 sd (normal approximation, fine over the
hundreds of coups of a table-day). Rounding to the commission unit is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from tables.services.coups import tableau_for

from .odds import compute_odds

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


@dataclass
class Expectation:
    mean: Decimal = Decimal("0")
    var: Decimal = Decimal("0")

    def add(self, *, rate: Decimal, p: Decimal, covered, covered_sq) -> None:
        with localcontext() as ctx:
            ctx.prec = 34
            self.mean += rate * p * Decimal(covered)
            self.var += rate * rate * p * (1 - p) * Decimal(covered_sq)

    def merge(self, other: Expectation) -> None:
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
