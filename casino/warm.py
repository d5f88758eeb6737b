"""A web process made ready before its first request.

A gunicorn worker imports the URL configuration, and with it every view,
serializer and service, at its first request, and the coup path fills its
caches at its first coup (the exact odds of the house's play for the
expected levy: tables/rollups.py). On a busy floor the first coups after a
start or a deploy then paid for all of it, under the same cores as everyone
else: a quarter of a second each in bench/bench_floor.py's first second.

`casino/wsgi.py` runs `run()` once per process, before the server takes a
request (a worker imports the application at its start; with `--preload`,
the master, before it forks). Apps register what their own hot path wants
ready (`register`, from their AppConfig.ready()): this module imports no app.
Nothing here touches the database (it may not be up yet) and a warmer that
fails is logged and skipped: a cold cache is slower, never wrong.

Then everything the process holds so far (Django, the app, the compiled
templates: some 150,000 objects) is moved out of the garbage collector's
sight (`gc.freeze()`, as the Python documentation advises for a server that
forks): those objects live as long as the process, and a full collection
that walked them all stopped every thread of the process for 130-170 ms on
the machines the floor bench runs on, the coups in flight with it; after
the freeze a full collection walks only what came since (well under a
millisecond here).

CASINO_WARM=0 turns all of it off.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

WARMERS: list[Callable[[], None]] = []


def register(fn: Callable[[], None]) -> Callable[[], None]:
    if fn not in WARMERS:
        WARMERS.append(fn)
    return fn


def urls() -> None:
    """Every URL module, and so every view and serializer, imported."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the import is the point


def templates() -> None:
    """Every template of the project's and the apps' folders compiled (kept
    by the cached loader when DEBUG is off: the floor's first page)."""
    from pathlib import Path

    from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines

    for engine in engines.all():
        for folder in getattr(engine, "template_dirs", ()):
            root = Path(folder)
            if ".venv" in root.parts or "site-packages" in root.parts:
                continue  # the admin's and the libraries': on their first use
            for path in root.rglob("*.html"):
                try:
                    engine.get_template(path.relative_to(root).as_posix())
                except (TemplateDoesNotExist, TemplateSyntaxError):
                    continue


def run() -> float:
    """Run the warmers (urls, templates, then the apps'); returns the seconds
    it took."""
    if os.environ.get("CASINO_WARM", "1").strip() == "0":
        return 0.0
    start = time.perf_counter()
    for fn in [urls, templates, *WARMERS]:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a cold cache is slower, not wrong
            log.warning("warm-up %s failed", getattr(fn, "__qualname__", fn),
                        exc_info=True)
    gc.collect()  # what the start-up left as garbage goes, the rest is kept
    gc.freeze()
    return time.perf_counter() - start
