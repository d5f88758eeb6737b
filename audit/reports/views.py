"""Manager pages: the dashboard, a report's status page, re-audit.

Thin: forms go to the same services as the API; progress is read by the page
from a small JSON view every second or two.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, timedelta
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from casino.api import parse_id
from casino.roles import has_capability
from casino.signing import KEYS_URL
from tables.errors import Invalid, ServiceError
from tables.models import HouseRules, Table, TableauVersion
from tables.services import gaming_day_for

from . import reaudit as reaudit_services
from . import services
from .api import job_file_response, not_dispatched
from .expectation import rules_play
from .models import ReauditRun, ReportJob, Status
from .odds import as_decimal, house_odds
from .selectors import GROUPS, commission_report

ACTIVE = (Status.QUEUED, Status.RUNNING)
DEFAULT_CUTOFF = HouseRules._meta.get_field("gaming_day_cutoff").default


def capability(cap: str):
    def deco(view):
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not has_capability(request.user, cap):
                raise PermissionDenied(f"Your role does not allow {cap}.")
            return view(request, *args, **kwargs)

        return wrapped

    return deco


def current_gaming_day() -> tuple:
    """(the gaming day in progress, its cut-off hour): at 04:00 it is still
    the day that began at the previous morning's cut-off. The cut-off is the
    house rule most active tables play (a house rule, default 06:00)."""
    cutoffs = Counter(
        Table.objects.filter(active=True, rules__isnull=False)
        .values_list("rules__gaming_day_cutoff", flat=True))
    cutoff = cutoffs.most_common(1)[0][0] if cutoffs else DEFAULT_CUTOFF
    return gaming_day_for(timezone.now(), cutoff), cutoff


def table_odds(now=None) -> list[dict]:
    """The exact odds of each distinct set of house rules in use (decks,
    tableau, the cells the house prescribes, rate), with the tables that play
    it today (many tables share the same rules); a version a manager wrote
    for a later gaming day is listed apart, marked with its first day, and
    not as if in force."""
    from tables.services.house import rules_in_force

    now = now or timezone.now()
    groups: dict[tuple, dict] = {}
    for t in Table.objects.filter(active=True).select_related("rules__tableau"):
        if t.rules is None:
            continue
        today = gaming_day_for(now, t.rules.gaming_day_cutoff)
        current = rules_in_force(t, today)
        plays = [(current, None)] if current is not None else []
        if current is None or current.pk != t.rules.pk:
            plays.append((t.rules, t.rules.effective_from))
        for rules, from_day in plays:
            play = rules_play(rules)
            key = (*play, rules.commission_rate, from_day)
            if key not in groups:
                odds = house_odds(decks=play[0], tableau=rules.tableau.as_engine(),
                                  punter_five=play[2],
                                  banker_prescriptions=dict(play[3]))
                groups[key] = {
                    "tables": [], "decks": play[0], "tableau": play[1],
                    "rate": rules.commission_rate, "from_day": from_day,
                    "punter_five": play[2], "banker_cells": list(play[3]),
                    "banker": as_decimal(odds.p_banker, 6),
                    "punter": as_decimal(odds.p_punter, 6),
                    "tie": as_decimal(odds.p_tie, 6),
                    "per_100": as_decimal(
                        odds.expected_commission_per_unit(rules.commission_rate)
                        * 100, 4),
                }
            groups[key]["tables"].append(t.name)
    # today's first, then what is to come, by its first day
    return sorted(groups.values(), key=lambda g: (g["from_day"] is not None,
                                                  g["from_day"] or date.min))


@capability("report.read")
def dashboard(request):
    to_day, cutoff = current_gaming_day()
    from_day = to_day - timedelta(days=29)
    by_day = commission_report(from_day=from_day, to_day=to_day, group_by="gaming_day")
    by_table = commission_report(from_day=from_day, to_day=to_day, group_by="table")
    chart = {
        "days": [d.label for d in by_day.rows],
        "commission": [float(d.commission) for d in by_day.rows],
        "expected": [float(d.expected) for d in by_day.rows],
        "low": [float(d.band_low) for d in by_day.rows],
        "high": [float(d.band_high) for d in by_day.rows],
        "tables": [r.label for r in by_table.rows],
        "table_commission": [float(r.commission) for r in by_table.rows],
        "table_expected": [float(r.expected) for r in by_table.rows],
    }
    return render(request, "reports/dashboard.html", {
        "from_day": from_day, "to_day": to_day, "total": by_day.total,
        "gaming_day": to_day, "cutoff": f"{cutoff:02d}:00",
        "flagged": by_day.flagged, "chart": chart,
        "jobs": ReportJob.objects.select_related("requested_by")[:12],
        "running": ReportJob.objects.filter(status__in=ACTIVE)[:20],
        "reaudits": ReauditRun.objects.all()[:5],
        "odds": table_odds(), "groups": list(GROUPS),
        "chart_tables_height": max(260, 60 + 22 * len(by_table.rows)),
        # the evidence bundle has its own form (a zip, no grouping)
        "kinds": [k for k in ReportJob.Kind.choices if k[0] != "evidence"],
        "formats": [f for f in ReportJob.Format.values if f != "zip"],
        "tableaux": TableauVersion.objects.values_list("version", flat=True),
        "can_request": has_capability(request.user, "report.request"),
        "can_reaudit": has_capability(request.user, "reaudit.run"),
    })


@require_POST
@capability("report.request")
def request_report(request):
    p = request.POST
    try:
        job = services.report_request(
            user=request.user, kind=p.get("kind", ""), format=p.get("format", ""),
            from_day=p.get("from_day", ""), to_day=p.get("to_day", ""),
            group_by=p.get("group_by", "table"), device="reports page",
        )
    except ServiceError as exc:
        messages.error(request, f"{exc.field}: {exc.message}")
        return redirect("reports:dashboard")
    job.refresh_from_db()
    if not_dispatched(job):
        messages.warning(request, f"{services.UNAVAILABLE}: report #{job.pk} is "
                         "kept and will be built when the queue is back.")
    return redirect("reports:job", pk=job.pk)


@capability("report.read")
def job_page(request, pk: int):
    job = get_object_or_404(ReportJob.objects.select_related("requested_by"), pk=pk)
    return render(request, "reports/job.html", {
        "job": job, "stamp_json": json.dumps(job.stamp, indent=2),
        "keys_url": KEYS_URL,
    })


@capability("report.read")
def job_download(request, pk: int):
    job = get_object_or_404(ReportJob, pk=pk)
    try:
        return job_file_response(job, user=request.user, device="reports page")
    except ServiceError as exc:  # no file (404), or not the sealed one (409)
        return HttpResponse(f"{exc.message}\n", status=exc.status,
                            content_type="text/plain; charset=utf-8")


@capability("report.read")
def progress(request):
    """Progress of the running jobs and re-audits (polled by the pages)."""
    ids = [i for i in map(parse_id, request.GET.getlist("job")) if i]
    runs = [i for i in map(parse_id, request.GET.getlist("run")) if i]
    jobs = ReportJob.objects.filter(pk__in=ids) if ids else ReportJob.objects.filter(
        status__in=ACTIVE)[:20]
    return JsonResponse({
        "jobs": [{"id": j.pk, "status": j.status, "percent": j.percent,
                  "rows": j.rows, "rows_expected": j.rows_expected,
                  "error": j.error} for j in jobs],
        "runs": [{"id": r.pk, "status": r.status, "percent": r.percent,
                  "coups": r.coups_checked, "chunks": r.chunks_done,
                  "chunks_total": r.chunks_total, "error": r.error}
                 for r in ReauditRun.objects.filter(pk__in=runs)],
    })


@require_POST
@capability("reaudit.run")
def reaudit_start(request):
    p = request.POST
    # A page that offers the re-audit (a tableau's) names its tables and
    # comes back to itself on a refusal.
    back = p.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    tables = [parse_id(t) for t in p.getlist("tables") if t]
    try:
        if None in tables:
            raise Invalid("tables", "must be table ids")
        run = reaudit_services.reaudit_request(
            user=request.user, from_day=p.get("from_day", ""),
            to_day=p.get("to_day", ""), tableau_version=p.get("tableau_version", ""),
            table_ids=tables, device="reports page",
        )
    except ServiceError as exc:
        messages.error(request, f"{exc.field}: {exc.message}")
        return redirect(back or "reports:dashboard")
    return redirect("reports:reaudit", pk=run.pk)


REAUDIT_ROWS = 200


@capability("report.read")
def reaudit_page(request, pk: int):
    run = get_object_or_404(ReauditRun, pk=pk)
    from .models import ReauditFinding

    rows = (ReauditFinding.objects.filter(run=run)
            .select_related("table", "coup").order_by("gaming_day", "coup_id"))
    return render(request, "reports/reaudit.html", {
        "run": run,
        "appear": rows.filter(change="new")[:REAUDIT_ROWS],
        "disappear": rows.filter(change="cleared")[:REAUDIT_ROWS],
        "limit": REAUDIT_ROWS,
        "tables": Table.objects.filter(pk__in=run.tables or []),
    })
