"""The coup-entry screen and what its script asks the server for.

Recording itself goes through the REST API (POST /api/v1/shoes/{id}/coups/,
with the tablet's Idempotency-Key and expected_seq): this module only serves
the page, its current state as JSON, the recent-coups strip (htmx) and the
service worker that lets the page reload while the Wi-Fi is down.
"""

from __future__ import annotations

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

# Bump when the worker's own logic changes, or when files leave the list (a
# new cache drops them); the asset list is in the script. v2: coup.js split
# into ES modules.
SW_VERSION = "tablet-v2"
# Every file the tablet's pages load, so that the coup screen reloads while
# the Wi-Fi is down: each ES module coup.js imports, directly or not, too
# (tests/tablet/test_modules.py walks the imports and holds this list to them).
COUP_MODULES = (
    "state",
    "dom",
    "words",
    "queue",
    "cards",
    "stakes",
    "result",
    "send",
    "save",
    "accept",
    "screen",
    "keys",
)
# What coup.js imports, directly or through another module: the page names
# them all (<link rel="modulepreload">), so that the browser fetches them at
# once instead of one level of imports after another (a tablet's first load
# on the floor's Wi-Fi; afterwards the service worker has them).
COUP_IMPORTS = (
    "tablet/chemmy.js",
    "tablet/refusals.js",
    *(f"tablet/coup/{m}.js" for m in COUP_MODULES),
)
ASSETS = (
    "vendor/htmx.min.js",
    "tablet/tablet.css",
    "tablet/tablet.js",
    "tablet/pad.js",
    "tablet/coup.js",
    *COUP_IMPORTS,
)


# The seats stand round the map's edge, not on a circle: on an ellipse the
# size of the map, neighbours near its ends (the banker's seat a line taller)
# covered each other and seat 1 the "croupier" label. Top and bottom rows,
# one seat on each side between them; the croupier at the bottom centre (his
# label under the map). The top row hangs from the map's top edge and the
# bottom row stands on its bottom edge (tablet.css, data-row), so a seat a
# few lines taller grows inwards, never past the map or onto the label.
# Percentages of the map's box; tablet.css sizes the seats (narrower past
# ten) so that none covers another at either tablet size
# (tests/tablet/test_seat_positions.py checks every count, 2 to 12).
ROW_TOP, ROW_BOTTOM, SIDE_Y = 0.0, 100.0, 50.0
EDGE, EDGE_MANY = 12.0, 10.0  # the outer seats' centres, from each side
MANY = 10  # past this, five to a row and narrower seats


def _row(count: int, edge: float) -> list[float]:
    """`count` centres spread evenly from one edge to the other."""
    if count == 1:
        return [50.0]
    step = (100.0 - 2 * edge) / (count - 1)
    return [round(edge + i * step, 2) for i in range(count)]


def seat_positions(seats: int) -> list[dict]:
    """Seats from the croupier's right (bottom row, right of centre) round
    the table: up the right side, the top row right to left, down the left
    side, and the bottom row back towards the croupier."""
    many = seats > MANY
    edge = EDGE_MANY if many else EDGE
    sides = 2 if seats >= 5 else 0
    if many:
        top = 5
    else:
        top = (seats - sides) // 2
    bottom = seats - sides - top
    grid = _row(5 if many else 4, edge)
    right = [x for x in grid if x >= 50.0]
    left = [x for x in grid if x < 50.0]
    if 50.0 in right and bottom < 5:
        right.remove(50.0)  # the croupier's own place, kept while there is room
    n_right = (bottom + 1) // 2
    n_left = bottom - n_right
    order: list[tuple[float, float]] = []
    order += [(x, ROW_BOTTOM) for x in right[:n_right]]
    if sides:
        order.append((100.0 - edge, SIDE_Y))
    order += [(x, ROW_TOP) for x in reversed(_row(top, edge))]
    if sides:
        order.append((edge, SIDE_Y))
    order += [(x, ROW_BOTTOM) for x in left[len(left) - n_left:]]
    rows = {ROW_TOP: "top", ROW_BOTTOM: "bottom", SIDE_Y: "side"}
    return [
        {"n": k + 1, "x": x, "y": y, "row": rows[y], "many": many}
        for k, (x, y) in enumerate(order)
    ]


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
            "preload": [static(a) for a in COUP_IMPORTS],
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
