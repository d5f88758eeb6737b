"""{% load cards %}: cards as people read them (tables/cards.py), for every
page that writes a card for a person: the tablet, the floor, the audit."""

from __future__ import annotations

from django import template

from tables import cards as c

register = template.Library()


@register.filter
def cards(codes) -> str:
    """["TH", "KS"] -> "10♥ K♠" ("10♥ R♠" in French): the pad's own labels."""
    return c.cards_label(codes or [])


@register.filter
def card(code) -> str:
    """"KS" -> "K♠" ("R♠" in French)."""
    return c.card_label(code)


@register.filter
def card_name(code) -> str:
    """"KS" -> "king of spades" ("roi de pique"), for a tooltip."""
    return c.card_name(code)


@register.filter
def card_names(codes) -> str:
    """["TH", "6D"] -> "10 of hearts, 6 of diamonds", for a tooltip."""
    return c.cards_name(codes or [])


@register.simple_tag
def hands_in_words(punter, banker) -> str:
    """Both hands in words: "Punter: 10 of hearts, … · Banker: …"."""
    return c.hands_name(punter or [], banker or [])
