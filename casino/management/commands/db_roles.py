"""Create or update the runtime database role (casino/dbroles.py)."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from casino.dbowner import owner_database
from casino.dbroles import RoleError, app_role_grant


class Command(BaseCommand):
    help = (
        "Create or update the role web and workers connect as: it owns nothing "
        "and may only SELECT/INSERT the append-only tables (UPDATE where the "
        "design updates). Run with the owner's credentials (MIGRATE_DATABASE_URL, "
        "else DATABASE_URL), after every migrate. The role's password comes from "
        "APP_DB_PASSWORD (left as it is when unset). Idempotent."
    )

    def add_arguments(self, parser):
        parser.add_argument("--app-role", required=True, help="the runtime role")

    def handle(self, *args, app_role: str, **options):
        password = os.environ.get("APP_DB_PASSWORD") or None
        with owner_database() as connection:
            try:
                plan = app_role_grant(
                    role=app_role, password=password, connection=connection
                )
            except RoleError as exc:
                raise CommandError(str(exc)) from exc
        verb = "created" if plan.created else "updated"
        self.stdout.write(
            f"Role {plan.role} {verb}; privileges on {len(plan.tables)} tables:"
        )
        for table, privileges in plan.tables.items():
            self.stdout.write(f"  {table}: {privileges}")
