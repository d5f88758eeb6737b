"""Demo casino: users for each role, a few tables, one simulated shoe.

Idempotent: a second run changes nothing and prints no password again.
"""

import secrets
from decimal import Decimal

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand
from django.db import transaction

from tables import services
from tables.models import Table
from tables.simulation import SimulationReport, simulate_shoe

USERS = (
    ("croupier", "croupier"),
    ("pitboss", "pitboss"),
    ("manager", "manager"),
    ("auditor", "auditor"),
)
TABLES = (
    ("Salon Rouge 1", Decimal("100.00")),
    ("Salon Rouge 2", Decimal("500.00")),
    ("Salon Privé", Decimal("2000.00")),
)


class Command(BaseCommand):
    help = "Load a demo casino (users, tables, one simulated shoe). Idempotent."

    def handle(self, *args, **options):
        import random

        with transaction.atomic():
            created = []
            for username, role in USERS:
                if User.objects.filter(username=username).exists():
                    continue
                password = secrets.token_urlsafe(9)
                user = User.objects.create_user(username=username, password=password)
                user.groups.add(Group.objects.get(name=role))
                created.append((username, role, password))
            if not User.objects.filter(is_superuser=True).exists():
                password = secrets.token_urlsafe(9)
                User.objects.create_superuser("admin", password=password)
                created.append(("admin", "admin", password))
            manager = User.objects.get(username="manager")
            croupier = User.objects.get(username="croupier")
            for name, minimum in TABLES:
                if not Table.objects.filter(name=name).exists():
                    services.table_create(
                        user=manager, name=name, minimum_banco=minimum, device="demo"
                    )
            first = Table.objects.get(name=TABLES[0][0])
            if not first.sessions.exists():
                session = services.session_open(
                    table=first, user=croupier, device="demo"
                )
                report = SimulationReport()
                simulate_shoe(
                    session=session,
                    user=croupier,
                    rng=random.Random(7),
                    false_draw_rate=0.03,
                    report=report,
                    device="demo",
                )
                self.stdout.write(
                    f"Simulated one shoe at {first.name}: {report.coups} coups, "
                    f"{report.findings} findings, commission {report.commission}."
                )
        # The demo's trail anchored outside the database, as beat would.
        from casino.anchors import trail_anchor

        anchor = trail_anchor(reason="demo loaded")
        if anchor is not None:
            self.stdout.write(f"Trail anchored at row {anchor.row}.")
        if created:
            self.stdout.write("Demo users (passwords are shown only this once):")
            for username, role, password in created:
                self.stdout.write(f"  {username:<10} {role:<9} {password}")
        else:
            self.stdout.write(
                "Demo data already loaded; no password is shown again "
                "(reset one with: manage.py changepassword USER)."
            )
