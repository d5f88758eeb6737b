"""The floor's and the review queue's content, rendered once and shared by
every pit boss, manager and auditor who loads it within a few seconds.

Twenty pit bosses each loading the floor and the queue every five seconds
made eight renderings a second of the same 500 tables and the same queue, the
web's whole CPU on two cores (bench/bench_floor.py). What those parts show
does not depend on who reads them: every role that may open them reads the
whole floor (tables.services.access.floor_wide), and they hold no form token
or user name: they are rendered without the request, so no context processor
runs and nothing of the reader who happened to render them (his name, a form
token, his messages) can get into a shared copy. So the first request
renders them and keeps the HTML in the cache (Redis, shared by every web
process) for settings.FLOOR_SHARE_SECONDS; the others within that time get
the same HTML.

A shared copy is at most FLOOR_SHARE_SECONDS old (and one rendering: while
one request renders the next copy, the others get the previous one), and it
is dropped at once when what a pit boss does changes it: the key holds the
language, the time zone and the URL prefix it was rendered for, the query
(the queue's filters and page), and a fingerprint of the state read in one
cheap query — the open sessions (a table opened or closed), the last flag
event (a flag raised, confirmed, dismissed, resolved or moved) and the last
cagnotte count and attestation (the floor's list of boxes to count). A coup
shows on the floor within FLOOR_SHARE_SECONDS; a decision in the queue at
once. Each part's key holds only the state it shows (PARTS): a flag raised
renders the cards and the queue again, not the boxes to count; a box counted
renders that list, not the cards (at 1,000 tables the first reader after a
change rendered all three, and those readers made the pages' p99).

With FLOOR_SHARE_SECONDS = 0, or the cache down, every request renders its
own (as before).

A copy is HTML served as it is, so it is served only as this app stored it:
the cache signs each entry over its key, its value and its expiry
(casino/cache.py). A copy written into Redis by anyone else, or a genuine
one moved to another key (another state's floor), is a miss: this request
renders its own. And every page carries a Content-Security-Policy without
inline scripts (casino/settings.py), so a `<script>` that got into a page
would not run either.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import connection
from django.dispatch import receiver
from django.urls import get_script_prefix
from django.utils import timezone, translation
from django.utils.safestring import SafeString, mark_safe

from tables.models import TableSession

from ..models import CagnotteAttestation, CagnotteCount, Flag, FlagEvent

log = logging.getLogger(__name__)
# A copy stays in the cache this many times FLOOR_SHARE_SECONDS: served while
# it is fresh, and meanwhile the next one renders (then replaced).
KEEP = 10
_now = time.time  # (the tests move it)


def fingerprint() -> tuple:
    """(open sessions, then the last id of: sessions, flags, flag events,
    cagnotte counts, their attestations): index probes, one round trip
    (PARTS below names these by their place)."""
    last = [m._meta.db_table for m in (TableSession, Flag, FlagEvent,
                                        CagnotteCount, CagnotteAttestation)]
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT (SELECT count(*) FROM "{last[0]}" WHERE closed_at IS NULL), '
            + ", ".join(f'(SELECT max(id) FROM "{t}")' for t in last))
        return tuple(cursor.fetchone())


# What each part shows of that state (places in fingerprint()): the cards,
# the tables opened and closed and their open flags; the boxes to count, the
# sessions closed and the counts and attestations; the queue, the flags and
# their events. A part not named here keys on all of it.
PARTS = {"tables": (0, 1, 2, 3), "closing": (0, 1, 4, 5), "queue": (2, 3)}
# The boxes to count show nothing a coup changes: every change of theirs is
# in their key (a session closed, a box counted or attested) but a table's
# name and the list's two weeks moving on at midnight, so a copy of them is
# fresh this many times longer (a minute at the default FLOOR_SHARE_SECONDS):
# 22 ms of the pages' CPU and 50 ms of the database every two seconds at
# 1,000 tables, for nothing.
LONGER = {"closing": 30}

# The fingerprint is read once per request (the floor page shares two
# parts): kept for the request that read it, from request_started to
# request_finished; outside a request (a shell, a test calling shared()
# directly) it is read at every call.
_request = threading.local()


@receiver(request_started)
def _request_begins(**kwargs) -> None:
    _request.fingerprint, _request.active = None, True


def _fingerprint() -> tuple:
    if not getattr(_request, "active", False):
        return fingerprint()
    if _request.fingerprint is None:
        _request.fingerprint = fingerprint()
    return _request.fingerprint


def _key(kind: str, query: str) -> str:
    state = _fingerprint()
    if kind in PARTS:
        state = tuple(state[i] for i in PARTS[kind])
    parts = (translation.get_language(), timezone.get_current_timezone_name(),
             get_script_prefix(), query, state)
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
    return f"floor-share:{kind}:{digest}"


def shared(kind: str, build: Callable[[], str], query: str = "") -> SafeString:
    """`build()`'s HTML (an escaped template rendering), or the copy another
    request of the same kind, query, language, time zone and state rendered
    less than FLOOR_SHARE_SECONDS ago.

    A copy that has grown older is rendered again by one request only (a
    lock in the cache, held at most FLOOR_SHARE_SECONDS), once its own page
    is sent: that reader and those who come while it renders get the copy
    they would have got a moment before, rather than each rendering the same
    page at once (with twenty pit bosses, a few renderings at the same moment
    held the web processes' interpreter against the coups), and none waits
    for a rendering. A copy is thus at most FLOOR_SHARE_SECONDS, one reader's
    visit and one rendering old."""
    seconds = settings.FLOOR_SHARE_SECONDS * LONGER.get(kind, 1)
    if not seconds:
        return mark_safe(build())
    key = _key(kind, query)
    try:
        entry = cache.get(key)
        if entry is not None:
            rendered_at, html = _unpack(entry)
            if _now() - rendered_at < seconds:
                return mark_safe(html)
            if cache.add(f"{key}:rendering", 1, seconds):
                # This reader renders the next copy, but after his page is
                # sent: he gets the last copy like the others, and no reader
                # waits for a rendering (bench_floor.py: one request in eight
                # rendered 500 tables, and those made the floor's p99).
                _after_response(key, build, seconds)
            return mark_safe(html)
    except Exception as exc:  # Redis down: every request renders its own
        log.warning("floor share: the cache cannot be read (%s)", exc)
        return mark_safe(build())
    # No copy yet for this state (a table opened, a flag decided...): it must
    # be this one.
    return mark_safe(_render(key, build, seconds))


def _pack(rendered_at: float, html: str) -> str:
    """A copy as one string, its time on the first line: the cache stores a
    string as it is (casino/cache.py), where JSON would escape every quote
    of the HTML."""
    return f"{rendered_at!r}\n{html}"


def _unpack(entry: str) -> tuple[float, str]:
    rendered_at, _, html = entry.partition("\n")
    return float(rendered_at), html


def _render(key: str, build: Callable[[], str], seconds: int) -> str:
    html = build()
    try:
        cache.set(key, _pack(_now(), str(html)), KEEP * seconds)
        cache.delete(f"{key}:rendering")
    except Exception as exc:
        log.warning("floor share: the cache cannot be written (%s)", exc)
    return html


# Renderings due once this thread's response is sent (request_finished: the
# WSGI server closes the response after writing it, in the thread that
# handled it). The language and time zone are the request's.
_pending = threading.local()


def _after_response(key: str, build: Callable[[], str], seconds: int) -> None:
    if not hasattr(_pending, "jobs"):
        _pending.jobs = []
    _pending.jobs.append((key, build, seconds, translation.get_language(),
                          timezone.get_current_timezone_name()))


@receiver(request_finished)
def _render_pending(**kwargs) -> None:
    _request.active = _request.fingerprint = None
    jobs, _pending.jobs = getattr(_pending, "jobs", []), []
    for key, build, seconds, language, zone in jobs:
        try:
            with translation.override(language), timezone.override(zone):
                _render(key, build, seconds)
        except Exception:  # the next reader renders it; nobody saw this one
            log.exception("floor share: rendering %s after the response", key)
            try:
                cache.delete(f"{key}:rendering")
            except Exception:
                pass
