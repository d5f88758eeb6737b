"""Schema work as the owner, everything else as the runtime role.

`DATABASE_URL` is what web, workers and beat connect with: in production the
runtime role (casino/dbroles.py). `MIGRATE_DATABASE_URL` names the role that
owns the tables; `migrate` and `db_roles` switch the default connection to it
for their run (the other commands never need it)."""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.db import connections


@contextmanager
def owner_database():
    """The default connection, as the owner while the block runs."""
    connection = connections["default"]
    owner = getattr(settings, "MIGRATE_DATABASE", None)
    if not owner:
        yield connection
        return
    keys = ("NAME", "USER", "PASSWORD", "HOST", "PORT")
    saved = {k: connection.settings_dict.get(k) for k in keys}
    connection.close()
    connection.settings_dict.update({k: owner.get(k, "") for k in keys})
    try:
        yield connection
    finally:
        connection.close()
        connection.settings_dict.update(saved)
