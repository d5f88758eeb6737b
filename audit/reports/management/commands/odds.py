"""Exact banker / punter / tie counts and probabilities for a shoe."""

import json

from django.core.management.base import BaseCommand, CommandError

from audit.reports.odds import compute_odds
from tables.chemmy import PUNTO_BANCO_TABLEAU, Tableau
from tables.models import TableauVersion


class Command(BaseCommand):
    help = (
        "Print the exact counts (over all ordered six-card sequences) and "
        "probabilities of banker win, punter win and tie."
    )

    def add_arguments(self, parser):
        parser.add_argument("--decks", type=int, default=6)
        parser.add_argument(
            "--punto-banco",
            action="store_true",
            help="Punto banco banker table; the player draws on 0-5.",
        )
        parser.add_argument(
            "--tableau", help="A stored tableau version (default: chemmy standard)."
        )
        parser.add_argument(
            "--punter-stands-on-5", action="store_true",
            help="The punter stands on 5 (default: draws).",
        )
        parser.add_argument(
            "--banker-stands-optional", action="store_true",
            help="The banker stands in optional cells (default: draws).",
        )
        parser.add_argument("--rate", default="0.05", help="Commission rate.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        from decimal import Decimal, InvalidOperation

        if not 1 <= o["decks"] <= 8:
            raise CommandError("--decks must be between 1 and 8")
        try:
            rate = Decimal(o["rate"])
        except InvalidOperation:
            raise CommandError("--rate must be a decimal such as 0.05") from None
        tableau = self._tableau(o)
        odds = compute_odds(
            decks=o["decks"],
            tableau=tableau,
            punter_draws_on_5=not (o["punter_stands_on_5"]),
            banker_optional=not o["banker_stands_optional"],
        )
        per_unit = odds.expected_commission_per_unit(rate)
        if o["json"]:
            out = odds.as_dict()
            out["commission_rate"] = str(rate)
            out["expected_commission_per_unit"] = float(per_unit)
            self.stdout.write(json.dumps(out, indent=2))
            return
        self.stdout.write(
            f"{odds.decks} decks, tableau {odds.tableau}, punter "
            f"{'draws' if odds.punter_draws_on_5 else 'stands'} on 5"
        )
        for name in ("banker", "punter", "tie"):
            count = getattr(odds, name)
            p = getattr(odds, f"p_{name}")
            self.stdout.write(f"{name:>7} {count:>26,} {float(p):.10f}")
        self.stdout.write(f"{'total':>7} {odds.total:>26,}")
        self.stdout.write(
            f"expected commission per unit covered at {rate}: {float(per_unit):.6f}"
        )

    def _tableau(self, o) -> Tableau:
        if o["punto_banco"]:
            if o["tableau"]:
                raise CommandError("--punto-banco and --tableau exclude each other")
            return PUNTO_BANCO_TABLEAU
        if o["tableau"]:
            row = TableauVersion.objects.filter(version=o["tableau"]).first()
            if row is None:
                raise CommandError(f"unknown tableau {o['tableau']!r}")
            return row.as_engine()
        from tables.chemmy import STANDARD_TABLEAU

        return STANDARD_TABLEAU
