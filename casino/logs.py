"""Logs a collector can read: one JSON object per line (``LOG_FORMAT=json``),
each with the request's id, the user and the table; never a secret, a PIN or
a token.

- `RequestContextMiddleware` gives every request an id (the caller's
  ``X-Request-ID`` when it is a plain token of at most 64 characters, so a
  load balancer's id follows the request; a new one otherwise), sends it
  back in ``X-Request-ID``, and writes one line per request on the
  ``casino.request`` logger (method, path without its query string, status,
  milliseconds). Every line logged while the request runs carries
  ``request_id``, ``user`` (the name, once signed in: a tablet's token is
  read by the API view, and counts from then on) and ``table`` (a URL's table,
  what a view binds with `bind`, or the ``table`` of the API's answer).
- A Celery task's lines carry its task id as ``request_id``.
- `Redacting` formatters scrub the final line, tracebacks included: the values
  of SECRET_KEY, TRAIL_KEY, TRAIL_OLD_KEYS, METRICS_TOKEN and the database
  passwords, whatever follows ``Token``/``Bearer``/``Basic``, and the value of
  any ``pin``, ``password``, ``token``, ``secret``, ``authorization`` or
  ``key`` field written as ``name=value`` or ``"name": "value"``. Nothing in
  the app logs a request body, a header or a form; this is the second line.
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
import uuid
from functools import lru_cache

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

_CONTEXT: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "casino_log_context", default=None)
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
ACCESS = logging.getLogger("casino.request")
REDACTED = "[redacted]"


def bind(**values) -> None:
    """Add to what the current request's (or task's) lines carry, e.g.
    bind(table=7)."""
    ctx = _CONTEXT.get()
    if ctx is not None:
        ctx.update({k: v for k, v in values.items() if v is not None})


def current() -> dict:
    return dict(_CONTEXT.get() or {})


def _user_name(request) -> str | None:
    """The user if the request already knows him; never a database read from
    inside a log call."""
    user = request.__dict__.get("user")
    wrapped = getattr(user, "_wrapped", user)  # SimpleLazyObject, or the user
    if wrapped is None or type(wrapped).__name__ == "object":  # not evaluated
        return None
    if getattr(wrapped, "is_authenticated", False):
        return wrapped.get_username()
    return None


class RequestContextMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        given = request.headers.get("X-Request-ID", "")
        rid = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        ctx = {"request_id": rid, "_request": request}
        # Django logs a 4xx/5xx answer after the middleware returned: its
        # record names the request, which names its context
        request._log_context = ctx
        token = _CONTEXT.set(ctx)
        start = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = rid
            if "table" not in ctx:
                data = getattr(response, "data", None)
                if isinstance(data, dict) and isinstance(data.get("table"), int):
                    ctx["table"] = data["table"]
            ACCESS.info("%s %s %s %.1fms", request.method, request.path,
                        response.status_code, (time.perf_counter() - start) * 1000,
                        extra={"method": request.method, "path": request.path,
                               "status": response.status_code,
                               "duration_ms": round((time.perf_counter() - start)
                                                    * 1000, 1)})
            return response
        finally:
            _CONTEXT.reset(token)

    def process_view(self, request, view_func, view_args, view_kwargs):
        for name in ("table", "table_id", "table_pk"):
            if name in view_kwargs:
                bind(table=view_kwargs[name])
                break
        return None


_TASKS: dict[str, contextvars.Token] = {}


def task_context_start(task_id: str | None) -> None:
    """Celery's task_prerun: a worker's task lines carry the task's id. A
    task run eagerly inside a request keeps the request's."""
    if _CONTEXT.get() is None and task_id:
        _TASKS[task_id] = _CONTEXT.set({"request_id": task_id})


def task_context_end(task_id: str | None) -> None:
    token = _TASKS.pop(task_id or "", None)
    if token is not None:
        _CONTEXT.reset(token)


class ContextFilter(logging.Filter):
    """request_id, user, table on every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = (_CONTEXT.get()
               or getattr(getattr(record, "request", None), "_log_context", None)
               or {})
        request = ctx.get("_request")
        record.request_id = ctx.get("request_id")
        record.user = ctx.get("user") or (_user_name(request) if request else None)
        record.table = ctx.get("table")
        parts = [str(p) for p in (record.request_id, record.user) if p]
        if record.table is not None:
            parts.append(f"table={record.table}")
        record.context = f" [{' '.join(parts)}]" if parts else ""
        return True


# -- redaction --------------------------------------------------------------------

_SCHEMES = re.compile(r"\b(Token|Bearer|Basic)(\s+|%20|\+)[^\s\"',;]+", re.I)
# a quote may come escaped (a JSON line's message holding JSON)
_FIELDS = re.compile(
    r"""(?P<name>(?:\\?["'])?\b(?:pin|password|passwd|token|secret|"""
    r"""authorization|api[_-]?key|key)(?:\\?["'])?\s*[:=]\s*)"""
    r"""(?P<q>(?:\\?["'])?)(?P<value>[^"'\s,;&}\\]+)""",
    re.I)


@lru_cache(maxsize=1)
def _secret_values() -> tuple[str, ...]:
    from django.conf import settings

    values = [settings.SECRET_KEY, settings.TRAIL_KEY,
              *getattr(settings, "TRAIL_OLD_KEYS", []),
              getattr(settings, "METRICS_TOKEN", "")]
    for db in settings.DATABASES.values():
        values.append(db.get("PASSWORD") or "")
    migrate = getattr(settings, "MIGRATE_DATABASE", None) or {}
    values.append(migrate.get("PASSWORD") or "")
    # longest first: a key that contains another is scrubbed whole
    return tuple(sorted({v for v in values if v and len(v) >= 6}, key=len,
                        reverse=True))


def redact(text: str) -> str:
    for value in _secret_values():
        if value in text:
            text = text.replace(value, REDACTED)
    text = _SCHEMES.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _FIELDS.sub(lambda m: f"{m.group('name')}{m.group('q')}{REDACTED}", text)


class RedactingFormatter(logging.Formatter):
    """Plain text (`make run`): time, level, logger, the request's id and
    user when there is one, the message."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RedactingJsonFormatter(JsonFormatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message,
    request_id, user, table, and the fields a call adds (`extra=`)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("timestamp", "time")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        # the text format's context string says what the fields say
        # (and Django's request object: its repr holds the query string)
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "context", "request"])
        super().__init__(
            "%(levelname)s %(name)s %(message)s %(request_id)s %(user)s %(table)s",
            *args, **kwargs)

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
