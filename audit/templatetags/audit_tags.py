"""Small template helpers for the floor pages."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django import template
from django.conf import settings
from django.template.loader import get_template
from django.urls import get_script_prefix
from django.utils import timezone, translation

from casino.roles import has_capability

register = template.Library()

# The floor's cards as rendered, by everything a card shows (its key): with
# 500 tables, rendering every card on every load took the floor page's CPU
# (~0.4 ms a card), while between two loads a few tables change. A card is
# rendered again when anything it shows changes; the key is its whole input,
# so a card is never stale. Per process, bounded (cleared when full).
_CARDS: dict[tuple, str] = {}
CARDS_MAX = 5000


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


def floor_card_key(r: dict) -> tuple:
    """Everything the card of floor row `r` (selectors.floor_tables) shows,
    and what its rendering depends on besides (language, time zone, URL
    prefix)."""
    session, turn, shoe = r["session"], r["turn"], r["shoe"]
    return (
        translation.get_language(), timezone.get_current_timezone_name(),
        get_script_prefix(), session["pk"], session["gaming_day"],
        session["opened_at"], r["table"]["pk"], r["table"]["name"], r["croupier"],
        None if turn is None else (turn["seat"], turn["bank"]), r["coups"],
        None if shoe is None else (shoe["number"], shoe["cards_left"]),
        r["critical"], r["warning"], r.get("live", 0),
    )


@register.simple_tag
def floor_card(r: dict) -> str:
    """One table's card on the floor (audit/_floor_card.html), rendered only
    when what it shows has changed since this process last rendered it."""
    key = floor_card_key(r)
    html = None if settings.DEBUG else _CARDS.get(key)
    if html is None:
        html = get_template("audit/_floor_card.html").render({"r": r})
        if len(_CARDS) >= CARDS_MAX:
            _CARDS.clear()
        _CARDS[key] = html
    return html  # already escaped: a SafeString from the template


# The review queue's rows as rendered, by everything a row shows, as the
# cards above: at 1,000 tables the queue's fifty rows were a third of its
# rendering, and between two renderings few of them change (a row's age
# changes once a minute, and is in its key).
_ROWS: dict[tuple, str] = {}


@register.simple_tag
def queue_row(f) -> str:
    """One flag's row in the review queue (audit/_queue_row.html), rendered
    only when what it shows has changed since this process last rendered it."""
    from django.template.defaultfilters import truncatechars
    from django.utils.timesince import timesince

    from ..flag_words import flag_text as text_of

    age, text = timesince(f.raised_at), truncatechars(text_of(f), 80)
    key = (translation.get_language(), timezone.get_current_timezone_name(),
           get_script_prefix(), f.pk, f.severity, f.code, f.kind, f.side,
           f.table.name if f.table_id else None, f.seq,
           f.shoe.number if f.shoe_id else None,
           f.coup.revision if f.coup_id else None,
           str(f.croupier) if f.croupier_id else None, f.gaming_day, age,
           f.status, f.to_review, text)
    html = None if settings.DEBUG else _ROWS.get(key)
    if html is None:
        html = get_template("audit/_queue_row.html").render(
            {"f": f, "age": age, "text": text})
        if len(_ROWS) >= CARDS_MAX:
            _ROWS.clear()
        _ROWS[key] = html
    return html  # already escaped: a SafeString from the template


# A flag in words (audit/flag_words.py): {{ f|flag_code }}, {{ f.status|status_word }}
@register.filter
def flag_code(flag) -> str:
    from ..flag_words import code_word

    return code_word(flag.code, flag.kind)


@register.filter
def flag_text(flag) -> str:
    from ..flag_words import flag_text as text

    return text(flag)


@register.filter
def severity_word(value) -> str:
    from tables.finding_words import severity_word as word

    return word(value)


@register.filter
def status_word(value) -> str:
    from ..flag_words import status_word as word

    return word(value)


@register.filter
def kind_word(value) -> str:
    from ..flag_words import kind_word as word

    return word(value)


@register.filter
def event_word(value) -> str:
    from ..flag_words import event_word as word

    return word(value)


@register.filter
def filter_word(value) -> str:
    from ..flag_words import filter_word as word

    return word(value)


@register.filter
def sanction_word(value) -> str:
    from ..flag_words import sanction_word as word

    return word(value)


@register.filter
def rule_word(value) -> str:
    from tables.finding_words import rule_word as word

    return word(value)
