"""What a web process measures itself, for Prometheus (prometheus-client).

Two kinds of figures reach `/metrics` (audit/metrics.py):

- measured here, in the web process that answers: the coup request's latency
  (a histogram) and the coups it recorded. Under gunicorn each worker process
  keeps its own, so they are written to files in ``PROMETHEUS_MULTIPROC_DIR``
  (prometheus-client's multiprocess mode; the variable must be set in
  gunicorn's environment before it starts, the directory empty at each start)
  and summed at the scrape by whichever process answers. Without it (runserver,
  tests) they live in this process. Only counters and histograms are kept
  here: they sum across processes, dead ones included, with no hook;
- read from the database at the scrape (audit/metrics.py): everything that is
  state (flags open, held shoes, the anchor's age, the last ledger check, the
  jobs of the Celery workers on any machine). One truth for the whole cluster,
  whichever web node is scraped, with nothing to lose at a restart and nothing
  to configure on the workers.

Every instrument here has labels, so a process that never observes one (a
Celery worker, a command) writes no file.
"""

from __future__ import annotations

import os
import time

from prometheus_client import CollectorRegistry, Counter, Histogram

# The in-process registry (no PROMETHEUS_MULTIPROC_DIR); in multiprocess mode
# the values go to files whatever the registry, and the scrape reads those.
REGISTRY = CollectorRegistry(auto_describe=True)
MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

# A coup is 10-40 ms at p50 and its aim is 100 ms at p99 (bench/bench_floor.py).
COUP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5,
                5.0, 10.0)

COUP_SECONDS = Histogram(
    "casino_coup_request_seconds",
    "Time to answer a coup request (POST shoes/{id}/coups/ and coups/accept/), "
    "by status class",
    ["status"], buckets=COUP_BUCKETS, registry=REGISTRY,
)
COUPS_RECORDED = Counter(
    "casino_coups_recorded",
    "Coups stored by this web node's coup requests (201; a replay is not "
    "counted)",
    ["path"], registry=REGISTRY,
)

# Entries of the shared cache (Redis) read back and refused: their signature
# does not hold, or they are past their time (casino/cache.py). Anything but
# zero means someone wrote to Redis who is not this app.
CACHE_REFUSED = Counter(
    "casino_cache_refused",
    "Cache entries read from Redis and refused (a miss): by reason, signature "
    "or expired",
    ["reason"], registry=REGISTRY,
)

COUP_VIEWS = {"api-coup-record": "record", "api-coup-accept": "accept"}


class CoupTimingMiddleware:
    """Times the coup endpoints (by URL name, resolved once Django routed the
    request): one histogram observation and, on 201, one coup recorded."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        start = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        path = COUP_VIEWS.get(match.view_name) if match else None
        if path is not None and request.method == "POST":
            status = f"{response.status_code // 100}xx"
            COUP_SECONDS.labels(status=status).observe(time.perf_counter() - start)
            if response.status_code == 201:
                COUPS_RECORDED.labels(path=path).inc()
        return response
