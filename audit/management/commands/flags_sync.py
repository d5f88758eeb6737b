"""Bring the review flags up to date with the findings (idempotent)."""

from django.core.management.base import BaseCommand

from audit.services import flags_sync


class Command(BaseCommand):
    help = "Raise flags for new findings, move or resolve those a correction changed."

    def handle(self, *args, **options):
        n = flags_sync()
        self.stdout.write(f"{n} flag(s) raised, moved or resolved.")
