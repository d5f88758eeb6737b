"""Re-compute the change log's hash chain and name the first broken row."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from casino.trail import trail_verify


def _anchor(value: str) -> tuple[int, str]:
    row, _, digest = value.partition(":")
    if not row.isdigit() or len(digest) != 64:
        raise CommandError("--anchor: expected ROW_ID:DIGEST (64 hex characters)")
    return int(row), digest.lower()


class Command(BaseCommand):
    help = (
        "Verify the change log's hash chain. Exits 1 and names the first broken "
        "row; otherwise prints the head (row id and digest) to note as an anchor."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--anchor",
            help="ROW_ID:DIGEST noted earlier (e.g. printed in a report); the "
            "chain must still hold that digest at that row",
        )
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, anchor=None, **options):
        check = trail_verify(_anchor(anchor) if anchor else None)
        as_json = options["json"]
        if as_json:
            self.stdout.write(json.dumps(check.to_dict()))
        if not check.ok:
            raise CommandError(f"Trail broken at {check.problem}")
        if not as_json:
            self.stdout.write(
                f"Trail intact: {check.rows} rows; head row {check.head_id} "
                f"digest {check.head_hash}"
            )
