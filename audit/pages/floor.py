"""Floor, queue, statistics and the trail."""

from __future__ import annotations

from datetime import timedelta
from html import escape
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from casino import signing, timestamps
from casino.access import route_page
from casino.anchors import AnchorError, anchors_freshness, anchors_list
from casino.models import ChangeLog
from casino.roles import has_capability
from casino.trail import trail_verify
from casino.witness import witness_status
from tables import services as floor_services
from tables.api.views import device_of
from tables.errors import ServiceError
from tables.models import Table
from tables.services.holds import held_shoes

from .. import selectors, services, stats
from ..flag_words import option_word
from ..forms import CroupierForm, QueueForm, StatsForm
from .sessions import hand_over_refusal
from .shared import shared


def _floor_tables_html(request) -> str:
    """The open tables' cards, shared between the floor's readers for a few
    seconds (audit/pages/shared.py; rendered without the request, so nothing
    of the reader gets into them). A reader whom surveillance alerts name
    gets his own rendering, without them (selectors.hidden_from)."""
    hidden = selectors.hidden_from(request.user)

    def build() -> str:
        return render_to_string("audit/_floor_tables.html",
                                {"rows": selectors.floor_tables(hidden=hidden)})

    return build() if hidden is not None else shared("tables", build)


def _held_html(request) -> str:
    """The banner of the tables where play is stopped (house rule hold on
    error): each held shoe's table, the finding and where to release it.
    Read for each request (not shared: a release must clear it at once)."""
    return render_to_string("audit/_held_banner.html", {
        "held": held_shoes(),
        "may_release": has_capability(request.user, "shoe.release"),
    })


@route_page
def floor(request):
    services.flags_sync(wait=False)
    return render(request, "audit/floor.html", {
        "held_html": _held_html(request),
        "tables_html": _floor_tables_html(request),
        "closing_html": shared("closing", lambda: render_to_string(
            "audit/_floor_closing.html", {"closing": selectors.closing_work()})),
        "idle": selectors.idle_tables(), "croupier_form": CroupierForm(),
        "may_open": has_capability(request.user, "session.open"),
    })


@require_POST
@route_page
def session_open(request, pk: int):
    """Open a table's session for the croupier the pit boss names (a
    croupier: for himself only, as on the API and the tablet)."""
    table = get_object_or_404(Table, pk=pk)
    if refused := hand_over_refusal(request):
        return refused
    form = CroupierForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose the croupier who runs the table.")
        return redirect("floor:index")
    try:
        session = floor_services.session_open(
            table=table, user=request.user, croupier=form.cleaned_data["croupier"],
            device=device_of(request))
    except ServiceError as exc:
        messages.error(request, f"{table.name}: {exc.message}")
        return redirect("floor:index")
    messages.success(request, f"{table.name} is open; "
                     f"{form.cleaned_data['croupier']} runs it.")
    if not has_capability(request.user, "cagnotte.read"):
        return redirect("tablet:session", session.pk)
    return redirect("floor:session", session.pk)


@route_page
def floor_tables(request):
    """The part of the floor page htmx swaps in every few seconds."""
    services.flags_sync(wait=False)
    return HttpResponse(_held_html(request) + _floor_tables_html(request))


@route_page
def queue(request):
    services.flags_sync(wait=False)
    params = request.GET.copy()
    if "status" not in params:
        params["status"] = "open"
    form = QueueForm(params)
    form.is_valid()
    d = {k: v for k, v in form.cleaned_data.items() if v not in (None, "")}
    page_number = request.GET.get("page")
    # The links keep the filters as understood (not as typed: the body is
    # shared, and another reader's junk parameters have no place in it).
    kept = {k: "" if v is None else str(v)
            for k, v in form.cleaned_data.items() if k in params}
    query = urlencode(kept)

    hidden = selectors.hidden_from(request.user)

    def build() -> str:
        f = selectors.QueueFilter(**{"status": None, **d, "hidden": hidden})
        counts = selectors.flag_counts(f)
        total = counts.pop("total")[0]["count"]
        paginator = Paginator(selectors.flag_queue_ids(f), 50)
        paginator.count = total  # counted above: the same filter, not again
        page = paginator.get_page(page_number)
        page.object_list = selectors.flags_by_id(list(page.object_list))
        return render_to_string("audit/_queue_body.html", {
            "page": page, "total": total,
            "filters": [(name, _options(options, d.get(name), name))
                        for name, options in counts.items()],
            "query": query})

    return render(request, "audit/queue.html", {
        "held_html": _held_html(request),
        # alerts about the reader left out: his own rendering, never shared
        "body": build() if hidden is not None else shared(
            "queue", build, f"{sorted(kept.items())}|{page_number}")})


