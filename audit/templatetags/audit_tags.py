"""Small template helpers for the floor pages."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template

from casino.roles import has_capability

register = template.Library()


@register.filter
def dealing_order(coup) -> list[dict]:
    """Punter 1, banker 1, punter 2, banker 2, then the third cards."""
    p, b = coup.punter_cards, coup.banker_cards
    order = [("punter", p[0]), ("banker", b[0]), ("punter", p[1]), ("banker", b[1])]
    if len(p) > 2:
        order.append(("punter", p[2]))
    if len(b) > 2:
        order.append(("banker", b[2]))
    return [{"n": i, "side": s, "card": c} for i, (s, c) in enumerate(order, 1)]


@register.filter
def sign_class(value) -> str:
    try:
        d = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return ""
    return "pos" if d > 0 else "neg" if d < 0 else ""


@register.filter
def can(user, capability: str) -> bool:
    return has_capability(user, capability)


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None
