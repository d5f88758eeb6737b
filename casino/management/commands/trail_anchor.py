"""Anchor the change log's head now (casino/anchors.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from casino.anchors import AnchorError, trail_anchor


class Command(BaseCommand):
    help = (
        "Write the change log's head (row id and digest) to TRAIL_ANCHOR_DIR, "
        "outside the database; verify_trail reads every anchor written."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reason", default="manual", help="why (kept in the file)")

    def handle(self, *args, reason: str, **options):
        try:
            anchor = trail_anchor(reason=reason)
        except AnchorError as exc:  # the chain under it does not hold: unsigned
            raise CommandError(str(exc)) from None
        if anchor is None:
            raise CommandError("the change log is empty: nothing to anchor")
        self.stdout.write(
            f"Anchored row {anchor.row} digest {anchor.hash} in {anchor.file}"
        )
