"""Deal real shuffled shoes by the rules and record them through the services."""

import time
from datetime import date

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from casino.roles import CROUPIER
from tables.sim_patterns import injection_parse
from tables.simulation import simulate

INJECT_HELP = (
    "Plant a pattern for the surveillance (repeatable): croupier-false-draw=3 "
    "(one croupier breaks the rules 3x as often as the floor), banker-win=0.52 "
    "(player card P0101 wins 52%% of the coups he banks), "
    "table-banker-share=0.42@2026-11-20 (the last table's banker wins fall to "
    "42%% of its coups from that gaming day), short-shoe=9x4 (table 1's first "
    "shoe dealt short of four 9s, closed with its true count)."
)


class Command(BaseCommand):
    help = "Simulate tables and shoes, recorded through the same services as the API."

    def add_arguments(self, parser):
        parser.add_argument("--tables", type=int, default=1)
        parser.add_argument("--shoes", type=int, default=1, help="per table and day")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--false-draw-rate", type=float, default=0.0)
        parser.add_argument(
            "--user",
            default="simulator",
            help="Opens the sessions; the croupier too with --croupiers 1 "
            "(created if missing).",
        )
        parser.add_argument(
            "--croupiers",
            type=int,
            default=None,
            help="How many croupiers take the tables in turn, shoe by shoe "
            "(users sim-croupier-1..N, created if missing; default 1, or 4 "
            "with croupier-false-draw).",
        )
        parser.add_argument(
            "--days", type=int, default=1, help="gaming days to play, one after another"
        )
        parser.add_argument(
            "--start",
            default=None,
            help="the first gaming day (YYYY-MM-DD); default: today, or with "
            "--days, the days up to today",
        )
        parser.add_argument("--inject", action="append", default=[], help=INJECT_HELP)

    def handle(self, *args, tables, shoes, seed, false_draw_rate, user, **options):
        if tables < 1 or shoes < 1 or options["days"] < 1:
            raise CommandError("--tables, --shoes and --days must be at least 1")
        if not 0 <= false_draw_rate <= 1:
            raise CommandError("--false-draw-rate must be between 0 and 1")
        try:
            inject = injection_parse(options["inject"])
            start = date.fromisoformat(options["start"]) if options["start"] else None
        except ValueError as exc:
            raise CommandError(f"--inject/--start: {exc}") from None
        n = options["croupiers"]
        if n is None:
            n = 4 if inject.croupier_false_draw is not None else 1
        if not 1 <= n <= 50:
            raise CommandError("--croupiers must be between 1 and 50")
        users = get_user_model().objects
        actor, _ = users.get_or_create(username=user)
        croupiers = [actor]
        if n > 1:
            group = Group.objects.get(name=CROUPIER)
            croupiers = []
            for i in range(1, n + 1):
                c, _ = users.get_or_create(username=f"sim-croupier-{i}")
                c.groups.add(group)
                croupiers.append(c)
        begin = time.perf_counter()
        try:
            report = simulate(
                user=actor,
                tables=tables,
                shoes=shoes,
                seed=seed,
                false_draw_rate=false_draw_rate,
                croupiers=croupiers,
                inject=inject,
                days=options["days"],
                start=start,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        elapsed = time.perf_counter() - begin
        self.stdout.write(
            f"{report.tables} tables, {report.shoes} shoes, {report.coups} coups "
            f"in {elapsed:.2f}s ({report.coups / elapsed:,.0f} coups/s); "
            f"false draws injected {report.false_draws_injected}, "
            f"findings {report.findings}, shoe findings {report.shoe_findings}, "
            f"commission {report.commission}"
        )
        for name, what in report.injected.items():
            self.stdout.write(f"injected {name}: {what}")
