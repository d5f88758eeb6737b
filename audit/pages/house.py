"""House rules on the floor (docs/rules.md, "House rules"): every table's
rules in force, a table's versions, a manager's new version; releasing a shoe
held by a critical finding (a pit boss, with a reason)."""

from __future__ import annotations

from datetime import date

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from casino.access import route_page
from casino.models import ChangeLog
from casino.roles import has_capability
from tables.api.views import device_of
from tables.chemmy import cell_key
from tables.errors import ServiceError
from tables.finding_words import code_word
from tables.models import HouseRules, Shoe, Table, TableauVersion
from tables.services.floor import gaming_day_for
from tables.services.holds import shoe_release
from tables.services.house import house_rules_change, rules_dict, rules_in_force

CHOICE_FIELDS = ("commission_rounding", "tie_rule", "cover_rule", "punter_five",
                 "false_draw_sanction")
TEXT_FIELDS = ("commission_rate", "commission_unit", "minimum_banco", "maximum_bank",
               "decks", "gaming_day_cutoff", "tableau_version")


# House rule "hold on error": the warnings a house may let stop play too
# (HouseRules.hold_warnings), as the page names them.
HOLD_WARNINGS = {
    "false_draw": gettext_lazy("a false draw (a card drawn or refused against the "
                               "punter's rule or the tableau)"),
    "house_choice": gettext_lazy("an optional cell played against the house's "
                                 "prescription"),
    "draw_after_natural": gettext_lazy("a third card dealt after a natural"),
    "deal_below_seven": gettext_lazy("a coup begun with fewer than 7 cards in the "
                                     "shoe"),
}


def _in_force(table: Table) -> HouseRules | None:
    session = table.sessions.filter(closed_at__isnull=True).first()
    if session is not None:
        return session.house_rules
    return rules_in_force(table, gaming_day_for(timezone.now(),
                                                table.rules.gaming_day_cutoff))


@route_page
def rules_index(request):
    tables = Table.objects.select_related("rules__tableau").order_by("name")
    rows = [{"table": t, "in_force": _in_force(t), "latest": t.rules} for t in tables]
    held = (Shoe.objects.filter(held_by_seq__isnull=False, closed_at__isnull=True)
            .select_related("session__table"))
    return render(request, "audit/rules_index.html", {
        "rows": rows, "held": held,
        "may_release": has_capability(request.user, "shoe.release"),
    })


def optional_cells(rules: HouseRules) -> list[dict]:
    """The optional cells of the version's tableau, each with its prescription."""
    tableau = rules.tableau.as_engine()
    prescribed = rules.banker_prescriptions or {}
    cells = []
    for total in range(8):
        for third in [None, *range(10)]:
            if tableau.banker_action(total, third).value == "O":
                key = cell_key(total, third)
                cells.append({"key": key, "total": total, "third": third,
                              "value": prescribed.get(key, "free")})
    return cells


def _versions(table: Table) -> list[dict]:
    rows = list(HouseRules.objects.filter(table=table)
                .select_related("tableau", "created_by").order_by("-version"))
    reasons = {
        log.new.get("version"): log.reason
        for log in ChangeLog.objects.filter(
            action="tables.house_rules.changed", object_type="tables.table",
            object_id=str(table.pk))
        if isinstance(log.new, dict)
    }
    return [{"rules": r, "reason": reasons.get(r.version, ""),
             "lines": _rules_lines(r),
             "from": (_("from %(day)s") % {"day": r.effective_from.isoformat()}
                      if r.effective_from else _("from the table's next session"))}
            for r in rows]


