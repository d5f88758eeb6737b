"""Template helpers for the tablet."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template
from django.utils.formats import number_format

register = template.Library()


SUITS = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}


@register.filter
def cards(codes) -> str:
    """["TH", "KS"] -> "10♥ K♠" (the stored codes stay in the title)."""
    return " ".join(
        ("10" if c[0] == "T" else c[0]) + SUITS.get(c[1], c[1]) for c in codes
    )


@register.filter
def money(value) -> str:
    """An amount as people read it, in the active language's format: whole
    amounts without cents (1,000 / 1 000), others with two places."""
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return str(value)
    places = 0 if amount == amount.to_integral_value() else 2
    return number_format(amount, places, use_l10n=True, force_grouping=True)
