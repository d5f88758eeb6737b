"""The app's own limits on its PostgreSQL sessions.

**Limits.** Every connection the app opens carries `statement_timeout` and
`lock_timeout` in its startup packet (libpq's `options`, set up by settings.py
through `with_limits`). PostgreSQL applies a role's own settings (`ALTER ROLE
... SET`) at login and the client's startup options over them, so whoever
holds the runtime role's credentials cannot lift them (`ALTER ROLE casino_app
SET statement_timeout = 0` changes nothing for the app) and cannot make the
app wait for ever on a lock he holds. Two sets, by process:

- "web" (gunicorn, runserver, the tests): short, a request must answer;
- "worker" (Celery workers and beat, and every manage.py command but
  runserver): long statements, since report builds, surveillance runs,
  re-audits, the nightly re-settlement and migrations read whole periods.

manage.py marks its process (`CASINO_PROCESS`); a Celery worker or beat
switches itself at start (`use`, from casino/celery.py).
"""

from __future__ import annotations

import re

KINDS = ("web", "worker")
_LIMITS = re.compile(r"\s*-c\s*(statement_timeout|lock_timeout)=\S+")


def with_limits(options: str, *, statement: float, lock: float) -> str:
    """libpq `options` with the app's two limits (milliseconds) last; any
    given in the database URL are replaced."""
    kept = _LIMITS.sub("", options or "").strip()
    ours = (f"-c statement_timeout={round(statement * 1000)} "
            f"-c lock_timeout={round(lock * 1000)}")
    return f"{kept} {ours}".strip()


def use(kind: str) -> None:
    """This process's limits from now on (every PostgreSQL alias); open
    connections are closed, the next one takes them."""
    from django.conf import settings
    from django.db import connections

    statement, lock = settings.DB_LIMITS[kind]
    settings.DB_PROCESS = kind
    for alias, config in settings.DATABASES.items():
        if config.get("ENGINE") != "django.db.backends.postgresql":
            continue
        options = config.setdefault("OPTIONS", {})
        options["options"] = with_limits(options.get("options", ""),
                                         statement=statement, lock=lock)
        if alias in connections:
            connection = connections[alias]
            connection.close()
            connection.settings_dict.setdefault("OPTIONS", {})["options"] = (
                options["options"])


def session_limits(connection) -> tuple[str, str]:
    """What a connection runs under: (statement_timeout, lock_timeout)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('statement_timeout'), "
                       "current_setting('lock_timeout')")
        return tuple(cursor.fetchone())
