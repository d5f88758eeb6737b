"""Add a house variant of the banker's tableau (logged; tables switch to it
with a house-rules change)."""

import json

from django.core.management.base import BaseCommand, CommandError

from tables.errors import ServiceError
from tables.services.tableaux import tableau_create


class Command(BaseCommand):
    help = "Add a tableau version from a JSON file {\"0\": [11 cells D/S/O], ...}."

    def add_arguments(self, parser):
        parser.add_argument("version")
        parser.add_argument("rows_file")
        parser.add_argument("--reason", required=True)
        parser.add_argument("--description", default="")

    def handle(self, *args, version, rows_file, reason, description, **options):
        try:
            with open(rows_file, encoding="utf-8") as fh:
                rows = json.load(fh)
            row = tableau_create(version=version, rows=rows, user=None,
                                 reason=reason, description=description,
                                 device="manage.py tableau_add")
        except (OSError, ValueError) as exc:
            raise CommandError(f"{rows_file}: {exc}") from exc
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Tableau {row.version} added.")
