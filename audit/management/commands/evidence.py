"""Write a period's evidence bundle (audit/evidence/build.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from audit.evidence.build import EvidenceError, evidence_build
from audit.reports.services import check_period
from casino.anchors import AnchorError
from tables.errors import ServiceError
from tables.models import Table


class Command(BaseCommand):
    help = (
        "Write the evidence bundle of the gaming days [--from, --to]: the "
        "period's ledger rows, the change-log segment that wrote them, the "
        "signed anchors closing it and the commission report with its signed "
        "stamp, for tools/verify_evidence.py."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="from_day", required=True,
                            metavar="YYYY-MM-DD")
        parser.add_argument("--to", dest="to_day", required=True,
                            metavar="YYYY-MM-DD")
        parser.add_argument("--table", action="append", default=[],
                            help="a table's name or id (repeat; default: all)")
        parser.add_argument("--out", required=True, help="the bundle to write")

    def handle(self, *args, from_day, to_day, table, out, **options):
        try:
            start, end = check_period(from_day, to_day, what="a bundle")
        except ServiceError as exc:
            flag = {"from_day": "--from", "to_day": "--to"}.get(exc.field, exc.field)
            raise CommandError(f"{flag}: {exc.message}") from None
        ids = []
        for name in table:
            found = (Table.objects.filter(pk=int(name)) if name.isdigit()
                     else Table.objects.filter(name=name)).values_list("pk", flat=True)
            if not found:
                raise CommandError(f"--table: no table {name!r}")
            ids.append(found[0])
        path = Path(out)
        if not path.parent.is_dir():
            raise CommandError(f"--out: no folder {path.parent}")
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            manifest = evidence_build(from_day=start, to_day=end, table_ids=ids,
                                      path=tmp)
        except (EvidenceError, LookupError, AnchorError) as exc:
            tmp.unlink(missing_ok=True)
            raise CommandError(str(exc)) from None
        tmp.replace(path)
        parts = manifest["parts"]
        self.stdout.write(
            f"{path}: gaming days {start} to {end}, "
            f"{parts['ledger.jsonl']['lines']} ledger rows, "
            f"{parts['log.jsonl']['lines']} log rows in "
            f"{len(manifest['windows'])} window(s), {path.stat().st_size} bytes")
