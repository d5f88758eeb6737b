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
    # a second pit boss: four eyes (a correction reviewed by another, a
    # release after a hold) can only be tried with two
    ("pitboss2", "pitboss"),
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
            self.stdout.write(password_box(created))
        else:
            self.stdout.write(
                "Demo data already loaded; no password is shown again "
                "(reset one with: manage.py changepassword USER)."
            )


def password_box(created: list[tuple[str, str, str]]) -> str:
    """The demo users and their passwords, last and in a box: they are shown
    only this once, and must not be lost above the server's own lines."""
    title = "Demo users: passwords shown only this once"
    lines = [f"{username:<10} {role:<9} {password}"
             for username, role, password in created]
    lines.append("sign in at http://127.0.0.1:8000/")
    width = max(len(title), *(len(line) for line in lines))
    bar = "+" + "-" * (width + 2) + "+"
    body = [f"| {line:<{width}} |" for line in lines]
    return "\n".join(["", bar, f"| {title:<{width}} |", bar, *body, bar, ""])
