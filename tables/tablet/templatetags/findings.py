"""{% load findings %}: a coup's finding in the reader's language
(tables/finding_words.py), on the floor's pages."""

from __future__ import annotations

from django import template

from tables.finding_words import finding_text as _finding_text

register = template.Library()


@register.filter
def finding_text(finding, coup=None) -> str:
    """{{ f|finding_text:coup }}: "Le banquier est resté à 5 contre un 6…"."""
    if finding is None:
        return ""
    return _finding_text(finding, coup)
