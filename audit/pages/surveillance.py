"""The surveillance pages (manager, auditor): the latest run of each period
with its charts — the croupiers' funnel, the bankers, the tables and their
CUSUM paths, the shoes, the alerts with links to their flags — and a form to
run over any period (202 and progress, like a report)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from casino.access import route_page
from casino.api import parse_id
from casino.roles import has_capability
from tables.api.views import device_of
from tables.errors import Invalid, ServiceError
from tables.models import Table

from ..models import SurveillanceRun
from ..reports.views import current_gaming_day
from ..selectors import hidden_from
from ..surveillance import runs
from ..surveillance.power import MAX_COUPS
from ..surveillance.selectors import latest_runs, run_alerts
from ..surveillance.words import alert_sentence, test_label


def _names(run: SurveillanceRun | None) -> tuple[dict, dict]:
    """Usernames of the funnel's croupiers, names of the tables."""
    if run is None:
        return {}, dict(Table.objects.values_list("pk", "name"))
    s = run.summary or {}
    ids = [int(p["subject"].split(":", 1)[1])
           for p in s.get("funnel", {}).get("points", [])]
    users = dict(get_user_model().objects.filter(pk__in=ids)
                 .values_list("pk", "username"))
    tables = dict(Table.objects.values_list("pk", "name"))
    return users, tables


def subject_label(subject: str | None, users: dict, tables: dict,
                  sessions: dict | None = None) -> str:
    """"croupier:7" -> his username, "table:3@day:739000" -> the table's name
    and the day, "shoe:12" -> "shoe #12"; a banker by his player card
    ("card:P0105" -> "card P0105") or, without one, by his seat at a session
    ("seat:4@session:2" -> "seat 4, Salon Rouge 1, 2026-12-01")."""
    from datetime import date

    if not subject:
        return "—"
    parts = dict(p.partition(":")[::2] for p in subject.split("@"))
    try:
        if "card" in parts:
            return _("card %(n)s") % {"n": parts["card"]}
        if "seat" in parts and "session" in parts:
            where = (sessions or {}).get(int(parts["session"]))
            if where is None:
                return _("seat %(seat)s, session %(n)s") % {
                    "seat": parts["seat"], "n": parts["session"]}
            return _("seat %(seat)s, %(table)s, %(day)s") % {
                "seat": parts["seat"], "table": where[0], "day": where[1]}
        if "croupier" in parts:
            return str(users.get(int(parts["croupier"]), subject))
        if "table" in parts:
            name = str(tables.get(int(parts["table"]), subject))
            if "day" in parts:
                name += " · " + date.fromordinal(int(parts["day"])).isoformat()
            return name
        if "shoe" in parts:
            return _("shoe #%(n)s") % {"n": parts["shoe"]}
    except (ValueError, OverflowError):
        pass
    return subject


def _sessions(subjects) -> dict:
    """session id -> (its table's name, its gaming day), for the sessions
    that bankers' subjects ("seat:4@session:2") name."""
    from tables.models import TableSession

    ids = set()
    for subject in subjects:
        for part in (subject or "").split("@"):
            if part.startswith("session:") and part[8:].isdigit():
                ids.add(int(part[8:]))
    return {pk: (name, day.isoformat()) for pk, name, day in
            TableSession.objects.filter(pk__in=ids)
            .values_list("pk", "table__name", "gaming_day")}


def _chart_data(run: SurveillanceRun, users: dict, tables: dict) -> dict:
    s = run.summary or {}
    funnel = dict(s.get("funnel") or {})
    funnel["points"] = [
        {**p, "label": users.get(int(p["subject"].split(":", 1)[1]), p["subject"])}
        for p in funnel.get("points", [])]
    cusums = [{"table": t["table"], "key": f"{t['table']}{suffix}", "up": up,
               "label": tables.get(t["table"], t["table"]), **t[name]}
              for name, suffix, up in (("cusum", "", False),
                                       ("cusum_up", "-up", True))
              for t in s.get("tables", []) if t.get(name)]
    return {"funnel": funnel, "cusums": cusums}


def mix_label(cell: str) -> str:
    """A free cell in words: "punter" -> the punter's 5; "3/9" -> the
    banker's 3 against a third card 9; "5/stood" -> with the punter standing."""
    if cell == "punter":
        return _("punter on 5")
    total, _sep, third = cell.partition("/")
    if third == "stood":
        return _("banker on %(total)s, the punter standing") % {"total": total}
    return _("banker on %(total)s against a %(third)s") % {"total": total,
                                                          "third": third}


def _mix(s: dict) -> dict | None:
    mix = s.get("mix")
    if not mix:
        return None
    return {**mix, "cells": [{**c, "label": mix_label(c["cell"])}
                             for c in mix.get("cells", [])]}