def _options(options: list[dict], chosen, name: str = "") -> SafeString:
    """A filter's <option>s, "label (count)" each, the chosen one selected:
    joined here, not in the template (hundreds of tables and days; the
    template's loop was half the queue's rendering). A code (finding, side,
    status, severity) is labelled in words; its value stays the code."""
    chosen = None if chosen is None else str(chosen)
    # Each value and label escaped as format_html escapes them (html.escape),
    # at a fifth of its cost: a thousand tables' options.
    out = []
    for o in options:
        value = str(o["value"])
        label = escape(str(option_word(name, o["value"]) or o["label"]))
        selected = " selected" if chosen == value else ""
        out.append(f'<option value="{escape(value)}"{selected}>{label} '
                   f'({int(o["count"])})</option>')
    return mark_safe("".join(out))


@route_page
def stats_page(request):
    form = StatsForm(request.GET or None)
    today = timezone.localdate()
    day_to, day_from, table = today, today - timedelta(days=6), None
    if form.is_valid():
        day_to = form.cleaned_data["day_to"] or day_to
        day_from = form.cleaned_data["day_from"] or day_to - timedelta(days=6)
        table = form.cleaned_data["table"]
    if day_from > day_to:
        day_from, day_to = day_to, day_from
    figures, position = stats.floor_stats(day_from, day_to, table)
    hours = figures["tables"]
    return render(request, "audit/stats.html", {
        "form": form, "day_from": day_from, "day_to": day_to, "table": table,
        "tables": Table.objects.order_by("name"),
        "croupiers": figures["croupiers"], "seats": figures["seats"],
        "hours": hours, "hour_range": _played_hours(hours),
        "data_position": position.as_dict(),
    })


def _played_hours(tables: list[dict]) -> list[int]:
    played = sorted({h for t in tables for h in t["hours"]})
    for t in tables:
        t["row"] = [t["hours"].get(h) for h in played]
    return played


@route_page
def trail(request):
    rows = ChangeLog.objects.select_related("user").order_by("-id")
    action = request.GET.get("action", "").strip()
    if action:
        rows = rows.filter(action__startswith=action)
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    check = trail_verify() if request.GET.get("verify") else None
    try:
        found = anchors_list()
        anchors, anchor_error = found[:20], ""
        # the last anchor's age, and whether anchoring has stopped (the
        # verification's own rule, casino/anchors.py)
        fresh = anchors_freshness(found)
    except AnchorError as exc:
        anchors, anchor_error, fresh = [], str(exc), None
    # the anchors the time-stamp authority has not answered for yet
    # (casino/timestamps.py): the oldest one's wait
    untimed = timestamps.pending_oldest()
    # the witnesses (casino/witness.py): the latest cosigned checkpoint, and a
    # shorter or forked chain named; "Verify the chain" recomputes the
    # cosigned roots as verify_trail does
    witnesses = witness_status(full=check is not None)
    return render(request, "audit/trail.html",
                  {"page": page, "check": check, "action": action,
                   "anchors": anchors, "anchor_error": anchor_error,
                   "fresh": fresh, "untimed": untimed,
                   "untimed_count": timestamps.pending().count() if untimed else 0,
                   "fresh_now": timezone.now(), "witnesses": witnesses,
                   "signing_key": signing.current_public().id,
                   "keys_url": signing.KEYS_URL,
                   "tsa_url": settings.TRAIL_TSA_URL})
