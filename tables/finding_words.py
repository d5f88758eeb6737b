"""A coup's finding in the reader's language, as the tablet words it.

The engine stores each finding's message in English (tables/chemmy: the
record is the same whoever reads it). A page shows it in the reader's
language from the finding's code and detail, with the very sentences the
tablet's script uses (js_strings in tables/tablet/state.py, findingText() in
static/tablet/coup/words.js): in English they are word for word the stored
message (a test holds them together), but for the card, written as the pad
labels it ("K♥"; "R♥" in French) rather than by its code ("KH"). A finding
this module does not know is shown as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext_lazy

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


def _amount(value) -> str:
    """An amount as the tablet shows one (its money() in coup/words.js): grouped,
    in the reader's language, cents only when there are any."""
    d = Decimal(str(value))
    return number_format(d, decimal_pos=0 if d == d.to_integral_value() else 2,
                         use_l10n=True, force_grouping=True)


def _bank_mismatch(d: Mapping) -> str:
    return _(
        "The croupier declared a bank of {declared}; the bank carried forward "
        "is {carried}."
    ).format(declared=_amount(d["declared_bank"]),
             carried=_amount(d["carried_forward"]))


def _cagnotte_variance(d: Mapping) -> str:
    return _(
        "The cagnotte counted {counted}; the commission computed is {computed}."
    ).format(counted=_amount(d["counted"]), computed=_amount(d["computed"]))


def _below_seven(d: Mapping) -> str:
    left = int(d["cards_left"])
    return ngettext(
        "The coup began with {left} card left in the shoe; at least 7 are "
        "required.",
        "The coup began with {left} cards left in the shoe; at least 7 are "
        "required.",
        left,
    ).format(left=left)


def _card_count(d: Mapping) -> str:
    return _(
        "{card} has been seen {count} times in a {decks}-deck shoe: at most "
        "{decks} can be in it."
    ).format(card=card_label(str(d["card"])), count=d["count"], decks=d["decks"])


def _shoe_count(d: Mapping) -> str:
    difference = int(d["difference"])
    text = (
        _(
            "The shoe holds {expected} cards; {dealt} dealt, {burned} burned and "
            "{left} counted left make {total}: {n} more."
        )
        if difference > 0
        else _(
            "The shoe holds {expected} cards; {dealt} dealt, {burned} burned and "
            "{left} counted left make {total}: {n} fewer."
        )
    )
    dealt, burned, left = int(d["dealt"]), int(d["burned"]), int(d["left"])
    return text.format(expected=d["expected"], dealt=dealt, burned=burned, left=left,
                       total=dealt + burned + left, n=abs(difference))


# code -> the sentence, from the finding's detail alone
_BY_DETAIL = {
    "bank_mismatch": _bank_mismatch,
    "cagnotte_variance": _cagnotte_variance,
    "deal_below_seven": _below_seven,
    "card_count_exceeded": _card_count,
    "shoe_count": _shoe_count,
}


def finding_text(finding, coup=None) -> str:
    """The finding (a Finding or ShoeFinding row) in the active language;
    `coup`, the revision it belongs to, gives a natural's total."""
    detail = finding.detail or {}
    side = getattr(finding, "side", "")
    text = None
    try:
        if finding.code == "false_draw":
            text = _false_draw(side, detail)
        elif finding.code == "house_choice":
            text = _house_choice(side, detail)
        elif finding.code == "draw_after_natural":
            text = _after_natural(side, detail, coup)
        elif finding.code in _BY_DETAIL:
            text = _BY_DETAIL[finding.code](detail)
    except (KeyError, TypeError, ValueError, ArithmeticError):  # an older shape
        text = None
    return text or finding.message


# A finding's code as a person reads it (the queue, the flag page, the
# tablet, the reports); the code itself stays where a machine reads it (the
# API, a CSV's code column). docs/rules.md, "Findings".
CODE_WORDS = {
    "false_draw": gettext_lazy("false draw"),
    "house_choice": gettext_lazy("house rule not followed"),
    "draw_after_natural": gettext_lazy("card after a natural"),
    "deal_below_seven": gettext_lazy("below 7 cards"),
    "card_count_exceeded": gettext_lazy("card seen too often"),
    "shoe_count": gettext_lazy("shoe count differs"),
    "bank_mismatch": gettext_lazy("bank mismatch"),
    "cagnotte_variance": gettext_lazy("cagnotte variance"),
}
SEVERITY_WORDS = {
    "warning": pgettext_lazy("severity", "warning"),
    "critical": pgettext_lazy("severity", "critical"),
}


def code_word(code: str) -> str:
    """"false_draw" -> "false draw" ("faux tirage"); a code this table does
    not know, with its underscores as spaces."""
    word = CODE_WORDS.get(code)
    return str(word) if word is not None else str(code).replace("_", " ")


def severity_word(value: str) -> str:
    word = SEVERITY_WORDS.get(value)
    return str(word) if word is not None else str(value)


def side_word(value: str) -> str:
    """A stored side ("punter", "banker", a natural's) as a word."""
    words = {"punter": _("punter"), "banker": _("banker")}
    return words.get(value, value)


def rule_word(value: str) -> str:
    """What a rule requires or the tableau's letter ("draw", "D"...) as words."""
    words = {"draw": _("draw"), "stand": _("stand"), "D": _("must draw"),
             "S": _("must stand"), "O": _("may choose")}
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
