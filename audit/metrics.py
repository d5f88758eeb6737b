"""`/metrics` for Prometheus: what the web process measured (casino/metrics.py)
and the floor's state read from the database at the scrape.

Why read the state at the scrape rather than count it as it happens: flags,
held shoes, anchors, the ledger check and the jobs of the Celery workers live
in the database and in TRAIL_ANCHOR_DIR, shared by every node. Read there,
any web node answers for the whole cluster, a restart loses nothing, and the
workers (on any machine) need no port of their own. Each read is small: the
table-day rollups (a few thousand rows a year), the open flags, the open
shoes, the job rows, and the health checks (casino/health.py).

Access: a request with ``Authorization: Bearer <METRICS_TOKEN>``, or a
signed-in staff user (casino.access ROUTES: STAFF). Anything else: 403 (401
without credentials). Keep the endpoint on the internal network as well
(the load balancer need not route it).
"""

from __future__ import annotations

import hmac
import math
import os

from django.conf import settings
from django.db.models import Count, Sum
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.multiprocess import MultiProcessCollector

from casino import metrics as web

# A report takes 0.1 s to a minute; a surveillance run or a re-audit up to
# several minutes (docs/benchmarks.md, Scale).
JOB_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


def _jobs(model, kind_of) -> list[tuple[str, str, float | None]]:
    """(kind, status, seconds or None) of every job row."""
    rows = model.objects.values_list("status", "started_at", "finished_at",
                                     *kind_of)
    out = []
    for status, started, finished, *kind in rows:
        seconds = ((finished - started).total_seconds()
                   if started and finished else None)
        out.append(("_".join(str(k) for k in kind), status, seconds))
    return out


class FloorCollector:
    """The database's state, at each scrape."""

    def collect(self):
        from audit.models import Flag, SurveillanceRun
        from audit.reports.models import ReauditRun, ReportJob
        from tables.models import Shoe, TableDayRollup

        coups = CounterMetricFamily(
            "casino_coups", "Coups stored, all tables (current revisions; from "
            "the table-day rollups)")
        coups.add_metric([], TableDayRollup.objects.aggregate(
            n=Sum("coups"))["n"] or 0)
        yield coups

        by_code: dict[str, int] = {}
        for findings in TableDayRollup.objects.exclude(findings={}).values_list(
                "findings", flat=True):
            for code, n in (findings or {}).items():
                by_code[code] = by_code.get(code, 0) + int(n)
        findings = GaugeMetricFamily(
            "casino_findings", "Findings of the stored coups (current revisions), "
            "by code", labels=["code"])
        for code, n in sorted(by_code.items()):
            findings.add_metric([code], n)
        yield findings

        flags = GaugeMetricFamily(
            "casino_flags_open", "Flags open in the review queue, by severity and "
            "kind (kind=\"all\": every kind, always there for both severities)",
            labels=["severity", "kind"])
        totals = {"warning": 0, "critical": 0}
        counts = (Flag.objects.filter(status=Flag.Status.OPEN)
                  .values_list("severity", "kind").annotate(n=Count("id")))
        for severity, kind, n in counts:
            flags.add_metric([severity, kind], n)
            totals[severity] = totals.get(severity, 0) + n
        for severity, n in totals.items():
            flags.add_metric([severity, "all"], n)
        yield flags

        held = list(Shoe.objects.filter(held_by_seq__isnull=False,
                                        closed_at__isnull=True)
                    .values_list("id", "session__table__name"))
        shoes = GaugeMetricFamily("casino_shoes_held",
                                  "Open shoes held by a critical finding")
        shoes.add_metric([], len(held))
        yield shoes
        each = GaugeMetricFamily(
            "casino_shoe_held", "1 for each open shoe held by a critical finding",
            labels=["table", "shoe"])
        for shoe_id, table in held:
            each.add_metric([table, str(shoe_id)], 1)
        yield each

        jobs = (_jobs(ReportJob, ("kind", "format"))
                + [("surveillance", s, t) for _, s, t in _jobs(SurveillanceRun, ())]
                + [("reaudit", s, t) for _, s, t in _jobs(ReauditRun, ())])
        yield from _job_metrics(jobs)

    def describe(self):
        return []


