"""Exact banker / punter / tie counts and probabilities for a shoe: a table's
own house rules (--table), or the rules given as options.

    manage.py odds --table "Table 1"            # its rules in force today
    manage.py odds --table 3 --rules-version 2       # a given version
    manage.py odds --decks 8 --punto-banco
    manage.py odds --decks 6 --punter-five stand --banker-cell 3/9=stand \\
        --rate 0.05 --unit 0.10 --rounding half_even --covered 1025 --covered 2000

A cell the house prescribes is played as prescribed; a free cell is drawn
(audit/reports/odds.py says why). --covered prints the levy a banker win takes
on that covered amount under the rounding, and its expectation per coup.
"""

import json
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from audit.reports.odds import as_decimal, house_odds, levy
from tables.chemmy import PUNTO_BANCO_TABLEAU, STANDARD_TABLEAU, Tableau
from tables.models import HouseRules, Table, TableauVersion

ROUNDINGS = ("half_up", "half_even", "down")
CHOICES = ("free", "draw", "stand")


class Command(BaseCommand):
    help = (
        "Print the exact counts (over all ordered six-card sequences) and "
        "probabilities of banker win, punter win and tie, for a table's house "
        "rules or the rules given."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--table", help="A table (name or id): its house rules, every option below."
        )
        parser.add_argument(
            "--rules-version", type=int,
            help="With --table: this version of its rules (default: in force today).",
        )
        parser.add_argument("--decks", type=int, default=None, help="Default 6.")
        parser.add_argument(
            "--punto-banco",
            action="store_true",
            help="Punto banco banker table; the player draws on 0-5.",
        )
        parser.add_argument(
            "--tableau", help="A stored tableau version (default: chemmy standard)."
        )
        parser.add_argument(
            "--punter-five", choices=CHOICES, default=None,
            help="The punter's 5 as the house prescribes it (free: he draws).",
        )
        parser.add_argument(
            "--banker-cell", action="append", default=[], metavar="CELL=CHOICE",
            help="A banker's optional cell prescribed, e.g. 3/9=stand (repeatable).",
        )
        parser.add_argument(
            "--punter-stands-on-5", action="store_true",
            help="Same as --punter-five stand.",
        )
        parser.add_argument(
            "--banker-stands-optional", action="store_true",
            help="The banker stands in every optional cell (default: draws).",
        )
        parser.add_argument("--rate", default=None, help="Commission rate (0.05).")
        parser.add_argument("--unit", default=None, help="Rounding unit (0.10).")
        parser.add_argument("--rounding", choices=ROUNDINGS, default=None,
                            help="Rounding mode of the levy (half_up).")
        parser.add_argument(
            "--covered", action="append", default=[],
            help="A covered amount: its levy and expected levy per coup (repeatable).",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        rules = self._table_rules(o)
        r = self._resolve(o, rules)
        odds = house_odds(decks=r["decks"], tableau=r["tableau"],
                          punter_five=r["punter_five"],
                          banker_prescriptions=r["banker"])
        per_unit = odds.expected_commission_per_unit(r["rate"])
        levies = []
        for c in r["covered"]:
            taken = levy(c, rate=r["rate"], unit=r["unit"], rounding=r["rounding"])
            expected = odds.expected_levy(c, rate=r["rate"], unit=r["unit"],
                                          rounding=r["rounding"])
            levies.append((c, taken, expected))
        if o["json"]:
            out = odds.as_dict()
            out["table"] = rules.table.name if rules else None
            out["rules_version"] = rules.version if rules else None
            out["punter_five"] = r["punter_five"]
            out["banker_prescriptions"] = dict(sorted(r["banker"].items()))
            out["commission_rate"] = str(r["rate"])
            out["commission_unit"] = str(r["unit"])
            out["commission_rounding"] = r["rounding"]
            out["expected_commission_per_unit"] = str(as_decimal(per_unit))
            out["levies"] = [
                {"covered": str(c), "levy": str(t), "unrounded": str(r["rate"] * c),
                 "expected_per_coup": str(_dec(e))}
                for c, t, e in levies
            ]
            self.stdout.write(json.dumps(out, indent=2))
            return
        if rules:
            self.stdout.write(f"{rules.table.name}: house rules v{rules.version}")
        cells = ", ".join(f"{k} {v}" for k, v in sorted(r["banker"].items()))
        self.stdout.write(
            f"{odds.decks} decks, tableau {odds.tableau}, punter "
            f"{'draws' if odds.punter_draws_on_5 else 'stands'} on 5"
            f" ({'prescribed' if r['punter_five'] != 'free' else 'free: draws'}), "
            f"banker's optional cells {cells or 'free'}"
            + (" (the others: draws)" if cells else " (draws in them)")
        )
        for name in ("banker", "punter", "tie"):
            count = getattr(odds, name)
            p = getattr(odds, f"p_{name}")
            self.stdout.write(f"{name:>7} {count:>26,} {float(p):.10f}")
        self.stdout.write(f"{'total':>7} {odds.total:>26,}")
        self.stdout.write(
            f"expected commission per unit covered at {r['rate']}: "
            f"{as_decimal(per_unit, 6)} (before rounding)"
        )
        for c, taken, expected in levies:
            self.stdout.write(
                f"covered {c}: a banker win takes {taken} ({r['rate'] * c} rounded "
                f"to {r['unit']} {r['rounding'].replace('_', ' ')}); expected per "
                f"coup {_dec(expected):.6f}"
            )

    # -- the rules: a table's, overridden by any option given ----------------

    def _table_rules(self, o) -> HouseRules | None:
        if o["table"] is None:
            if o["rules_version"] is not None:
                raise CommandError("--rules-version needs --table")
            return None
        ref = o["table"]
        table = (Table.objects.filter(pk=int(ref)).first() if ref.isdigit()
                 else None) or Table.objects.filter(name=ref).first()
        if table is None:
            raise CommandError(f"unknown table {ref!r}")
        if o["rules_version"] is not None:
            rules = table.rule_versions.filter(version=o["rules_version"]).first()
            if rules is None:
                raise CommandError(f"table {table.name} has no rules version "
                                   f"{o['rules_version']}")
            return rules
        from django.utils import timezone

        from tables.services import gaming_day_for
        from tables.services.house import rules_in_force

        if table.rules is None:
            raise CommandError(f"table {table.name} has no house rules")
        day = gaming_day_for(timezone.now(), table.rules.gaming_day_cutoff)
        return rules_in_force(table, day) or table.rules

    def _resolve(self, o, rules: HouseRules | None) -> dict:
        decks = o["decks"] if o["decks"] is not None else (
            rules.decks if rules else 6)
        if not 1 <= decks <= 8:
            raise CommandError("--decks must be between 1 and 8")
        tableau = self._tableau(o, rules)
        punter_five = o["punter_five"] or (
            "stand" if o["punter_stands_on_5"] else
            (rules.punter_five if rules else "free"))
        banker = dict(rules.banker_prescriptions or {}) if rules else {}
        if o["banker_stands_optional"]:
            banker = {cell: "stand" for cell in _optional_cells(tableau)}
        for spec in o["banker_cell"]:
            cell, sep, choice = spec.partition("=")
            if not sep or choice not in CHOICES:
                raise CommandError(
                    f"--banker-cell {spec!r}: write CELL=CHOICE, e.g. 3/9=stand")
            banker[cell] = choice
        rate = _decimal(o["rate"], "rate", rules.commission_rate if rules else "0.05")
        unit = _decimal(o["unit"], "unit", rules.commission_unit if rules else "0.10")
        if rate < 0 or rate > 1:
            raise CommandError("--rate must be between 0 and 1")
        if unit <= 0 or unit.quantize(Decimal("0.01")) != unit:
            raise CommandError("--unit must be a positive multiple of 0.01")
        rounding = o["rounding"] or (rules.commission_rounding if rules else "half_up")
        covered = [_decimal(c, "covered", None) for c in o["covered"]]
        if any(c <= 0 or c.as_tuple().exponent < -2 for c in covered):
            raise CommandError("--covered must be a positive amount, 2 places at most")
        try:
            from tables.chemmy import Prescriptions

            Prescriptions(punter_five=punter_five,
                          banker=banker).check_against(tableau)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        return {"decks": decks, "tableau": tableau, "punter_five": punter_five,
                "banker": banker, "rate": rate, "unit": unit, "rounding": rounding,
                "covered": covered}

    def _tableau(self, o, rules: HouseRules | None) -> Tableau:
        if o["punto_banco"]:
            if o["tableau"]:
                raise CommandError("--punto-banco and --tableau exclude each other")
            return PUNTO_BANCO_TABLEAU
        if o["tableau"]:
            row = TableauVersion.objects.filter(version=o["tableau"]).first()
            if row is None:
                raise CommandError(f"unknown tableau {o['tableau']!r}")
            return row.as_engine()
        if rules is not None:
            return rules.tableau.as_engine()
        return STANDARD_TABLEAU


def _optional_cells(tableau: Tableau) -> list[str]:
    from tables.chemmy import Action, cell_key

    return [cell_key(total, third) for total in range(8)
            for third in (None, *range(10))
            if tableau.banker_action(total, third) is Action.OPTIONAL]


def _decimal(value, name: str, default) -> Decimal:
    if value is None:
        return Decimal(default)
    try:
        d = Decimal(value)
    except InvalidOperation:
        raise CommandError(f"--{name} must be a decimal such as 0.05") from None
    if not d.is_finite():
        raise CommandError(f"--{name} must be a decimal such as 0.05")
    return d


def _dec(f) -> Decimal:
    return Decimal(f.numerator) / Decimal(f.denominator)
