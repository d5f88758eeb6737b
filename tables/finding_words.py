"""A coup's finding in the reader's language, as the tablet words it.

The engine stores each finding's message in English (tables/chemmy: the
record is the same whoever reads it). A page shows it in the reader's
language from the finding's code and detail, with the very sentences the
tablet's script uses (js_strings in tables/tablet/state.py, findingText() in
static/tablet/coup.js): in English they are word for word the stored
message (a test holds them together), but for the card, written as the pad
labels it ("K♥"; "R♥" in French) rather than by its code ("KH"). A finding
this module does not know is shown as stored.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext as _

from .cards import card_label


def _false_draw(side: str, d: Mapping) -> str | None:
    drew = d.get("actual") == "draw"
    if side == "punter":
        text = (
            _("Punter drew on {p2}: the rule requires standing.")
            if drew
            else _("Punter stood on {p2}: the rule requires a draw.")
        )
        return text.format(p2=d.get("punter_total"))
    if d.get("punter_third") is None:
        text = (
            _(
                "Banker drew on {b2} with the punter standing: "
                "the tableau requires standing."
            )
            if drew
            else _(
                "Banker stood on {b2} with the punter standing: "
                "the tableau requires a draw."
            )
        )
    else:
        text = (
            _("Banker drew on {b2} against a {third}: the tableau requires standing.")
            if drew
            else _(
                "Banker stood on {b2} against a {third}: the tableau requires a draw."
            )
        )
    return text.format(b2=d.get("banker_total"), third=d.get("punter_third"))


def _house_choice(side: str, d: Mapping) -> str | None:
    """An optional cell played against the house's prescription
    (tables/chemmy/house.py words it in English, the tablet as here)."""
    drew = d.get("actual") == "draw"
    if side == "punter":
        text = (
            _("Punter drew on {p2}: this house prescribes standing.")
            if drew
            else _("Punter stood on {p2}: this house prescribes a draw.")
        )
        return text.format(p2=d.get("punter_total"))
    if d.get("punter_third") is None:
        text = (
            _(
                "Banker drew on {b2} with the punter standing: "
                "this house prescribes standing."
            )
            if drew
            else _(
                "Banker stood on {b2} with the punter standing: "
                "this house prescribes a draw."
            )
        )
    else:
        text = (
            _("Banker drew on {b2} against a {third}: this house prescribes standing.")
            if drew
            else _(
                "Banker stood on {b2} against a {third}: this house prescribes a draw."
            )
        )
    return text.format(b2=d.get("banker_total"), third=d.get("punter_third"))


def _after_natural(side: str, d: Mapping, coup) -> str | None:
    natural = d.get("natural")
    if coup is None or natural not in ("punter", "banker"):
        return None
    total = coup.punter_total if natural == "punter" else coup.banker_total
    texts = {
        ("punter", "punter"): _(
            "Punter was dealt a third card ({card}) after the punter's natural "
            "{total}: it does not count."
        ),
        ("punter", "banker"): _(
            "Punter was dealt a third card ({card}) after the banker's natural "
            "{total}: it does not count."
        ),
        ("banker", "punter"): _(
            "Banker was dealt a third card ({card}) after the punter's natural "
            "{total}: it does not count."
        ),
        ("banker", "banker"): _(
            "Banker was dealt a third card ({card}) after the banker's natural "
            "{total}: it does not count."
        ),
    }
    text = texts.get((side, natural))
    if text is None:
        return None
    return text.format(card=card_label(str(d.get("card", ""))), total=total)


def finding_text(finding, coup=None) -> str:
    """The finding (a Finding row) in the active language; `coup`, the
    revision it belongs to, gives a natural's total."""
    detail = finding.detail or {}
    text = None
    try:
        if finding.code == "false_draw":
            text = _false_draw(finding.side, detail)
        elif finding.code == "house_choice":
            text = _house_choice(finding.side, detail)
        elif finding.code == "draw_after_natural":
            text = _after_natural(finding.side, detail, coup)
    except (KeyError, TypeError, ValueError):  # an older detail's shape
        text = None
    return text or finding.message


def side_word(value: str) -> str:
    """A stored side ("punter", "banker", a natural's) as a word."""
    words = {"punter": _("punter"), "banker": _("banker")}
    return words.get(value, value)


def choice_word(value: str) -> str:
    """A stored choice at an optional cell ("draw", "stand") as a word."""
    words = {"draw": _("drew"), "stand": _("stood")}
    return words.get(value, value)


def announcement_word(value: str) -> str:
    """A stake's stored announcement ("banco_solo"...) as the tablet's button
    says it; none is a dash."""
    words = {
        "none": "—",
        "suivi": _("Suivi"),
        "banco_solo": _("Banco solo"),
        "banco_deux": _("Banco deux"),
        "banco_avec": _("Banco avec"),
    }
    return words.get(value, value)