def _rules_lines(r: HouseRules) -> list[tuple[str, str]]:
    """A version's rules as the versions column lists them: one (name, value)
    a line, in words (issue 24, item 4: the column read as one crammed run)."""
    commission = _("%(rate)s, rounded to %(unit)s %(rounding)s") % {
        "rate": r.commission_rate, "unit": r.commission_unit,
        "rounding": r.get_commission_rounding_display()}
    lines = [
        (_("Commission"), commission),
        (_("Decks"), str(r.decks)),
        (_("Minimum banco"), str(r.minimum_banco)),
    ]
    if r.maximum_bank is not None:
        lines.append((_("Maximum bank"), str(r.maximum_bank)))
    lines += [
        (_("Cover"), r.get_cover_rule_display()),
        (_("On a tie"), r.get_tie_rule_display()),
        (_("Tableau"), r.tableau.version),
    ]
    if r.punter_five != HouseRules.Choice.FREE:
        lines.append((_("The punter on 5"), r.get_punter_five_display()))
    for key, value in (r.banker_prescriptions or {}).items():
        total, _slash, third = key.partition("/")
        where = (_("The banker on %(b)s, the punter standing") % {"b": total}
                 if third == "stood" else
                 _("The banker on %(b)s against a %(t)s") % {"b": total, "t": third})
        lines.append((where, str(dict(HouseRules.Choice.choices).get(value, value))))
    if r.hold_on_error:
        holds = ", ".join(code_word(c) for c in r.hold_warnings or ())
        lines.append((_("Hold on error"), _("critical findings") + (
            ", " + holds if holds else "")))
    if r.false_draw_sanction != HouseRules.Sanction.NONE:
        lines.append((_("False-draw sanction"), r.get_false_draw_sanction_display()))
    lines.append((_("Gaming day from"), f"{r.gaming_day_cutoff}:00"))
    return lines


# The form's fields as its labels name them: an error says the field in words
# (issue 24, item 4), in the reader's language.
FIELD_LABELS = {
    "commission_rate": gettext_lazy("Commission rate"),
    "commission_unit": gettext_lazy("Rounded to"),
    "commission_rounding": gettext_lazy("Rounding"),
    "minimum_banco": gettext_lazy("Minimum banco"),
    "maximum_bank": gettext_lazy("Maximum bank (empty: none)"),
    "cover_rule": gettext_lazy("A stake larger than what is left of the bank"),
    "tie_rule": gettext_lazy("On a tie"),
    "decks": gettext_lazy("Decks"),
    "punter_five": gettext_lazy("The punter on 5"),
    "banker_prescriptions": gettext_lazy("The banker's optional cells"),
    "hold_on_error": gettext_lazy("Hold on error"),
    "hold_warnings": gettext_lazy("With hold on error, these warnings stop play "
                                  "too"),
    "false_draw_sanction": gettext_lazy("False-draw sanction"),
    "gaming_day_cutoff": gettext_lazy("The gaming day starts at (hour)"),
    "tableau_version": gettext_lazy("Tableau"),
    "effective_from": gettext_lazy("From (empty: the next session)"),
    "reason": gettext_lazy("Reason"),
}


def _shown(latest: HouseRules, post) -> dict:
    """What each field of the form shows: the manager's submitted values after
    a refusal (nothing he chose is lost, issue 24 item 4), else the latest
    version's (and no day, no reason: those are the new version's own)."""
    current = {k: "" if v is None else str(v) for k, v in rules_dict(latest).items()}
    current.update(tableau_version=latest.tableau.version, effective_from="",
                   reason="")
    shown = {name: post[name] if post is not None and name in post else current[name]
             for name in (*CHOICE_FIELDS, *TEXT_FIELDS, "effective_from", "reason")}
    if post is None:
        shown["hold_on_error"] = latest.hold_on_error
        shown["hold_warnings"] = set(latest.hold_warnings or ())
    else:  # a box left unticked is absent from the form's post
        shown["hold_on_error"] = post.get("hold_on_error") == "on"
        shown["hold_warnings"] = (set(post.getlist("hold_warnings"))
                                  if "hold_warnings_shown" in post
                                  else set(latest.hold_warnings or ()))
    return shown


