"""`manage.py prove COUP`: one coup's proof, for the standalone verifier
(casino/prove.py)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from casino.prove import ProofUnavailable, coup_prove


class Command(BaseCommand):
    help = ("Write one coup's proof: its rows, the change-log rows that wrote "
            "them, their inclusion proofs to a checkpoint, the checkpoint's "
            "signature and its witnesses' cosignatures. Check it with "
            "`python tools/verify_evidence.py coup-proof FILE --log-key ... "
            "--witness-key ...`.")

    def add_arguments(self, parser):
        parser.add_argument("coup", type=int, help="the coup's id")
        parser.add_argument("--out", type=Path, help="the file (default: stdout)")

    def handle(self, *args, coup: int, out: Path | None = None, **options):
        try:
            proof = coup_prove(coup_id=coup)
        except ProofUnavailable as exc:
            raise CommandError(str(exc)) from exc
        text = json.dumps(proof, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)
        if out is None:
            self.stdout.write(text)
            return
        out.write_text(text + "\n", encoding="utf-8")
        self.stderr.write(f"coup {coup}: {len(text.encode()):,} bytes in {out}")
