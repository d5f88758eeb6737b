"""Cards as people read them, in the active language.

A card is stored as its code ("TH", "KS": tables/chemmy/cards.py). Wherever
a card is written for a person (the tablet's pad and recent coups, the
result panel, the floor's pages) it is written the way the pad labels it:
the rank's letter in the reader's language (R, D, V in French for K, Q, J)
and the suit's symbol ("R♠", "10♥"); a tooltip or a screen reader names it
in words ("10 de cœur", "roi de pique").
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.translation import gettext as _
from django.utils.translation import pgettext

SUIT_SYMBOLS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}


def rank_keys() -> dict[str, tuple[str, str]]:
    """code -> (the pad key's name, its label): ("King", "K") / ("Roi", "R")."""
    return {
        "A": (_("Ace"), _("A")),
        "T": (_("10"), "10"),
        "J": (_("Jack"), _("J")),
        "Q": (_("Queen"), _("Q")),
        "K": (_("King"), _("K")),
    }


def suit_names() -> dict[str, str]:
    """code -> the pad key's name: "Hearts" / "Cœur"."""
    return {
        "S": _("Spades"),
        "H": _("Hearts"),
        "D": _("Diamonds"),
        "C": _("Clubs"),
    }


def phrase_names() -> tuple[dict[str, str], dict[str, str]]:
    """Ranks and suits as they read inside a card's name ("king", "hearts"
    in "king of hearts"; "roi", "cœur" in "roi de cœur")."""
    ranks = {
        "A": pgettext("in a card's name", "ace"),
        "T": "10",
        "J": pgettext("in a card's name", "jack"),
        "Q": pgettext("in a card's name", "queen"),
        "K": pgettext("in a card's name", "king"),
    }
    suits = {
        "S": pgettext("in a card's name", "spades"),
        "H": pgettext("in a card's name", "hearts"),
        "D": pgettext("in a card's name", "diamonds"),
        "C": pgettext("in a card's name", "clubs"),
    }
    return ranks, suits


def card_strings() -> dict[str, str]:
    """What the tablet's script needs to name a card in words (its
    cardName(), static/tablet/coup/words.js): merged into js_strings()."""
    ranks, suits = phrase_names()
    out = {"card_name": _("{rank} of {suit}")}
    out.update({f"card_rank_{k}": v for k, v in ranks.items() if k != "T"})
    out.update({f"card_suit_{k}": v for k, v in suits.items()})
    return out


def _valid(code) -> bool:
    return isinstance(code, str) and len(code) == 2 and code[1] in SUIT_SYMBOLS


def card_label(code: str) -> str:
    """"KH" -> "K♥" (English) / "R♥" (French); "TH" -> "10♥"."""
    if not _valid(code):
        return str(code)
    label = rank_keys().get(code[0], (code[0], code[0]))[1]
    return label + SUIT_SYMBOLS[code[1]]


def card_name(code: str) -> str:
    """"KH" -> "king of hearts" / "roi de cœur"."""
    if not _valid(code):
        return str(code)
    ranks, suits = phrase_names()
    # Translators: a playing card's name, e.g. "king of hearts", "10 of spades".
    return _("{rank} of {suit}").format(
        rank=ranks.get(code[0], code[0]), suit=suits[code[1]]
    )


def cards_label(codes: Iterable[str]) -> str:
    """["TH", "KS"] -> "10♥ K♠"."""
    return " ".join(card_label(c) for c in codes)


def cards_name(codes: Iterable[str]) -> str:
    """["TH", "6D"] -> "10 of hearts, 6 of diamonds"."""
    return ", ".join(card_name(c) for c in codes)


def hands_name(punter: Iterable[str], banker: Iterable[str]) -> str:
    """Both hands in words, for a tooltip: "Punter: 10 of hearts, 6 of
    diamonds · Banker: king of spades, 3 of clubs"."""
    return "{} · {}".format(
        _("Punter: {cards}").format(cards=cards_name(punter)),
        _("Banker: {cards}").format(cards=cards_name(banker)),
    )
