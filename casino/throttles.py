"""API rate limits: DRF's throttles, read per request and failing open.

Scopes and their rates (REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], each from
an environment variable, see casino/settings.py):

- `api`: every request of a signed-in user (per user), API_THROTTLE;
- `anon`: requests nobody signed (per client address), ANON_THROTTLE;
- `login`: the token endpoint (per client address), LOGIN_THROTTLE: holds back
  guessing across many user names, which the per-name lockout (axes) cannot;
- `coup`: recording a coup (per user), COUP_THROTTLE. A table deals a coup
  every 30 s or so; a tablet back from being offline sends its queue at once,
  so the rate leaves room for a burst well above the pace of play;
- `reports`: requesting a report or a re-audit (per user), REPORTS_THROTTLE:
  each one is a Celery job over days of coups.

Which URL takes which scope is the table ROUTE_SCOPES below (URL name and
method, as casino.access.ROUTES), or a view's own `throttle_scope`.

A throttled request gets a 429 with Retry-After (DRF's handler); the schema
documents the 429 on every operation (casino.api.CasinoAutoSchema).

Fail open: the counters live in the cache (Redis). If Redis is down, a
request is let through and a warning logged, rather than a 500: the floor
must go on recording coups without Redis, and a few minutes without rate
limits is the lesser harm. The sign-in lockout does not depend on this: axes
counts failures in the database, per user name and address, and so does
casino.backends.AddressLimit per address (LOGIN_ADDRESS_FAILURE_LIMIT): with
the throttles' keys deleted (or Redis down), no more passwords can be tried.

A history read from the cache is data from outside: it is signed
(casino/cache.py), and still checked before use (`sane_history`): only
times within the rate's window count, so no history, however it was made,
refuses a request for longer than one window.
"""

from __future__ import annotations

import ipaddress
import logging
import time

from django.core.exceptions import ImproperlyConfigured
from redis.exceptions import RedisError
from rest_framework import throttling
from rest_framework.settings import api_settings

log = logging.getLogger(__name__)

# URL name -> HTTP method -> scope (on top of `api`/`anon`).
ROUTE_SCOPES: dict[str, dict[str, str]] = {
    "api-coup-record": {"POST": "coup"},
    "reports-api:jobs": {"POST": "reports"},
    "reports-api:reaudits": {"POST": "reports"},
}

# What a cache backend raises when its server is gone (redis-py's errors;
# sockets' OSError for the others).
CACHE_ERRORS = (RedisError, OSError)
# Times a little ahead of this process's clock still count (another web
# node's clock); further ahead, they are dropped.
CLOCK_SKEW = 5.0
WARN_EVERY = 60.0  # seconds: one warning a minute per process, not per request
_last_warning: float | None = None  # time.monotonic() of the last one


def client_ip(request) -> str | None:
    """The client's address, as the throttles see it (REMOTE_ADDR, or
    X-Forwarded-For behind NUM_PROXIES proxies). Axes uses it too
    (AXES_CLIENT_IP_CALLABLE), so both count the same client. Not an address
    (a forged header past a miscounted proxy): REMOTE_ADDR, which axes can
    store (its column is an IP address)."""
    ident = throttling.BaseThrottle().get_ident(request)
    try:
        return str(ipaddress.ip_address((ident or "").strip()))
    except ValueError:
        return request.META.get("REMOTE_ADDR") or None


def _cache_down(scope: str | None, exc: Exception) -> None:
    global _last_warning
    now = time.monotonic()
    if _last_warning is None or now - _last_warning >= WARN_EVERY:
        _last_warning = now
        log.warning(
            "API throttle %r: the cache is unavailable (%s: %s); requests are "
            "let through without rate limits until it is back",
            scope, type(exc).__name__, exc,
        )  # fmt: skip


class FailOpen:
    """Mix-in for a DRF SimpleRateThrottle: rates read at each request (DRF
    reads them once, at import: an override in settings would be ignored),
    and a cache outage lets the request through."""

    def get_rate(self):
        try:
            return api_settings.DEFAULT_THROTTLE_RATES[self.scope]
        except KeyError:
            raise ImproperlyConfigured(
                f"REST_FRAMEWORK['DEFAULT_THROTTLE_RATES'] has no rate for the "
                f"throttle scope {self.scope!r}"
            ) from None

    def allow_request(self, request, view) -> bool:
        try:
            return self._allow(request, view)
        except CACHE_ERRORS as exc:
            _cache_down(self.scope, exc)
            return True

    def _allow(self, request, view) -> bool:
        """DRF's SimpleRateThrottle.allow_request, its history sanitised."""
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        self.history = sane_history(
            self.cache.get(self.key, []), self.now, self.duration,
            self.num_requests)
        if len(self.history) >= self.num_requests:
            return self.throttle_failure()
        return self.throttle_success()


def sane_history(history, now: float, duration: float, most: int) -> list[float]:
    """The request times of a throttle's history that can count now: numbers
    within the window (not older than `duration`, not ahead of the clock by
    more than CLOCK_SKEW), newest first, at most `most` of them (more change
    nothing). A history of times far ahead (a 429 for a year) or of another
    shape refuses nothing beyond one window."""
    if not isinstance(history, list):
        return []
    times = [t for t in history if type(t) in (int, float)
             and now - duration < t <= now + CLOCK_SKEW]
    return sorted(times, reverse=True)[:most]


class AnonRateThrottle(FailOpen, throttling.AnonRateThrottle):
    scope = "anon"


class UserRateThrottle(FailOpen, throttling.UserRateThrottle):
    scope = "api"


class ScopedRateThrottle(FailOpen, throttling.SimpleRateThrottle):
    """The view's `throttle_scope`, else ROUTE_SCOPES for the URL and method;
    neither: no limit of its own. Per user, per address if anonymous (as
    DRF's ScopedRateThrottle, whose scope comes from the view only)."""

    scope_attr = "throttle_scope"

    def __init__(self):
        pass  # the scope, hence the rate, is known per request

    def allow_request(self, request, view) -> bool:
        self.scope = getattr(view, self.scope_attr, None) or scope_for(request)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view) -> str:
        if request.user and request.user.is_authenticated:
            ident = request.user.pk
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}


def scope_for(request) -> str | None:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return None
    return ROUTE_SCOPES.get(match.view_name, {}).get(request.method)
