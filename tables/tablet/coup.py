"""The coup-entry screen and what its script asks the server for.

Recording itself goes through the REST API (POST /api/v1/shoes/{id}/coups/,
with the tablet's Idempotency-Key and expected_seq): this module only serves
the page, its current state as JSON, the recent-coups strip (htmx) and the
service worker that lets the page reload while the Wi-Fi is down.
"""

from __future__ import annotations

import math

from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from casino.roles import has_capability, works_at

from ..cards import SUIT_SYMBOLS, rank_keys, suit_names
from ..models import Shoe
from ..rollups import current_coups
from ..services.access import read_check
from .state import js_strings, quick_amounts, shoe_state
from .views import refusal, tablet_view

# Bump when the worker's own logic changes; the asset list is in the script.
SW_VERSION = "tablet-v1"
ASSETS = (
    "vendor/htmx.min.js",
    "tablet/tablet.css",
    "tablet/chemmy.js",
    "tablet/refusals.js",
    "tablet/pad.js",
    "tablet/coup.js",
    "tablet/tablet.js",
)


def seat_positions(seats: int) -> list[dict]:
    """Seats around an oval, from the croupier's right (bottom centre) round
    the table; percentages of the map's box."""
    gap = 50.0  # degrees left free for the croupier at the bottom
    step = (360.0 - gap) / max(seats - 1, 1)
    out = []
    for k in range(seats):
        angle = math.radians(90.0 - gap / 2 - k * step)
        out.append(
            {
                "n": k + 1,
                "x": round(50 + 42 * math.cos(angle), 2),
                "y": round(50 + 38 * math.sin(angle), 2),
            }
        )
    return out


def card_keys() -> tuple[list[dict], list[dict]]:
    # The same labels as every card written for a person (tables/cards.py).
    names = rank_keys()
    ranks = []
    for code in "A23456789TJQK":
        name, label = names.get(code, (code, code))
        ranks.append({"code": code, "name": name, "label": label})
    suit = suit_names()
    suits = [
        {"code": c, "name": suit[c], "symbol": SUIT_SYMBOLS[c]} for c in "SHDC"
    ]
    return ranks, suits


def _shoe(shoe_id: int) -> Shoe:
    return get_object_or_404(
        Shoe.objects.select_related("session__table__rules__tableau"), pk=shoe_id
    )


@never_cache
@tablet_view()
def coup_screen(request, shoe_id: int):
    shoe = _shoe(shoe_id)
    state = shoe_state(shoe)
    if (
        not shoe.is_open
        or not shoe.session.is_open
        or state["turn"] is None
        or not works_at(request.user, shoe.session)
    ):
        return redirect("tablet:session", shoe.session_id)
    state["urls"] = {
        "record": reverse("api-coup-record", args=[shoe.pk]),
        "state": reverse("tablet:state", args=[shoe.pk]),
        "session": reverse("tablet:session", args=[shoe.session_id]),
        "recent": reverse("tablet:recent", args=[shoe.pk]),
    }
    state["user"] = request.user.get_username()
    # Each queued coup keeps who entered it; the queue is sent only under him.
    state["user_id"] = request.user.pk
    state["user_name"] = request.user.get_full_name() or state["user"]
    state["urls"]["accept"] = reverse("tablet:accept")
    state["quick_amounts"] = quick_amounts(shoe.session.house_rules.minimum_banco)
    state["language"] = request.LANGUAGE_CODE
    state["urls"]["pass_template"] = reverse("tablet:turn-pass", args=[0])
    ranks, suits = card_keys()
    return render(
        request,
        "tablet/coup.html",
        {
            "shoe": shoe,
            "table": shoe.session.table,
            "state": state,
            "strings": js_strings(),
            "seat_positions": seat_positions(shoe.session.table.seats),
            "ranks": ranks,
            "suits": suits,
            "can_pass": has_capability(request.user, "turn.manage"),
        },
    )


@never_cache
@require_GET
@tablet_view("table.read")
def shoe_state_json(request, shoe_id: int):
    shoe = _shoe(shoe_id)
    if refused := refusal(request, shoe.session, read_check):
        return refused
    return JsonResponse(shoe_state(shoe))


@never_cache
@require_GET
@tablet_view("table.read")
def recent_coups(request, shoe_id: int):
    """The last coups of the shoe: an htmx fragment, refreshed after each coup."""
    shoe = get_object_or_404(Shoe.objects.select_related("session"), pk=shoe_id)
    if refused := refusal(request, shoe.session, read_check):
        return refused
    # Each coup once, as it stands now: a correction is a new revision (the
    # old one stays, the floor's coup page shows the history), marked here.
    coups = (
        current_coups()
        .filter(shoe_id=shoe.pk)
        .select_related("entered_by", "corrected_by")
        .order_by("-seq")[:6]
    )
    return render(request, "tablet/_recent.html", {"coups": coups})


@require_GET
def service_worker(request):
    """Served from /tablet/ so that its scope covers the tablet's pages."""
    body = render(
        request,
        "tablet/sw.js",
        {"version": SW_VERSION, "assets": [static(a) for a in ASSETS]},
        content_type="text/javascript",
    ).content
    response = HttpResponse(body, content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["Service-Worker-Allowed"] = "/tablet/"
    return response