def _job_metrics(jobs):
    total = CounterMetricFamily(
        "casino_jobs", "Report, surveillance and re-audit jobs ever requested, "
        "by kind and status (queued, running, done, failed)",
        labels=["kind", "status"])
    count: dict[tuple[str, str], int] = {}
    for kind, status, _ in jobs:
        count[(kind, status)] = count.get((kind, status), 0) + 1
    for kind in sorted({k for k, _ in count} | {"surveillance", "reaudit"}):
        for status in ("queued", "running", "done", "failed"):
            total.add_metric([kind, status], count.get((kind, status), 0))
    yield total
    seconds = HistogramMetricFamily(
        "casino_job_duration_seconds", "Time from a job's start to its end (done "
        "or failed), by kind", labels=["kind"])
    by_kind: dict[str, list[float]] = {}
    for kind, _, took in jobs:
        if took is not None:
            by_kind.setdefault(kind, []).append(took)
    for kind, values in sorted(by_kind.items()):
        buckets = [(str(b), sum(1 for v in values if v <= b)) for b in JOB_BUCKETS]
        buckets.append(("+Inf", len(values)))
        seconds.add_metric([kind], buckets, sum_value=sum(values))
    yield seconds


class HealthCollector:
    """The health checks (casino/health.py) as numbers: up per check, the
    anchor's and the ledger check's ages, the last check's differences."""

    def collect(self):
        from casino.health import health_run

        results = {r.name: r for r in health_run()}
        up = GaugeMetricFamily("casino_health_up",
                               "1 when the check passes (casino/health.py)",
                               labels=["check"])
        for name, r in results.items():
            up.add_metric([name], int(r.ok))
        yield up

        def gauge(name, doc, value):
            if value is not None and not (isinstance(value, float)
                                          and math.isnan(value)):
                g = GaugeMetricFamily(name, doc)
                g.add_metric([], value)
                yield g

        anchors = results["anchors"].values
        yield from gauge("casino_anchor_age_seconds",
                         "Age of the newest anchor of the trail's head",
                         anchors.get("age_seconds"))
        yield from gauge("casino_anchor_interval_seconds",
                         "TRAIL_ANCHOR_MINUTES, in seconds",
                         settings.TRAIL_ANCHOR_MINUTES * 60)
        yield from gauge("casino_anchors_stale",
                         "1 when rows of the trail stay unanchored past 2 x "
                         "TRAIL_ANCHOR_MINUTES", anchors.get("stale"))
        ledger = results["ledger_check"].values
        yield from gauge("casino_ledger_check_age_seconds",
                         "Age of the last ledger check (verify_ledger, nightly)",
                         ledger.get("age_seconds"))
        yield from gauge("casino_ledger_differences",
                         "Differences the last ledger check found",
                         ledger.get("differences"))
        yield from gauge("casino_worker_heartbeat_age_seconds",
                         "Age of the newest Celery worker heartbeat",
                         results["worker"].values.get("age_seconds"))
        yield from gauge("casino_workers", "Celery workers beating",
                         results["worker"].values.get("workers"))
        yield from gauge("casino_beat_last_run_age_seconds",
                         "Age of beat's newest run of a schedule",
                         results["beat"].values.get("age_seconds"))

    def describe(self):
        return []


def _allowed(request) -> bool:
    token = settings.METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    if token and given.startswith("Bearer "):
        return hmac.compare_digest(given[len("Bearer "):].strip().encode(),
                                   token.encode())
    from casino.access import STAFF, allows

    return allows(request.user, STAFF)


@never_cache
def metrics_view(request):
    if not _allowed(request):
        status = 403 if (request.user.is_authenticated
                         or "Authorization" in request.headers) else 401
        return JsonResponse({"detail": "a metrics token or a staff user"},
                            status=status)
    registry = CollectorRegistry(auto_describe=False)
    if web.MULTIPROCESS:
        MultiProcessCollector(registry, os.environ["PROMETHEUS_MULTIPROC_DIR"])
        own = []
    else:
        own = [generate_latest(web.REGISTRY)]
    registry.register(FloorCollector())
    registry.register(HealthCollector())
    body = b"".join([*own, generate_latest(registry)])
    return HttpResponse(body, content_type="text/plain; version=0.0.4; "
                                           "charset=utf-8")

