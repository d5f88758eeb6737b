"""The app's own limits on its PostgreSQL sessions, and the change log's chain
held too long.

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

**The chain held.** Every writer of the change log takes one PostgreSQL
advisory lock (`casino_chain_head`, migration casino 0009). The runtime role
may take the same lock in a session of its own and keep it. A write then
waits `lock_timeout` and PostgreSQL cancels it (SQLSTATE 55P03, in
casino_chain_head): the request answers 503 saying the change log is held
(`chain_held_response`; casino/api.py for the API, `ChainHeldMiddleware`
for the pages), nothing is written, and an ERROR names the session holding
the lock (pid, role, application, from pg_locks and pg_stat_activity).
"""

from __future__ import annotations

import logging
import re
import time

log = logging.getLogger("casino.chain")

KINDS = ("web", "worker")
_LIMITS = re.compile(r"\s*-c\s*(statement_timeout|lock_timeout)=\S+")
# Where PostgreSQL says a statement was cancelled: in the chain's function.
CHAIN_FUNCTION = "casino_chain_head"
_CANCELLED = {"55P03", "57014"}  # lock_not_available, query_canceled
ALERT_EVERY = 10.0  # seconds: one ERROR per process, then a count
_alerts = {"last": None, "since": 0}


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


# -- the chain held ----------------------------------------------------------

def chain_held(exc: BaseException) -> bool:
    """Was this database error a wait for the change log's chain cut short
    (lock_timeout, or statement_timeout while waiting)?"""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "sqlstate", None) in _CANCELLED:
            diag = getattr(exc, "diag", None)
            if CHAIN_FUNCTION in (getattr(diag, "context", None) or ""):
                return True
        exc = exc.__cause__ or exc.__context__
    return False


def chain_holders(connection=None) -> list[dict] | None:
    """The sessions holding the chain's advisory lock, from pg_locks (every
    role sees it) and pg_stat_activity (another role's session shows its
    pid, role and application; its address and state only to a superuser or
    pg_read_all_stats). None when it cannot be read (a transaction still
    broken)."""
    from django.db import connection as default

    from .trail import ADVISORY_LOCK_KEY

    connection = connection or default
    if connection.vendor != "postgresql":
        return None
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT l.pid, a.usename, a.application_name, "
                "host(a.client_addr), a.state, a.xact_start, a.query_start "
                "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted "
                "AND l.database = (SELECT oid FROM pg_database "
                "WHERE datname = current_database()) "
                "AND l.classid = %s AND l.objid = %s AND l.objsubid = 1 "
                "ORDER BY l.pid",
                [ADVISORY_LOCK_KEY >> 32, ADVISORY_LOCK_KEY & 0xFFFFFFFF],
            )
            names = [c.name for c in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    except Exception:  # the alert must not hide the refusal
        return None


def _who(holder: dict) -> str:
    parts = [f"pid {holder['pid']}"]
    for key, label in (("usename", "role"), ("application_name", "application"),
                       ("host", "client"), ("state", "state"),
                       ("xact_start", "transaction since")):
        value = holder.get(key)
        if value not in (None, ""):
            parts.append(f"{label} {value!s}" if key != "application_name"
                         else f"{label} {value!r}")
    return ", ".join(parts)


def chain_held_message() -> str:
    from django.conf import settings

    lock = settings.DB_LIMITS[settings.DB_PROCESS][1]
    return (f"the change log is held: another database session has kept its "
            f"chain lock for more than {lock:g} s, so no write can be recorded; "
            "nothing was written and the operators are alerted. Retry the same "
            "request (same Idempotency-Key) in a moment")


def chain_held_alert(connection=None) -> None:
    """The ERROR operators alert on, naming who holds the chain: one per
    process every ALERT_EVERY seconds, then how many more refusals."""
    now = time.monotonic()
    last = _alerts["last"]
    if last is not None and now - last < ALERT_EVERY:
        _alerts["since"] += 1
        return
    more, _alerts["last"], _alerts["since"] = _alerts["since"], now, 0
    holders = chain_holders(connection)
    if holders:
        who = "; ".join(_who(h) for h in holders)
        hint = (f" If it is not a stuck app process, someone holds it with the "
                f"database credentials: SELECT pg_terminate_backend("
                f"{holders[0]['pid']}) ends it.")
    elif holders is None:
        who, hint = "not readable from this session", ""
    else:
        who, hint = "released before it could be read", ""
    log.error(
        "change log held: a write waited for the chain lock past lock_timeout "
        "and was refused with 503 (nothing written)%s; held by %s.%s",
        f", {more} more refused since the last alert" if more else "", who, hint,
    )


def chain_held_response(request):
    """The answer to a write cut short on the held chain: 503, JSON under
    /api/, a short page elsewhere; the ERROR logged."""
    from django.http import HttpResponse, JsonResponse
    from django.utils.translation import gettext

    chain_held_alert()
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": chain_held_message(),
                                 "code": "chain_held"}, status=503)
    else:
        response = HttpResponse(
            gettext("The change log is held by another database session: nothing "
                    "was written. The operators are alerted; try again in a "
                    "moment."),
            status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "5"
    return response


class ChainHeldMiddleware:
    """A page's write cut short on the held chain: 503 saying so, not a 500
    (the API answers through casino/api.py's exception handler)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if chain_held(exception):
            return chain_held_response(request)
        return None
