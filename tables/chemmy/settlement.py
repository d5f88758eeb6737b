"""Settlement and carry-forward (docs/rules.md, "Settlement" and "Banker turns
and the suite").

Money is Decimal throughout; the commission rate, its rounding unit and mode are
house rules passed in. ``round_money`` is the one rounding helper.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

from .engine import Outcome
from .findings import Finding
from .stakes import CENT, ZERO, Coverage

__all__ = [
    "DEFAULT_COMMISSION_RATE",
    "DEFAULT_COMMISSION_UNIT",
    "Settlement",
    "TurnLedger",
    "bank_mismatch_finding",
    "cagnotte_variance_finding",
    "round_money",
    "settle",
    "turn_ledger",
]

DEFAULT_COMMISSION_RATE: Final = Decimal("0.05")  # the French regulated rate
DEFAULT_COMMISSION_UNIT: Final = Decimal("0.10")  # the French decree's 10 cents
_ROUNDINGS: Final = frozenset(
    {
        decimal.ROUND_UP,
        decimal.ROUND_DOWN,
        decimal.ROUND_CEILING,
        decimal.ROUND_FLOOR,
        decimal.ROUND_HALF_UP,
        decimal.ROUND_HALF_DOWN,
        decimal.ROUND_HALF_EVEN,
        decimal.ROUND_05UP,
    }
)
# Our own context, so a caller's thread-local decimal context cannot change sums.
_CTX: Final = decimal.Context(prec=34, traps=[decimal.InvalidOperation])


def _decimal(value: object, name: str) -> Decimal:
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a Decimal, not {type(value).__name__}")
    if not value.is_finite():
        raise ValueError(f"{name} must be finite, not {value}")
    return value


def round_money(
    amount: Decimal, unit: Decimal, rounding: str = ROUND_HALF_UP
) -> Decimal:
    """Round ``amount`` to a multiple of ``unit`` (0.10: 1.25 -> 1.30), to 2 places."""
    amount = _decimal(amount, "amount")
    _check_unit(unit, rounding)
    steps = _CTX.divide(amount, unit).quantize(
        Decimal(1), rounding=rounding, context=_CTX
    )
    return _CTX.multiply(steps, unit).quantize(CENT, context=_CTX)


def _check_unit(unit: Decimal, rounding: str) -> None:
    unit = _decimal(unit, "unit")
    if unit <= 0 or unit.quantize(CENT, context=_CTX) != unit:
        raise ValueError(f"unit must be a positive multiple of 0.01, not {unit}")
    if rounding not in _ROUNDINGS:
        raise ValueError(f"unknown rounding mode {rounding!r}")


@dataclass(frozen=True, slots=True)
class Settlement:
    outcome: Outcome
    bank_before: Decimal
    covered: Decimal
    garage: Decimal
    commission: Decimal
    bank_after: Decimal  # the bank carried forward
    payouts: tuple[Decimal, ...]  # punter's net per input stake
    banker_net: Decimal  # on the covered part, before commission
    turn_ends: bool  # the bank was lost


def settle(
    outcome: Outcome,
    coverage: Coverage,
    *,
    commission_rate: Decimal = DEFAULT_COMMISSION_RATE,
    commission_unit: Decimal = DEFAULT_COMMISSION_UNIT,
    rounding: str = ROUND_HALF_UP,
) -> Settlement:
    """Settle one coup on its covered amount C.

    Banker wins: the bank carries 2C - commission. Punter wins: the bank pays
    1:1 and is lost. Tie: nothing moves, the bank carries C.
    """
    outcome = Outcome(outcome)
    if not isinstance(coverage, Coverage):
        raise TypeError("coverage must be a Coverage from cover_stakes()")
    rate = _decimal(commission_rate, "commission_rate")
    if not 0 <= rate < 1:
        raise ValueError(f"commission_rate must be in [0, 1), not {rate}")
    _check_unit(commission_unit, rounding)
    c = coverage.covered
    commission = ZERO
    if outcome is Outcome.BANKER:
        commission = round_money(rate * c, commission_unit, rounding)
        bank_after = c + c - commission
        payouts = tuple(ZERO - s.covered for s in coverage.stakes)
        banker_net = c
    elif outcome is Outcome.PUNTER:
        bank_after = ZERO
        payouts = tuple(ZERO + s.covered for s in coverage.stakes)
        banker_net = ZERO - c
    else:
        bank_after = ZERO + c
        payouts = tuple(ZERO for _ in coverage.stakes)
        banker_net = ZERO
    return Settlement(
        outcome=outcome,
        bank_before=coverage.bank,
        covered=c,
        garage=coverage.garage,
        commission=commission,
        bank_after=bank_after,
        payouts=payouts,
        banker_net=banker_net,
        turn_ends=outcome is Outcome.PUNTER,
    )


@dataclass(frozen=True, slots=True)
class TurnLedger:
    opening: Decimal
    bank: Decimal  # carried forward after the last coup
    garage_total: Decimal
    commission_total: Decimal
    coups: int
    lost: bool

    def closing(self) -> Decimal:
        """What the banker walks away with: bank + garage when he passes,
        the garage alone when he lost the bank."""
        if self.lost:
            return self.garage_total
        return self.bank + self.garage_total


def turn_ledger(opening: Decimal, settlements: Iterable[Settlement]) -> TurnLedger:
    """Fold one banker turn's coups, in order. Nothing may follow a lost bank.

    Each coup's own ``bank_before`` is trusted here; comparing it with the bank
    carried forward is ``bank_mismatch_finding``'s job.
    """
    opening = _decimal(opening, "opening")
    if opening <= 0:
        raise ValueError(f"opening bank must be positive, not {opening}")
    bank, garage, commission, coups, lost = opening, ZERO, ZERO, 0, False
    for s in settlements:
        if lost:
            raise ValueError(
                f"coup {coups + 1} follows a lost bank: the turn had ended"
            )
        bank = s.bank_after
        garage += s.garage
        commission += s.commission
        coups += 1
        lost = s.turn_ends
    return TurnLedger(
        opening=opening,
        bank=bank,
        garage_total=garage,
        commission_total=commission,
        coups=coups,
        lost=lost,
    )


def bank_mismatch_finding(*, declared: Decimal, carried: Decimal) -> Finding | None:
    """A ``bank_mismatch`` finding when the croupier's declared bank is not the
    bank carried forward, else None."""
    declared = _decimal(declared, "declared")
    carried = _decimal(carried, "carried")
    if declared == carried:
        return None
    return Finding.create(
        "bank_mismatch",
        side="banker",
        message=(
            f"The croupier declared a bank of {declared}; the bank carried "
            f"forward is {carried}."
        ),
        declared_bank=str(declared),
        carried_forward=str(carried),
        difference=str(declared - carried),
    )


def cagnotte_variance_finding(*, counted: Decimal, computed: Decimal) -> Finding | None:
    """A ``cagnotte_variance`` finding when the cagnotte box counted at closing
    differs from the commission computed over the session, else None."""
    counted = _decimal(counted, "counted")
    computed = _decimal(computed, "computed")
    if counted == computed:
        return None
    return Finding.create(
        "cagnotte_variance",
        side=None,
        message=(
            f"The cagnotte counted {counted}; the commission computed is {computed}."
        ),
        counted=str(counted),
        computed=str(computed),
        difference=str(counted - computed),
    )
