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

**Session settings.** A role or database setting (`ALTER ROLE casino_app
SET default_transaction_read_only = on`, `... SET search_path = nowhere`, an
isolation level, a DateStyle psycopg cannot read) would change what every
new connection of the app does, and nothing would name the cause. So every
setting whose value the app relies on (`SESSION`) is sent at connect too,
with the limits; the URL's own options come after them (the operator's,
from the environment) and the limits last. What cannot be sent is named:
`/health/details/` ("role_settings", `role_settings_problems`) lists every
setting pg_db_role_setting holds for the runtime role and database that
differs from what the app expects, saying whether the app overrides it, and
checks the session's own values (`session_replication_role`, which only a
superuser may set, and would switch every trigger off, cannot be sent by a
role that is not one).

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
# What every session of the app runs under, whatever the role or the
# database carries: the settings that change what a statement does or how
# its answer is read (PostgreSQL's "Client Connection Defaults" and the
# literal and output formats psycopg and the digests rely on).
SESSION: dict[str, str] = {
    "default_transaction_read_only": "off",  # else every write fails
    # the chain's and the seals' functions read a fresh snapshot after a
    # lock (migrations casino 0009, 0010): READ COMMITTED only
    "default_transaction_isolation": "read committed",
    "default_transaction_deferrable": "off",
    "search_path": "public",  # the app's tables and functions, nothing before
    "row_security": "on",
    "standard_conforming_strings": "on",  # how a quoted literal is read
    "DateStyle": "ISO, MDY",  # what psycopg parses
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",  # Django's, without its SET at every connect
    "extra_float_digits": "1",  # floats exactly (digests of FloatFields)
    "bytea_output": "hex",
    "idle_in_transaction_session_timeout": "0",
}
# Where PostgreSQL says a statement was cancelled: in the chain's function.
CHAIN_FUNCTION = "casino_chain_head"
_CANCELLED = {"55P03", "57014"}  # lock_not_available, query_canceled
ALERT_EVERY = 10.0  # seconds: one ERROR per process, then a count
_alerts = {"last": None, "since": 0}


def session_options() -> str:
    """SESSION as libpq `options` (a space in a value escaped)."""
    return " ".join(f"-c {name}={value.replace(' ', chr(92) + ' ')}"
                    for name, value in SESSION.items())


def with_limits(options: str, *, statement: float, lock: float) -> str:
    """libpq `options`: the session settings, then the URL's own options
    (the operator's: they win over ours), then the app's two limits
    (milliseconds), which replace any the URL gives."""
    kept = _LIMITS.sub("", options or "").replace(session_options(), "").strip()
    ours = (f"-c statement_timeout={round(statement * 1000)} "
            f"-c lock_timeout={round(lock * 1000)}")
    return " ".join(part for part in (session_options(), kept, ours) if part)


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


# -- role and database settings ---------------------------------------------

def _norm(value: str) -> str:
    return value.replace(" ", "").replace('"', "").lower()


_OPTION = re.compile(r"-c\s*((?:[^\s\\]|\\.)+)")


def sent_at_connect(connection) -> dict[str, str]:
    """name (lower case) -> value of every setting the connection sends in
    its startup options (SESSION, the URL's own, the limits; the last of a
    name wins, as in PostgreSQL)."""
    options = connection.settings_dict.get("OPTIONS", {}).get("options", "")
    sent = {}
    for item in _OPTION.findall(options or ""):
        name, _, value = re.sub(r"\\(.)", r"\1", item).partition("=")
        sent[name.lower()] = value
    return sent


def _role_settings(cursor) -> list[tuple[str, str, str]]:
    """(where, name, value) of every setting ALTER ROLE / ALTER DATABASE put
    on this session's role (the one it logged in as, and the one it acts
    as) and database."""
    cursor.execute(
        "SELECT CASE WHEN s.setrole = 0 THEN 'database ' || d.datname "
        "WHEN s.setdatabase = 0 THEN 'role ' || r.rolname "
        "ELSE 'role ' || r.rolname || ' in database ' || d.datname END, "
        "unnest(s.setconfig) FROM pg_db_role_setting s "
        "LEFT JOIN pg_roles r ON r.oid = s.setrole "
        "LEFT JOIN pg_database d ON d.oid = s.setdatabase "
        "WHERE s.setdatabase IN (0, (SELECT oid FROM pg_database "
        "WHERE datname = current_database())) "
        "AND s.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = "
        "session_user), (SELECT oid FROM pg_roles WHERE rolname = current_user))"
        " ORDER BY 1, 2")
    return [(where, *item.split("=", 1)) for where, item in cursor.fetchall()]


def role_settings_problems(connection) -> list[str]:
    """What a role or database setting changes in the app's sessions, one
    line each: a setting the app overrides at connect but that differs from
    its value (someone set it: it has no effect), one the app does not send
    (in effect for every new connection), and the session's own values of
    what the app sends or cannot send."""
    expected = sent_at_connect(connection)
    problems = []
    with connection.cursor() as cursor:
        for where, name, value in _role_settings(cursor):
            ours = expected.get(name.lower())
            if ours is None:
                problems.append(
                    f"{name} = {value} on the {where}: the app does not set it "
                    "at connect, so it is in effect for every new connection "
                    f"(ALTER ROLE/DATABASE ... RESET {name})")
            elif _norm(ours) != _norm(value):
                problems.append(
                    f"{name} = {value} on the {where}, where the app expects "
                    f"{ours}: overridden at connect, so without effect, but "
                    f"someone set it (ALTER ROLE/DATABASE ... RESET {name})")
        wanted = {name.lower(): value for name, value in SESSION.items()}
        wanted = {**wanted, **expected, "session_replication_role": "origin"}
        wanted.pop("statement_timeout", None)  # a block may set its own
        wanted.pop("lock_timeout", None)
        cursor.execute("SELECT " + ", ".join(["current_setting(%s)"] * len(wanted)),
                       list(wanted))
        found = dict(zip(wanted, cursor.fetchone(), strict=True))
    for name, value in found.items():
        if _norm(value) != _norm(wanted[name]):
            problems.append(f"this session runs with {name} = {value}, where the "
                            f"app expects {wanted[name]}")
    return problems


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


def trail_stopped(exc: BaseException) -> str | None:
    """The words of a write refused because the witnesses named a fork or a
    rollback (casino_chain_head's SQLSTATE CW409, casino.trail.TrailStopped
    on SQLite), else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if getattr(exc, "sqlstate", None) == "CW409":
            diag = getattr(exc, "diag", None)
            text = getattr(diag, "message_primary", None) or str(exc)
            return text.splitlines()[0]
        exc = exc.__cause__ or exc.__context__
    return None


def trail_stopped_response(request, message: str):
    """503 naming the fork or the rollback: nothing was written."""
    from django.http import HttpResponse, JsonResponse

    detail = (f"{message}. Nothing was written; writes resume once the "
              "operator declares the loss (manage.py trail_epoch)")
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": detail, "code": "trail_stopped"},
                                status=503)
    else:
        response = HttpResponse(detail, status=503,
                                content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "30"
    return response


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
        stopped = trail_stopped(exception)
        if stopped:
            return trail_stopped_response(request, stopped)
        return None
