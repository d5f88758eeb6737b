"""The shoe (docs/rules.md, "The shoe"): the seven-card rule, card counts and
the count of the cards left at the shoe's close."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from .cards import parse_card
from .findings import Finding

__all__ = [
    "DEFAULT_DECKS",
    "MIN_CARDS_TO_DEAL",
    "cards_left",
    "shoe_count_finding",
    "shoe_findings",
]

DEFAULT_DECKS: Final = 6  # house rule; the sources mention 6 and 3
MIN_CARDS_TO_DEAL: Final = 7  # the cut card sits before the seventh-last card


def _check_decks(decks: int) -> None:
    if type(decks) is not int or not 1 <= decks <= 8:
        raise ValueError(f"decks must be 1..8, not {decks!r}")


def _count(value: int, name: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def cards_left(decks: int, burned: int, dealt: int) -> int:
    """Cards left in the shoe: 52 x decks - burned - dealt (negative if over-dealt)."""
    _check_decks(decks)
    return 52 * decks - _count(burned, "burned") - _count(dealt, "dealt")


def shoe_findings(
    *,
    decks: int,
    burned: int,
    dealt_before: int,
    seen: Mapping[str, int],
    new_cards: Sequence[str],
) -> list[Finding]:
    """Shoe findings for one coup about to be recorded.

    ``seen`` counts the cards of this shoe before the coup, ``new_cards`` are the
    coup's cards. A code is reported when this coup's cards take its count past
    ``decks``, once per coup, in the order the cards came.
    """
    left = cards_left(decks, burned, dealt_before)
    findings: list[Finding] = []
    if left < MIN_CARDS_TO_DEAL:
        findings.append(
            Finding.create(
                "deal_below_seven",
                side=None,
                message=(
                    f"The coup began with {left} card{'s' if left != 1 else ''} "
                    f"left in the shoe; at least {MIN_CARDS_TO_DEAL} are required."
                ),
                cards_left=left,
            )
        )
    counts: dict[str, int] = {}
    for key, n in seen.items():
        code = parse_card(key, field="seen")
        counts[code] = counts.get(code, 0) + _count(n, f"seen[{key!r}]")
    order: list[str] = []
    for i, card in enumerate(new_cards):
        code = parse_card(card, field=f"new_cards[{i}]")
        counts[code] = counts.get(code, 0) + 1
        if code not in order:
            order.append(code)
    for code in order:
        if counts[code] > decks:
            findings.append(
                Finding.create(
                    "card_count_exceeded",
                    side=None,
                    message=(
                        f"{code} has been seen {counts[code]} times in a "
                        f"{decks}-deck shoe: at most {decks} can be in it."
                    ),
                    card=code,
                    count=counts[code],
                    decks=decks,
                )
            )
    return findings


def shoe_count_finding(
    decks: int, burned: int, dealt: int, left: int
) -> Finding | None:
    """A ``shoe_count`` finding when the cards counted left in the shoe at its
    close do not make up the shoe: dealt + burned + left != 52 x decks. None
    when they do. A short, long or salted shoe is then certain, not a matter
    of statistics: every card is either recorded (dealt, burned) or counted."""
    _check_decks(decks)
    burned = _count(burned, "burned")
    dealt = _count(dealt, "dealt")
    left = _count(left, "left")
    expected = 52 * decks
    difference = dealt + burned + left - expected
    if difference == 0:
        return None
    what = "more" if difference > 0 else "fewer"
    return Finding.create(
        "shoe_count",
        side=None,
        message=(
            f"The shoe holds {expected} cards ({decks} x 52); {dealt} dealt, "
            f"{burned} burned and {left} counted left make "
            f"{dealt + burned + left}: {abs(difference)} {what}."
        ),
        expected=expected,
        dealt=dealt,
        burned=burned,
        left=left,
        difference=difference,
    )
