"""`manage.py trail_epoch --reason TEXT`: declare the loss the witnesses
named and start the log's next epoch (casino/epochs.py)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from casino.epochs import EpochRefused, epoch_declare


class Command(BaseCommand):
    help = ("Declare a fork or a rollback the witnesses named (a restored dump, a "
            "cut tail): writes the declaration as the first row of a new epoch of "
            "the log, which lifts the stop on writes. Prints the new log's key: "
            "each witness must be given it (python -m tools.witness --log KEY).")

    def add_arguments(self, parser):
        parser.add_argument("--reason", required=True,
                            help="what happened: the restore, the dump's time")

    def handle(self, *args, reason: str, **options):
        try:
            row = epoch_declare(reason=reason, device="manage.py trail_epoch")
        except EpochRefused as exc:
            raise CommandError(str(exc)) from exc
        new = row.new
        self.stdout.write(json.dumps(new, indent=2, sort_keys=True))
        self.stdout.write(
            f"Epoch {new['epoch']} begins at row {row.pk}: {new['rows_lost']:,} "
            f"row(s) lost (the witnesses held {new['witness_held']:,}, the database "
            f"{new['database_rows']:,}). Give each witness the new log's key:\n"
            f"  {new['log_key']}")
