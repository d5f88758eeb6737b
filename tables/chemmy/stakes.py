"""Stakes, coverage and the garage (docs/rules.md,
"Stakes and announcements" and "Coverage and the garage").

``cover_stakes`` refuses a broken stake with a CoupError naming it
("stakes[2].amount"), then covers the valid ones in priority and rotation order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Final

from .cards import CoupError

__all__ = [
    "Announcement",
    "Coverage",
    "CoveredStake",
    "StakeIn",
    "cover_stakes",
    "money",
    "seat_rotation",
]

CENT: Final = Decimal("0.01")
ZERO: Final = Decimal("0.00")


class Announcement(StrEnum):
    NONE = "none"
    SUIVI = "suivi"
    BANCO_SOLO = "banco_solo"
    BANCO_DEUX = "banco_deux"
    BANCO_AVEC = "banco_avec"


_COVER_RULES: Final = ("partial", "all_or_nothing")  # chemmy.house.Cover's values
# Lower goes first (docs/rules.md, "Stakes and announcements").
_PRIORITY: Final = {
    Announcement.SUIVI: 0,
    Announcement.BANCO_SOLO: 1,
    Announcement.BANCO_DEUX: 2,
    Announcement.BANCO_AVEC: 3,
    Announcement.NONE: 4,
}


@dataclass(frozen=True, slots=True)
class StakeIn:
    """One stake as announced. Exactly one of ``seat`` / ``standing``."""

    amount: Decimal
    seat: int | None = None
    standing: str | None = None
    announcement: Announcement = Announcement.NONE


@dataclass(frozen=True, slots=True)
class CoveredStake:
    index: int  # position in the input list
    stake: StakeIn
    covered: Decimal
    declined: Decimal


@dataclass(frozen=True, slots=True)
class Coverage:
    bank: Decimal
    covered: Decimal
    garage: Decimal  # covered + garage == bank: withdrawn by the banker, not at risk
    stakes: tuple[CoveredStake, ...]  # in input order
    punter_index: int | None  # input index of the hand holder; None: nothing covered
    punter_seat: int | None
    punter_standing: str | None


def money(value: object, field: str) -> Decimal:
    """A positive, finite amount of money with at most 2 decimal places.

    Decimal or int only: a float is refused, it cannot hold cents exactly.
    Returned quantized to 2 places.
    """
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        kind = type(value).__name__
        raise CoupError(field, f"must be a Decimal amount, not {kind}")
    amount = Decimal(value)
    if not amount.is_finite():
        raise CoupError(field, "must be a finite amount")
    if amount <= 0:
        raise CoupError(field, f"must be positive, not {amount}")
    try:
        cents = amount.quantize(CENT)
    except InvalidOperation:
        raise CoupError(field, f"{amount} is too large") from None
    if cents != amount:
        raise CoupError(field, f"{amount} has more than 2 decimal places")
    return cents


def seat_rotation(banker_seat: int, seats: int) -> tuple[int, ...]:
    """The other seats in rotation order, starting on the banker's right.

    Banker 5 of 9: (6, 7, 8, 9, 1, 2, 3, 4).
    """
    _check_table(banker_seat, seats)
    return tuple((banker_seat + k - 1) % seats + 1 for k in range(1, seats))


def _check_table(banker_seat: int, seats: int) -> None:
    if type(seats) is not int or seats < 2:
        raise CoupError("seats", f"a table has at least 2 seats, not {seats!r}")
    if type(banker_seat) is not int or not 1 <= banker_seat <= seats:
        raise CoupError(
            "banker_seat", f"must be a seat 1..{seats}, not {banker_seat!r}"
        )


@dataclass(slots=True)
class _Valid:
    index: int
    stake: StakeIn
    amount: Decimal
    announcement: Announcement
    rotation: int  # 0 = the seat on the banker's right; standing players after all


def cover_stakes(
    stakes: Sequence[StakeIn],
    *,
    bank: Decimal,
    banker_seat: int,
    seats: int,
    minimum_banco: Decimal,
    suivi_seat: int | None = None,
    cover: str = "partial",
    maximum_bank: Decimal | None = None,
) -> Coverage:
    """Validate the stakes and cover them from ``bank``.

    Order: announcement priority (suivi, banco solo, banco deux, banco avec,
    plain), then rotation from the banker's right, standing players last in
    input order. Under the house's ``cover`` rule "partial" a stake is covered
    up to what remains of the bank and the rest of it is declined; under
    "all_or_nothing" a stake larger than what remains is declined whole. A
    house's ``maximum_bank`` caps the bank in play; the excess goes to the
    garage with whatever no stake covers. An empty list covers nothing.
    """
    bank = money(bank, "bank")
    minimum_banco = money(minimum_banco, "minimum_banco")
    if cover not in _COVER_RULES:
        raise CoupError("cover", f"{cover!r} is not one of {', '.join(_COVER_RULES)}")
    in_play = bank
    if maximum_bank is not None:
        in_play = min(bank, money(maximum_bank, "maximum_bank"))
    _check_table(banker_seat, seats)
    if suivi_seat is not None and (
        type(suivi_seat) is not int
        or not 1 <= suivi_seat <= seats
        or suivi_seat == banker_seat
    ):
        raise CoupError("suivi_seat", f"not a punter's seat: {suivi_seat!r}")
    if isinstance(stakes, (str, bytes)) or not isinstance(stakes, Sequence):
        raise CoupError("stakes", "must be a list of stakes")

    # The announcements are worth the bank in play: at a bank above the
    # house's maximum, a banco solo or a suivi is the maximum, a banco avec
    # half of it (docs/rules.md, "Stakes and announcements").
    worth = _BankInPlay(in_play, capped=in_play < bank)
    valid = [
        _validate(i, s, worth, banker_seat, seats, minimum_banco / 10, suivi_seat)
        for i, s in enumerate(stakes)
    ]
    _check_unique(valid)
    _check_banco_deux(valid, worth)

    remaining = in_play
    whole = cover == "all_or_nothing"
    covered_by_index: dict[int, Decimal] = {}
    for v in sorted(valid, key=lambda v: (_PRIORITY[v.announcement], v.rotation)):
        take = min(v.amount, remaining)
        if whole and take < v.amount:
            take = ZERO
        covered_by_index[v.index] = take
        remaining -= take
    out = tuple(
        CoveredStake(
            index=v.index,
            stake=v.stake,
            covered=covered_by_index[v.index],
            declined=v.amount - covered_by_index[v.index],
        )
        for v in valid
    )
    covered = in_play - remaining
    holder = _holder(valid, covered_by_index)
    return Coverage(
        bank=bank,
        covered=covered,
        garage=bank - covered,
        stakes=out,
        punter_index=None if holder is None else holder.index,
        punter_seat=None if holder is None else holder.stake.seat,
        punter_standing=None if holder is None else holder.stake.standing,
    )


@dataclass(frozen=True, slots=True)
class _BankInPlay:
    """What the announcements are worth, said as the refusals say it."""

    amount: Decimal
    capped: bool  # the house's maximum bank, below the bank the banker holds

    def __str__(self) -> str:
        return f"{self.amount}, the house maximum" if self.capped else str(self.amount)


# The announcements in words: a refusal reaches a croupier (refusals.js).
_WORDS: Final = {
    Announcement.SUIVI: "suivi",
    Announcement.BANCO_SOLO: "banco solo",
    Announcement.BANCO_DEUX: "banco deux",
    Announcement.BANCO_AVEC: "banco avec",
}


def _validate(
    i: int,
    stake: object,
    bank: _BankInPlay,
    banker_seat: int,
    seats: int,
    minimum_stake: Decimal,
    suivi_seat: int | None,
) -> _Valid:
    where = f"stakes[{i}]"
    if not isinstance(stake, StakeIn):
        raise CoupError(where, "must be a StakeIn")
    amount = money(stake.amount, f"{where}.amount")
    if amount < minimum_stake:
        raise CoupError(
            f"{where}.amount",
            f"{amount} is below the minimum stake {minimum_stake} "
            "(one tenth of the minimum banco)",
        )
    seat, standing = stake.seat, stake.standing
    if (seat is None) == (standing is None):
        raise CoupError(f"{where}.seat", "give either a seat or a standing label")
    if seat is not None:
        if type(seat) is not int or not 1 <= seat <= seats:
            raise CoupError(f"{where}.seat", f"must be a seat 1..{seats}, not {seat!r}")
        if seat == banker_seat:
            raise CoupError(f"{where}.seat", f"seat {seat} holds the bank")
        rotation = (seat - banker_seat - 1) % seats
    else:
        if not isinstance(standing, str) or not standing.strip():
            raise CoupError(f"{where}.standing", "must be a non-empty label")
        rotation = seats + i
    try:
        announcement = Announcement(stake.announcement)
    except ValueError:
        raise CoupError(
            f"{where}.announcement", f"unknown announcement {stake.announcement!r}"
        ) from None
    _check_announcement(where, announcement, amount, seat, bank, suivi_seat)
    return _Valid(i, stake, amount, announcement, rotation)


def _check_announcement(
    where: str,
    announcement: Announcement,
    amount: Decimal,
    seat: int | None,
    bank: _BankInPlay,
    suivi_seat: int | None,
) -> None:
    if announcement is Announcement.SUIVI:
        if suivi_seat is None:
            raise CoupError(
                f"{where}.announcement",
                "no suivi is open: nobody went banco and lost the previous coup",
            )
        if seat != suivi_seat:
            raise CoupError(
                f"{where}.announcement", f"only seat {suivi_seat} may call suivi"
            )
    whole = announcement in (Announcement.SUIVI, Announcement.BANCO_SOLO)
    if whole and amount != bank.amount:
        raise CoupError(
            f"{where}.amount",
            f"{_WORDS[announcement]} takes the whole bank in play ({bank}), "
            f"not {amount}",
        )
    if announcement is Announcement.BANCO_AVEC and amount * 2 != bank.amount:
        half = _BankInPlay(bank.amount / 2, capped=bank.capped)
        raise CoupError(
            f"{where}.amount",
            f"banco avec takes half the bank in play ({half}), not {amount}",
        )


def _check_unique(valid: list[_Valid]) -> None:
    seen: dict[object, int] = {}
    for v in valid:
        if v.stake.seat is not None:
            key: object = ("seat", v.stake.seat)
            what, name = "seat", f"seat {v.stake.seat}"
        else:
            label = (v.stake.standing or "").strip()
            key, what, name = ("standing", label), "standing", f"{label!r}"
        if key in seen:
            raise CoupError(
                f"stakes[{v.index}].{what}",
                f"{name} already has a stake (stakes[{seen[key]}])",
            )
        seen[key] = v.index


def _check_banco_deux(valid: list[_Valid], bank: _BankInPlay) -> None:
    pair = [v for v in valid if v.announcement is Announcement.BANCO_DEUX]
    if not pair:
        return
    if len(pair) == 1:
        raise CoupError(
            f"stakes[{pair[0].index}].announcement",
            "banco deux needs a second punter",
        )
    if len(pair) > 2:
        raise CoupError(
            f"stakes[{pair[2].index}].announcement",
            "banco deux is two punters; a third cannot join",
        )
    first, second = pair
    if first.amount + second.amount != bank.amount:
        raise CoupError(
            f"stakes[{second.index}].amount",
            f"banco deux stakes[{first.index}] and stakes[{second.index}] total "
            f"{first.amount + second.amount}, not the bank in play ({bank})",
        )


def _holder(valid: list[_Valid], covered: dict[int, Decimal]) -> _Valid | None:
    # Highest covered stake holds the punter hand; equal stakes: first in rotation.
    best: _Valid | None = None
    for v in valid:
        c = covered[v.index]
        if c <= 0:
            continue
        if best is None:
            best = v
            continue
        b = covered[best.index]
        if c > b or (c == b and v.rotation < best.rotation):
            best = v
    return best
