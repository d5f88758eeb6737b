#!/usr/bin/env python
"""Django's command-line utility."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casino.settings")
    # A command (migrate, verify_ledger, reaudit...) reads whole periods: the
    # workers' database limits; runserver answers requests as gunicorn does
    # (casino/dbsession.py).
    if sys.argv[1:2] != ["runserver"]:
        os.environ.setdefault("CASINO_PROCESS", "worker")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