def _power(s: dict) -> dict | None:
    """The croupier test's power on this floor: the 3x row said in a
    sentence, the table in the order of the factors (2x, 3x, 5x)."""
    p = s.get("power")
    if not p:
        return None
    rows = sorted(p.get("rows", []), key=lambda r: r["factor"])
    lead = next((r for r in rows if r["factor"] == 3.0), rows[0] if rows else None)
    return {**p, "rows": rows, "table_rows": rows, "lead": lead,
            "max_coups": number_format(MAX_COUPS, force_grouping=True),
            "target_pct": round(100 * p.get("target", 0.9))}


def _page(request, run: SurveillanceRun | None, status: int = 200):
    day, _cutoff = current_gaming_day()
    users, tables = _names(run)
    s = (run.summary or {}) if run else {}
    rows = [{**t, "name": tables.get(t["table"], t["table"])}
            for t in s.get("tables", [])]
    shoes = [{**x, "name": tables.get(x["table"], x["table"])}
             for x in s.get("shoes", [])]
    alerts = run_alerts(run, hidden=hidden_from(request.user)) if run else []
    croupiers = {int(a.subject.split(":", 1)[1]) for a in alerts
                 if a.subject and a.subject.startswith("croupier:")}
    users.update(get_user_model().objects.filter(pk__in=croupiers - set(users))
                 .values_list("pk", "username"))
    bankers = [dict(b) for b in s.get("bankers", [])]
    sessions = _sessions([*(b.get("subject") for b in bankers),
                          *(a.subject for a in alerts)])
    for b in bankers:
        b["label"] = subject_label(b.get("subject"), users, tables, sessions)
    for a in alerts:
        a.label = test_label(a.code)
        a.subject_label = subject_label(a.subject, users, tables, sessions)
        # one sentence a manager reads; the statistics one click away
        who = (_("Croupier %(name)s") % {"name": a.subject_label}
               if (a.subject or "").startswith("croupier:") else a.subject_label)
        a.sentence = alert_sentence(a.code, who[:1].upper() + who[1:],
                                    a.alert_evidence, a.p_value)
    return render(request, "audit/surveillance.html", {
        "run": run, "summary": s,
        "chart": _chart_data(run, users, tables) if run and run.summary else None,
        "tables_rows": rows, "shoes": shoes, "bankers": bankers,
        "mix": _mix(s), "power": _power(s),
        "alerts": alerts,
        "may_open_flags": has_capability(request.user, "flag.read"),
        "latest": latest_runs(),
        "can_run": has_capability(request.user, "surveillance.run"),
        "can_fdr": has_capability(request.user, "surveillance.fdr"),
        "house_fdr": runs.house_fdr(),
        # the last seven gaming days, today's play included
        "default_to": day,
        "default_from": day - timedelta(days=6),
        "tables": Table.objects.order_by("name"),
    }, status=status)


@route_page
def surveillance(request):
    """The latest finished run (any period), its charts and alerts."""
    # a live look's run holds its alerts only, no charts: the page opens on
    # the latest run over a period (its alerts link to their live run)
    run = (SurveillanceRun.objects.filter(status=SurveillanceRun.Status.DONE)
           .exclude(source=SurveillanceRun.Source.LIVE)
           .select_related("requested_by").first())
    return _page(request, run)


@route_page
def surveillance_run(request, pk: int):
    run = get_object_or_404(SurveillanceRun.objects.select_related("requested_by"),
                            pk=pk)
    return _page(request, run)


@require_POST
@route_page
def surveillance_start(request):
    p = request.POST
    tables = [parse_id(t) for t in p.getlist("tables") if t]
    try:
        if None in tables:
            raise Invalid("tables", "must be table ids")
        run = runs.surveillance_request(
            user=request.user, from_day=p.get("from_day", ""),
            to_day=p.get("to_day", ""), table_ids=tables,
            fdr=p.get("fdr") or None, device=device_of(request))
    except ServiceError as exc:
        messages.error(request, f"{exc.field}: {exc.message}")
        return redirect("floor:surveillance")
    run.refresh_from_db()
    if run.dispatched_at is None and run.status == SurveillanceRun.Status.QUEUED:
        messages.warning(request, _("The task queue cannot be reached: run #%(n)s "
                                    "is kept and will start when it is back.")
                         % {"n": run.pk})
    return redirect("floor:surveillance-run", pk=run.pk)


@route_page
def surveillance_progress(request):
    """Progress of the runs the page shows (polled every second or two)."""
    ids = [i for i in map(parse_id, request.GET.getlist("run")) if i][:20]
    return JsonResponse({"runs": [
        {"id": r.pk, "status": r.status, "stage": r.stage, "percent": r.percent,
         "coups": r.coups, "alerts": r.alerts, "error": r.error}
        for r in SurveillanceRun.objects.filter(pk__in=ids)]})
