"""Template helpers for the tablet."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template
from django.utils.formats import number_format

from tables.cards import cards_label

register = template.Library()


@register.filter
def cards(codes) -> str:
    """["TH", "KS"] -> "10♥ K♠" ("10♥ R♠" in French): the pad's own labels."""
    return cards_label(codes)


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
