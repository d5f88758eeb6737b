"""Audit coups from JSON Lines, streaming: one verdict line out per line in.

    python manage.py audit_coups coups.jsonl
    cat coups.jsonl | python manage.py audit_coups -

Input:  {"id": ..., "punter": ["9H", "KD"], "banker": ["5C", "2S", "TD"]}
Output: {"id", "valid": true, "outcome", "punter_total", "banker_total", "findings"}
     or {"id", "valid": false, "error": "..."} for structurally broken input.
Memory stays flat: one line is read, judged and written at a time.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from tables.chemmy import STANDARD_TABLEAU, CoupError, evaluate
from tables.models import TableauVersion


def audit_line(line: str, tableau) -> dict:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return {"id": None, "valid": False, "error": f"line: not JSON ({exc.msg})"}
    if not isinstance(obj, dict):
        return {"id": None, "valid": False, "error": "line: expected a JSON object"}
    ident = obj.get("id")
    for side in ("punter", "banker"):
        if side not in obj:
            return {
                "id": ident,
                "valid": False,
                "error": f"{side}: this field is required",
            }
    try:
        verdict = evaluate(obj["punter"], obj["banker"], tableau=tableau)
    except CoupError as exc:
        return {"id": ident, "valid": False, "error": str(exc)}
    return {
        "id": ident,
        "valid": True,
        "outcome": verdict.outcome.value,
        "punter_total": verdict.punter_total,
        "banker_total": verdict.banker_total,
        "natural": verdict.natural,
        "punter_choice": verdict.punter_choice,
        "banker_choice": verdict.banker_choice,
        "findings": [f.to_dict() for f in verdict.findings],
    }


class Command(BaseCommand):
    help = "Audit coups given as JSON Lines (a file, or - for stdin); JSON Lines out."

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSON Lines file, or - for standard input")
        parser.add_argument(
            "--tableau",
            default=STANDARD_TABLEAU.version,
            help="Tableau version to audit against.",
        )

    def handle(self, *args, file, tableau, **options):
        if tableau == STANDARD_TABLEAU.version:
            table = STANDARD_TABLEAU
        else:
            row = TableauVersion.objects.filter(version=tableau).first()
            if row is None:
                raise CommandError(f"--tableau: unknown tableau version {tableau!r}")
            table = row.as_engine()
        try:
            source = sys.stdin if file == "-" else open(file, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"file: {exc}") from exc
        out = self.stdout
        dumps = json.dumps
        with source:
            for line in source:
                if not line.strip():
                    continue
                out.write(dumps(audit_line(line, table)))