def _page(request, table: Table, *, post=None, error=None, status=200):
    latest = table.rules
    shown = _shown(latest, post)
    cells = optional_cells(latest)
    if post is not None:
        for cell in cells:
            cell["value"] = post.get(f"cell:{cell['key']}", cell["value"])
    tableaux = list(TableauVersion.objects.order_by("created_at", "id")
                    .values_list("version", "description"))
    return render(request, "audit/table_rules.html", {
        "table": table, "latest": latest, "in_force": _in_force(table),
        "versions": _versions(table), "cells": cells,
        "values": shown, "error": error,
        "error_label": FIELD_LABELS.get(error.field, error.field) if error else "",
        "tableaux": tableaux,
        "hold_warnings": [
            {"code": code, "label": label, "checked": code in shown["hold_warnings"]}
            for code, label in HOLD_WARNINGS.items()
        ],
        "choices": {
            "commission_rounding": HouseRules.Rounding.choices,
            "tie_rule": HouseRules.Tie.choices,
            "cover_rule": HouseRules.CoverRule.choices,
            "punter_five": HouseRules.Choice.choices,
            "false_draw_sanction": HouseRules.Sanction.choices,
            "cell": HouseRules.Choice.choices,
        },
        "may_change": has_capability(request.user, "table.manage"),
        "today": gaming_day_for(timezone.now(), latest.gaming_day_cutoff),
    }, status=status)


@route_page
def table_rules(request, pk: int):
    table = get_object_or_404(Table.objects.select_related("rules__tableau"), pk=pk)
    if request.method != "POST":
        return _page(request, table)
    post = request.POST
    try:
        changes = _changes(post, table.rules)
        effective = (post.get("effective_from") or "").strip()
        rules = house_rules_change(
            table=table, user=request.user, device=device_of(request),
            reason=post.get("reason", ""),
            effective_from=_day(effective) if effective else None, **changes)
    except ServiceError as exc:
        return _page(request, table, post=post, error=exc, status=exc.status)
    when = (_("from %(day)s") % {"day": rules.effective_from} if rules.effective_from
            else _("from the table's next session"))
    messages.success(request, _("Version %(v)s of %(table)s's house rules, in force "
                                "%(when)s.") % {"v": rules.version, "table": table.name,
                                                "when": when})
    return redirect("floor:table-rules", table.pk)


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ServiceError("effective_from", _("a date such as 2027-01-31")) from None


AMOUNT_EXAMPLES = {"commission_rate": "0.05", "commission_unit": "0.10"}


def _changes(post, current: HouseRules) -> dict:
    """The form's values as the service takes them: only what changed."""
    from decimal import Decimal, InvalidOperation

    out: dict = {}
    for name in CHOICE_FIELDS:
        if name in post:
            out[name] = post[name]
    for name in TEXT_FIELDS:
        if name not in post:
            continue
        raw = post[name].strip()
        if name == "maximum_bank" and raw == "":
            out[name] = None
            continue
        if name in ("decks", "gaming_day_cutoff"):
            if not raw.isdigit():
                raise ServiceError(name, _("a whole number"))
            out[name] = int(raw)
        elif name == "tableau_version":
            out[name] = raw
        else:
            try:
                out[name] = Decimal(raw)
            except InvalidOperation:
                raise ServiceError(name, _("an amount such as %(example)s") % {
                    "example": AMOUNT_EXAMPLES.get(name, "100.00")}) from None
    out["hold_on_error"] = post.get("hold_on_error") == "on"
    if "hold_warnings_shown" in post:  # the form's boxes, ticked or not
        out["hold_warnings"] = post.getlist("hold_warnings") or None
    cells = {key[5:]: value for key, value in post.items() if key.startswith("cell:")}
    if cells or "punter_five" in post:
        out["banker_prescriptions"] = {k: v for k, v in cells.items() if v != "free"}
    return out


@require_POST
@route_page
def release(request, pk: int):
    shoe = get_object_or_404(Shoe.objects.select_related("session__table"), pk=pk)
    try:
        shoe_release(shoe=shoe, user=request.user, device=device_of(request),
                     reason=request.POST.get("reason", ""))
    except ServiceError as exc:
        messages.error(request, f"{shoe.session.table.name}: {exc.message}")
    else:
        messages.success(request, _("%(table)s: the shoe is released; play goes on.")
                         % {"table": shoe.session.table.name})
    return redirect("floor:rules")
