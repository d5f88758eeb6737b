"""Verify the change log's keyed chain, the anchors on file and every ledger
row against the trail; name the first thing that does not hold."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from casino.trail import trail_verify
from casino.witness import witness_compare, witnesses_push


def _anchor(value: str) -> tuple[int, str]:
    row, _, digest = value.partition(":")
    if not row.isdigit() or len(digest) != 64:
        raise CommandError("--anchor: expected ROW_ID:DIGEST (64 hex characters)")
    return int(row), digest.lower()


class Command(BaseCommand):
    help = (
        "Verify the change log: every row's link and keyed digest (TRAIL_KEY, "
        "TRAIL_OLD_KEYS), every anchor in TRAIL_ANCHOR_DIR (a deleted tail is "
        "caught), and every ledger row (coups, stakes, findings, turns, shoes, "
        "house rules, counts, attestations, decisions) against the digest its "
        "trail row holds. Exits 1 and names the first problem; otherwise prints "
        "the head (row id and digest)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--anchor",
            help="ROW_ID:DIGEST noted elsewhere (e.g. on a printed report); the "
            "chain must still hold that digest at that row",
        )
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument(
            "--ask-witnesses", action="store_true",
            help="first push the latest checkpoint to every witness (WITNESS_URLS): "
            "one that holds more than the database says so now",
        )

    def handle(self, *args, anchor=None, **options):
        check = trail_verify(_anchor(anchor) if anchor else None)
        as_json = options["json"]
        if options.get("ask_witnesses"):
            witnesses_push()
        # the database against the latest checkpoint each witness cosigned:
        # a shorter or forked chain is named with the witness's numbers
        found = witness_compare(full=True)
        if found.problems:
            from dataclasses import replace

            problems = (*found.problems, *((check.problem,) if check.problem else ()),
                        *check.problems)
            check = replace(check, problem=found.problems[0], problems=problems[:100])
        if as_json:
            self.stdout.write(json.dumps(check.to_dict()))
        if not check.ok:
            more = len(check.problems) - 1
            tail = f" (and {more} more problems)" if more > 0 else ""
            raise CommandError(f"Trail broken at {check.problem}{tail}")
        if not as_json:
            self.stdout.write(
                f"Trail intact: {check.rows} rows; head row {check.head_id} "
                f"digest {check.head_hash}; {check.ledger_rows} ledger rows match; "
                f"anchors checked: {check.anchors}"
            )
