"""Cards, points and card codes (docs/rules.md, "Cards and totals").

A card is a two-character canonical code: rank ``A 2-9 T J Q K`` then suit
``S H D C``. Input may be lower case, use ``10`` for ``T`` and carry surrounding
blanks; everything the engine returns is canonical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = [
    "ALL_CODES",
    "RANKS",
    "SUITS",
    "CoupError",
    "hand_total",
    "parse_card",
    "parse_hand",
    "point",
]

RANKS: Final = "A23456789TJQK"
SUITS: Final = "SHDC"
# Suit by suit, ace to king: the order of a new pack.
ALL_CODES: Final[tuple[str, ...]] = tuple(r + s for s in SUITS for r in RANKS)

_RANK_POINTS: Final = {r: (i + 1) % 10 if i < 9 else 0 for i, r in enumerate(RANKS)}
# canonical code -> point value (ace 1, two to nine face value, ten and pictures 0)
POINTS: Final[dict[str, int]] = {c: _RANK_POINTS[c[0]] for c in ALL_CODES}


def _aliases() -> dict[str, str]:
    # Every accepted spelling maps straight to its canonical code, so the common
    # case (a code as a tablet sends it) is one dict lookup, no string work.
    out: dict[str, str] = {}
    for code in ALL_CODES:
        rank, suit = code[0], code[1]
        ranks = [rank, rank.lower()] + (["10"] if rank == "T" else [])
        for r in dict.fromkeys(ranks):
            for s in (suit, suit.lower()):
                out[r + s] = code
    return out


_ALIASES: Final[dict[str, str]] = _aliases()


class CoupError(ValueError):
    """Structurally broken input: refused, never a finding. ``field`` names it."""

    field: str
    message: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type[CoupError], tuple[str, str]]:
        # Exceptions pickle their args; ours has two, not one (Celery, multiprocessing).
        return (type(self), (self.field, self.message))

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


def parse_card(code: str, *, field: str = "card") -> str:
    """Return the canonical code for ``code`` ("th", "10h", " TH " -> "TH")."""
    try:
        return _ALIASES[code]
    except (KeyError, TypeError):
        pass
    if not isinstance(code, str):
        raise CoupError(field, f"a card code is text, not {type(code).__name__}")
    canonical = _ALIASES.get(code.strip())
    if canonical is None:
        raise CoupError(
            field,
            f"unknown card code {code!r} (rank A 2-9 T/10 J Q K, then suit S H D C)",
        )
    return canonical


def parse_hand(cards: object, *, field: str) -> tuple[str, ...]:
    """Parse one side's cards: a list or tuple of 2 or 3 codes.

    A wrong shape names ``field``; a bad card names ``field[i]``.
    """
    if not isinstance(cards, (list, tuple)):
        raise CoupError(field, "must be a list of 2 or 3 card codes")
    n = len(cards)
    if n != 2 and n != 3:
        raise CoupError(field, f"must hold 2 or 3 cards, not {n}")
    aliases = _ALIASES
    try:
        if n == 2:
            return (aliases[cards[0]], aliases[cards[1]])
        return (aliases[cards[0]], aliases[cards[1]], aliases[cards[2]])
    except (KeyError, TypeError):
        # The slow path only runs for unusual spellings and for errors.
        return tuple(parse_card(c, field=f"{field}[{i}]") for i, c in enumerate(cards))


def point(card: str) -> int:
    """Point value 0..9 of one card."""
    try:
        return POINTS[card]
    except (KeyError, TypeError):
        return POINTS[parse_card(card)]


def hand_total(cards: Sequence[str]) -> int:
    """A hand's total: the sum of its points, modulo 10."""
    return sum(point(c) for c in cards) % 10
