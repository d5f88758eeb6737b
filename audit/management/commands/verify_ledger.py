"""Re-settle the coups from their cards and name every stored difference."""

from __future__ import annotations

import json
from datetime import date

from django.core.management.base import BaseCommand, CommandError

from audit.ledger_check import ledger_verify


def _day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{option}: expected a gaming day as YYYY-MM-DD, "
                           f"not {value!r}") from None


class Command(BaseCommand):
    help = (
        "Re-settle every coup of the gaming days [--from, --to] (default: all) "
        "from its cards, stakes and the house rules it was played under; "
        "re-compute banker turns, shoes, daily rollups and session cagnottes. "
        "Names each stored value that differs and exits 1; otherwise prints a "
        "one-line summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="from_day", metavar="YYYY-MM-DD",
                            help="first gaming day (default: the first)")
        parser.add_argument("--to", dest="to_day", metavar="YYYY-MM-DD",
                            help="last gaming day (default: the last)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, from_day=None, to_day=None, **options):
        start, end = _day(from_day, "--from"), _day(to_day, "--to")
        if start is not None or end is not None:
            start, end = start or date.min, end or date.max
            if end < start:
                raise CommandError("--to: must be on or after --from")
        check = ledger_verify(from_day=start, to_day=end)
        if options["json"]:
            self.stdout.write(json.dumps(check.to_dict()))
        else:
            for difference in check.differences:
                self.stdout.write(difference.text)
            if check.more:
                self.stdout.write(f"... and {check.more} more differences")
        if not check.ok:
            n = len(check.differences) + check.more
            raise CommandError(f"Ledger differs: {n} difference"
                               f"{'s' if n != 1 else ''} ({check.summary})")
        if not options["json"]:
            self.stdout.write(f"Ledger re-settled: {check.summary}: no difference")
