"""{% load findings %}: a coup's finding in the reader's language
(tables/finding_words.py), on the floor's pages."""

from __future__ import annotations

from django import template

from tables import finding_words as fw

register = template.Library()


@register.filter
def finding_text(finding, coup=None) -> str:
    """{{ f|finding_text:coup }}: "Le banquier est resté à 5 contre un 6…"."""
    if finding is None:
        return ""
    return fw.finding_text(finding, coup)


@register.filter
def side_word(value) -> str:
    return fw.side_word(value)


@register.filter
def choice_word(value) -> str:
    return fw.choice_word(value)


@register.filter
def announcement_word(value) -> str:
    return fw.announcement_word(value)


@register.filter
def code_words(codes) -> str:
    """{{ c.findings|code_words }}: ["card_count_exceeded", "false_draw"] ->
    "card seen too often, false draw", in the reader's language; "" for none."""
    return ", ".join(fw.code_word(c) for c in codes or ())


@register.filter
def code_word(value) -> str:
    """{{ f.code|code_word }}: "false_draw" -> "false draw" ("faux tirage")."""
    return fw.code_word(value)
