"""House rules as versions (docs/rules.md, "House rules").

A change writes a new version with a reason; the old one stays. A version is
in force from the table's next session (or from a later gaming day the manager
names), never for a session already open and never for coups already played;
every coup keeps the version its session was opened under.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal, InvalidOperation

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from casino.bounds import check_start_day
from casino.changelog import log_action
from casino.continuity import guard, seal_check

from .. import chemmy
from ..errors import Invalid
from ..models import HouseRules, Table, TableauVersion

STANDARD_TABLEAU_VERSION = "chemmy-standard-1"

# name -> default: every rule a manager may set, as a new table gets it.
DEFAULTS: dict[str, object] = {
    "decks": 6,
    "commission_rate": Decimal("0.05"),
    "commission_unit": Decimal("0.10"),
    "commission_rounding": HouseRules.Rounding.HALF_UP.value,
    "minimum_banco": Decimal("100.00"),
    "maximum_bank": None,
    "tie_rule": HouseRules.Tie.STAY.value,
    "cover_rule": HouseRules.CoverRule.PARTIAL.value,
    "punter_five": HouseRules.Choice.FREE.value,
    "banker_prescriptions": None,
    "hold_on_error": False,
    "hold_warnings": None,
    "gaming_day_cutoff": 6,
    "false_draw_sanction": HouseRules.Sanction.NONE.value,
}
RULES = (*DEFAULTS, "tableau_version")


def house_rules_change(
    *,
    table: Table,
    user,
    reason: str,
    device: str = "",
    effective_from: date | None = None,
    **changes,
) -> HouseRules:
    """Write a new version of a table's house rules. Every rule not named keeps
    its value; a bad value is refused naming the rule and nothing is written."""
    unknown = set(changes) - set(RULES)
    if unknown:
        raise Invalid(sorted(unknown)[0], _("is not a house rule"))
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("reason", _("a change of house rules needs a reason"))
    with guard(user=user, device=device):
        table = Table.objects.select_for_update(no_key=True).get(pk=table.pk)
        current = table.rules
        seal_check(table, current)
        values = {k: getattr(current, k) if current else v for k, v in DEFAULTS.items()}
        tableau_name = changes.pop(
            "tableau_version",
            current.tableau.version if current else STANDARD_TABLEAU_VERSION,
        )
        # None means "keep" for every rule but the two that may be unset.
        values.update(
            {
                k: v
                for k, v in changes.items()
                if v is not None
                or k in ("maximum_bank", "banker_prescriptions", "hold_warnings")
            }
        )
        try:
            tableau = TableauVersion.objects.get(version=tableau_name)
        except TableauVersion.DoesNotExist:
            raise Invalid(
                "tableau_version",
                _("there is no tableau named “%(name)s”: choose one of the "
                  "tableaux on file") % {"name": tableau_name},
            ) from None
        seal_check(tableau)  # a version written through the app, never by hand
        values = validate_rules(values, tableau)
        if effective_from is not None:
            _check_effective_from(table, effective_from, values["gaming_day_cutoff"])
        rules = HouseRules.objects.create(
            table=table,
            version=(current.version + 1) if current else 1,
            tableau=tableau,
            effective_from=effective_from,
            created_by=user if user and user.is_authenticated else None,
            **values,
        )
        Table.objects.filter(pk=table.pk).update(rules=rules)
        table.rules = rules
        log_action(
            action="tables.house_rules.changed",
            user=user,
            device=device,
            obj=table,
            reason=reason,
            old=rules_dict(current) if current else None,
            new=rules_dict(rules),
            rows=[rules, table],
        )
    return rules


def _check_effective_from(table: Table, day: date, cutoff: int) -> None:
    from .facts import gaming_day_for

    if not isinstance(day, date):
        raise Invalid("effective_from", _("must be a date"))
    today = gaming_day_for(timezone.now(), cutoff)
    if day < today:
        raise Invalid(
            "effective_from",
            _("%(day)s is before the current gaming day (%(today)s): house rules "
              "are never changed for coups already played")
            % {"day": day, "today": today},
        )
    check_start_day("effective_from", day, today=today)


def rules_in_force(table: Table, gaming_day: date) -> HouseRules | None:
    """The version a session opened on ``gaming_day`` plays: the latest one
    whose first day has come."""
    return (
        HouseRules.objects.filter(table=table)
        .filter(Q(effective_from__isnull=True) | Q(effective_from__lte=gaming_day))
        .select_related("tableau")
        .order_by("-version")
        .first()
    )


def _decimal(value: object, field: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        raise Invalid(field, _("must be a decimal amount"))
    try:
        d = Decimal(value)
    except InvalidOperation:
        raise Invalid(
            field, _("“%(value)s” is not a decimal amount") % {"value": value}
        ) from None
    if not d.is_finite():
        raise Invalid(field, _("must be a finite amount"))
    return d


def _choice(values: dict, field: str, choices) -> None:
    if values[field] not in choices.values:
        raise Invalid(
            field,
            _("must be one of %(choices)s") % {"choices": ", ".join(choices.values)},
        )


def validate_rules(values: dict, tableau: TableauVersion) -> dict:
    """Check every rule; the first bad one is refused naming it."""
    decks = values["decks"]
    if isinstance(decks, bool) or not isinstance(decks, int) or not 1 <= decks <= 8:
        raise Invalid("decks", _("must be a whole number between 1 and 8"))
    rate = _decimal(values["commission_rate"], "commission_rate")
    if not Decimal("0") <= rate <= Decimal("0.5"):
        raise Invalid("commission_rate", _("must be between 0 and 0.5"))
    if rate.as_tuple().exponent < -4:
        raise Invalid("commission_rate", _("at most 4 decimal places"))
    unit = _decimal(values["commission_unit"], "commission_unit")
    if unit <= 0 or unit.quantize(Decimal("0.01")) != unit:
        raise Invalid("commission_unit", _("must be a positive multiple of 0.01"))
    if unit > Decimal("1000"):
        raise Invalid("commission_unit", _("must be at most 1000"))
    _choice(values, "commission_rounding", HouseRules.Rounding)
    minimum = _decimal(values["minimum_banco"], "minimum_banco")
    if minimum <= 0 or minimum.as_tuple().exponent < -2:
        raise Invalid(
            "minimum_banco", _("must be a positive amount with at most 2 places")
        )
    maximum = values["maximum_bank"]
    if maximum is not None:
        maximum = _decimal(maximum, "maximum_bank")
        if maximum.as_tuple().exponent < -2:
            raise Invalid("maximum_bank", _("at most 2 decimal places"))
        if maximum < minimum:
            raise Invalid(
                "maximum_bank",
                _("must be at least the minimum banco (%(minimum)s)")
                % {"minimum": minimum},
            )
    _choice(values, "tie_rule", HouseRules.Tie)
    _choice(values, "cover_rule", HouseRules.CoverRule)
    _choice(values, "punter_five", HouseRules.Choice)
    prescriptions = values["banker_prescriptions"] or None
    try:
        engine = chemmy.Prescriptions(
            punter_five=values["punter_five"], banker=prescriptions or {}
        )
        _check_cells(engine, tableau)
        engine.check_against(tableau.as_engine())
    except ValueError as exc:
        field = str(exc).partition(":")[0].split("[")[0]
        raise Invalid(field, str(exc)) from None
    if not isinstance(values["hold_on_error"], bool):
        raise Invalid("hold_on_error", _("must be true or false"))
    hold_warnings = values["hold_warnings"]
    if hold_warnings is not None:
        if not isinstance(hold_warnings, (list, tuple)) or not all(
            isinstance(c, str) for c in hold_warnings
        ):
            raise Invalid("hold_warnings", _("must be a list of finding codes"))
        unknown = sorted(set(hold_warnings) - set(HouseRules.HOLDABLE_WARNINGS))
        if unknown:
            raise Invalid(
                "hold_warnings",
                _("“%(code)s” is not a warning that may stop play (one of "
                  "%(codes)s; a critical finding always does)")
                % {"code": unknown[0],
                   "codes": ", ".join(HouseRules.HOLDABLE_WARNINGS)},
            )
        hold_warnings = sorted(set(hold_warnings)) or None
    cutoff = values["gaming_day_cutoff"]
    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or not 0 <= cutoff <= 23:
        raise Invalid("gaming_day_cutoff", _("must be an hour between 0 and 23"))
    _choice(values, "false_draw_sanction", HouseRules.Sanction)
    return {
        **values,
        "commission_rate": rate,
        "commission_unit": unit,
        "minimum_banco": minimum,
        "maximum_bank": maximum,
        # only what is prescribed, in a stable order; None when nothing is
        "banker_prescriptions": engine.to_dict()["banker"] or None,
        "hold_warnings": hold_warnings,
    }


def _check_cells(engine: chemmy.Prescriptions, tableau: TableauVersion) -> None:
    """A prescribed cell must be optional in the version's tableau: said in
    words (the engine's own check says it in English, for the record)."""
    grid = tableau.as_engine()
    for key in engine.banker:
        total, _slash, third = key.partition("/")
        column = None if third == "stood" else int(third)
        action = grid.banker_action(int(total), column)
        if action is not chemmy.Action.OPTIONAL:
            must = _("must draw") if action is chemmy.Action.DRAW else _("must stand")
            raise Invalid(
                "banker_prescriptions",
                _("%(cell)s is not an optional cell of tableau %(tableau)s (there "
                  "the banker %(must)s): set it back to free, or choose a tableau "
                  "where it is optional")
                % {"cell": key, "tableau": tableau.version, "must": must},
            )


def rules_dict(rules: HouseRules) -> dict:
    """A version as the change log and the API show it."""
    return {
        "version": rules.version,
        "decks": rules.decks,
        "commission_rate": rules.commission_rate,
        "commission_unit": rules.commission_unit,
        "commission_rounding": rules.commission_rounding,
        "minimum_banco": rules.minimum_banco,
        "maximum_bank": rules.maximum_bank,
        "tie_rule": rules.tie_rule,
        "cover_rule": rules.cover_rule,
        "punter_five": rules.punter_five,
        "banker_prescriptions": rules.banker_prescriptions or {},
        "hold_on_error": rules.hold_on_error,
        "hold_warnings": rules.hold_warnings or [],
        "tableau": rules.tableau.version,
        "gaming_day_cutoff": rules.gaming_day_cutoff,
        "false_draw_sanction": rules.false_draw_sanction,
        "effective_from": rules.effective_from,
    }
