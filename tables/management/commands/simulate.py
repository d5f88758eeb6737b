"""Deal real shuffled shoes by the rules and record them through the services."""

import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from tables.simulation import simulate


class Command(BaseCommand):
    help = "Simulate tables and shoes, recorded through the same services as the API."

    def add_arguments(self, parser):
        parser.add_argument("--tables", type=int, default=1)
        parser.add_argument("--shoes", type=int, default=1)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--false-draw-rate", type=float, default=0.0)
        parser.add_argument(
            "--user",
            default="simulator",
            help="Recorded as the croupier (created if missing).",
        )

    def handle(self, *args, tables, shoes, seed, false_draw_rate, user, **options):
        if tables < 1 or shoes < 1:
            raise CommandError("--tables and --shoes must be at least 1")
        if not 0 <= false_draw_rate <= 1:
            raise CommandError("--false-draw-rate must be between 0 and 1")
        actor, _ = get_user_model().objects.get_or_create(username=user)
        start = time.perf_counter()
        report = simulate(
            user=actor,
            tables=tables,
            shoes=shoes,
            seed=seed,
            false_draw_rate=false_draw_rate,
        )
        elapsed = time.perf_counter() - start
        self.stdout.write(
            f"{report.tables} tables, {report.shoes} shoes, {report.coups} coups "
            f"in {elapsed:.2f}s ({report.coups / elapsed:,.0f} coups/s); "
            f"false draws injected {report.false_draws_injected}, "
            f"findings {report.findings}, commission {report.commission}"
        )
