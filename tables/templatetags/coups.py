"""Template helpers for pages that show coups (tablet, floor, audit)."""

from __future__ import annotations

from django import template

from ..wording import coup_result

register = template.Library()


@register.filter
def result(coup) -> str:
    """{{ coup|result }}: "Banker wins 7 to 5" (tables.wording, one wording)."""
    return coup_result(coup)
