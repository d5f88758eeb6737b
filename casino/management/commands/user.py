"""People, from the command line: the first manager of a new installation,
or anyone when the admin's pages are not at hand.

    manage.py user add NAME --role manager                # password asked twice
    manage.py user add NAME --role croupier --password-file FILE

The user and his role are written in one transaction, through the ORM, so the
trail records them as it records every user and role change
(casino/accounts.py: `auth.user.created`, `auth.user.roles_added`), naming
this command as the device.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from casino.accounts import acting
from casino.roles import ROLES

DEVICE = "manage.py user add"


def _password_from_file(path: str) -> str:
    """The file's first line (a trailing newline is not part of it)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"--password-file: {exc}") from exc
    lines = text.splitlines()
    return lines[0] if lines else ""


def _password_asked() -> str:
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Password (again): "):
        raise CommandError("the two passwords differ: nothing was written")
    return first


class Command(BaseCommand):
    help = (
        "Make a user with a role: `user add NAME --role ROLE` (roles: "
        f"{', '.join(ROLES)}). The password is asked twice, or read from the "
        "first line of --password-file. The user and the role are written to "
        "the change log like every user and role change."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="make a user with a role")
        add.add_argument("name", help="the user name he signs in with")
        add.add_argument("--role", required=True,
                         help=f"one of: {', '.join(ROLES)}")
        add.add_argument("--password-file",
                         help="read the password from this file's first line "
                         "instead of asking (the file is not changed)")
        add.add_argument("--email", default="")

    def handle(self, *args, action: str, name: str, role: str,
               password_file: str | None = None, email: str = "", **options):
        name = name.strip()
        if not name:
            raise CommandError("NAME: a user name is required")
        if role not in ROLES:
            raise CommandError(
                f"--role: unknown role {role!r}; use one of {', '.join(ROLES)}")
        model = get_user_model()
        if model.objects.filter(username=name).exists():
            raise CommandError(f"NAME: a user {name!r} exists already")
        group = Group.objects.filter(name=role).first()
        if group is None:
            raise CommandError(
                f"--role: the role {role!r} is not in the database: run "
                "`manage.py migrate` first")
        password = (_password_from_file(password_file) if password_file
                    else _password_asked())
        candidate = model(username=name, email=email)
        try:
            password_validation.validate_password(password, candidate)
        except ValidationError as exc:
            raise CommandError("password: " + " ".join(exc.messages)) from exc
        who = os.environ.get("SUDO_USER") or os.environ.get("USER") or ""
        device = f"{DEVICE} ({who})" if who else DEVICE
        with acting(device=device), transaction.atomic():
            user = model.objects.create_user(username=name, email=email,
                                             password=password)
            user.groups.add(group)
        self.stdout.write(f"user {name!r} made, role {role} (id {user.pk})")
