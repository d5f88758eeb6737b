"""One look of the live surveillance at the open gaming day (issue 38)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Look once at the gaming days still being dealt (open sessions): the "
        "croupiers', bankers' and tables' always-valid tests, each subject "
        "that crossed raised once into the review queue. What beat's "
        "audit.surveillance_live task does every SURVEILLANCE_LIVE_SECONDS; "
        "for the embedded set-up (no beat, eager Celery). Prints what it did "
        "as JSON."
    )

    def handle(self, *args, **options):
        from audit.surveillance.live import live_look

        self.stdout.write(json.dumps(live_look()))
