"""Re-audit a range of gaming days against the tableau in force (or a named one).

Splits the range into chunks that run in parallel on the Celery workers (a
chord); prints progress until the run ends (or returns at once with --no-wait).
"""

import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from audit.reports.models import ReauditRun, Status
from audit.reports.reaudit import DEFAULT_CHUNK_SIZE, reaudit_request
from tables.errors import ServiceError


class Command(BaseCommand):
    help = "Check a period's coups again against a tableau version, in chunks."

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="from_day", required=True,
                            help="First gaming day (YYYY-MM-DD).")
        parser.add_argument("--to", dest="to_day", required=True,
                            help="Last gaming day (YYYY-MM-DD).")
        parser.add_argument("--tableau", default="",
                            help="A tableau version (default: each table's current).")
        parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
        parser.add_argument("--user", default="",
                            help="Recorded as the requester (a username).")
        parser.add_argument("--no-wait", action="store_true")
        parser.add_argument("--timeout", type=float, default=3600)

    def handle(self, *args, from_day, to_day, tableau, chunk_size, user, no_wait,
               timeout, **options):
        actor = None
        if user:
            actor = get_user_model().objects.filter(username=user).first()
            if actor is None:
                raise CommandError(f"--user: no user {user!r}")
        try:
            run = reaudit_request(user=actor, from_day=from_day, to_day=to_day,
                                  tableau_version=tableau, chunk_size=chunk_size,
                                  device="manage.py reaudit")
        except ServiceError as exc:
            raise CommandError(f"{exc.field}: {exc.message}") from None
        self.stdout.write(f"re-audit #{run.pk}: {run.coups_expected} coups in "
                          f"{run.chunks_total} chunks")
        if no_wait:
            return
        deadline = time.monotonic() + timeout
        last = None
        while True:
            run = ReauditRun.objects.get(pk=run.pk)
            state = (run.status, run.chunks_done)
            if state != last:
                self.stdout.write(f"  {run.status}: {run.percent}% "
                                  f"({run.coups_checked} coups, {run.chunks_done}/"
                                  f"{run.chunks_total} chunks)")
                last = state
            if run.status in (Status.DONE, Status.FAILED):
                break
            if time.monotonic() > deadline:
                raise CommandError(f"re-audit #{run.pk} still {run.status} after "
                                   f"{timeout:.0f}s (it goes on in the workers)")
            time.sleep(0.5)
        self.stdout.write(
            f"re-audit #{run.pk} {run.status}: {run.coups_checked} coups, "
            f"{run.findings} findings under the new version, {run.findings_new} new, "
            f"{run.findings_cleared} cleared" + (f"; {run.error}" if run.error else "")
        )
        if run.status == Status.FAILED:
            raise CommandError(f"re-audit #{run.pk} failed: {run.error}")
