"""The tablet's set-up screens: pick a table, open or rejoin its session, open
a shoe, open a bank (or take a passed one), pass the bank, close the shoe.

Views are thin: a form checks what a croupier may mistype, a service does
the work (and its refusals come back as form errors). Coup entry is in
``coup.py``; lock screen, PIN and language in ``lock.py``.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from casino.roles import has_capability, works_at

from .. import services
from ..errors import Forbidden, Invalid, ServiceError
from ..models import BankerTurn, Shoe, Table, TableSession
from ..services.access import croupier_check, read_check
from .forms import ShoeCloseForm, ShoeOpenForm, TurnOpenForm
from .state import turn_dict

LOCK_KEY = "tablet_locked"


def device_of(request) -> str:
    return (request.headers.get("X-Device") or request.headers.get("User-Agent") or "")[
        :200
    ]


def tablet_view(capability: str = "coup.record"):
    """Signed in (or sent to the lock screen if this tablet was locked), and a
    role that holds ``capability``."""

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                if request.session.get(LOCK_KEY):
                    return redirect("tablet:unlock")
                return redirect_to_login(request.get_full_path())
            if not has_capability(request.user, capability):
                return render(
                    request,
                    "tablet/forbidden.html",
                    {"capability": capability},
                    status=403,
                )
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def refusal(request, session: TableSession, check=croupier_check):
    """The API's own-table check (tables.services.access), answered as a page:
    a 403 that shows nothing of that session; None when the user may go on.
    ``check``: croupier_check to act there (every POST), read_check to read."""
    try:
        check(request.user, session)
    except Forbidden as exc:
        return render(
            request, "tablet/forbidden.html", {"message": exc.message}, status=403
        )
    return None


RELIEF_REASON = "relief take-over at the tablet"


def take_over(request, session: TableSession) -> bool:
    """Make the signed-in croupier the one who runs ``session`` (a relief).
    The service logs it; False when the role may not take a table over."""
    if works_at(request.user, session):
        return True
    if not has_capability(request.user, "session.assign"):
        return False
    services.session_croupier_change(
        session=session,
        croupier=request.user,
        user=request.user,
        reason=RELIEF_REASON,
        device=device_of(request),
    )
    return True


def _service_error(form, exc: ServiceError) -> None:
    field = exc.field if exc.field in form.fields else None
    form.add_error(field, exc.message)


@tablet_view()
def tables(request):
    open_sessions = TableSession.objects.filter(closed_at__isnull=True).select_related(
        "opened_by", "croupier"
    )
    rows = (
        Table.objects.filter(active=True)
        .select_related("rules")
        .prefetch_related(Prefetch("sessions", open_sessions, to_attr="open"))
        .order_by("name")
    )
    return render(request, "tablet/tables.html", {"tables": rows})


@require_POST
@tablet_view("session.open")
def session_start(request, table_id: int):
    """Open the table's session, or rejoin the one already open (taking it
    over, logged, when another croupier was running it)."""
    table = get_object_or_404(Table, pk=table_id, active=True)
    current = table.sessions.filter(closed_at__isnull=True).first()
    if current is None:
        try:
            current = services.session_open(
                table=table, user=request.user, device=device_of(request)
            )
        except ServiceError:
            current = table.sessions.filter(closed_at__isnull=True).first()
            if current is None:
                raise
    try:
        take_over(request, current)
    except ServiceError:
        pass  # closed meanwhile: the hub says so
    return redirect("tablet:session", current.pk)


def _session(session_id: int) -> TableSession:
    return get_object_or_404(
        TableSession.objects.select_related("table__rules__tableau"), pk=session_id
    )


def _rotation(seat: int, seats: int) -> list[int]:
    order, s = [], seat
    for _n in range(seats - 1):
        s = services.next_seat(s, seats)
        order.append(s)
    return order


def _hub_context(
    request, session: TableSession, shoe_form=None, turn_form=None, close_form=None
) -> dict:
    table = session.table
    rules = session.house_rules  # the version this session plays
    shoe = session.shoes.filter(closed_at__isnull=True).first()
    turn = session.turns.filter(closed_at__isnull=True).first()
    last_turn, offer = services.passed_bank_offer(session)
    default_seat = 1
    if last_turn is not None:
        default_seat = services.next_seat(last_turn.seat, table.seats)
    if shoe_form is None:
        shoe_form = ShoeOpenForm(initial={"decks": rules.decks, "burned": 0})
    if turn_form is None:
        turn_form = TurnOpenForm(
            seats=table.seats,
            minimum_banco=rules.minimum_banco,
            initial={"seat": default_seat, "bank": rules.minimum_banco},
        )
    return {
        "session": session,
        "table": table,
        "rules": rules,
        "shoe": shoe,
        "turn": turn,
        "last_turn": last_turn,
        "last_turn_info": turn_dict(last_turn),
        "offer": offer,
        "offer_order": _rotation(last_turn.seat, table.seats) if offer else [],
        "default_seat": default_seat,
        "seat_numbers": range(1, table.seats + 1),
        "shoe_form": shoe_form,
        "turn_form": turn_form,
        "close_form": close_form or ShoeCloseForm(),
        "can_close_session": has_capability(request.user, "session.close"),
    }


@tablet_view()
def session_hub(request, session_id: int):
    """Where a session stands: a shoe to open, a bank to open, or the coup
    screen when both are there."""
    session = _session(session_id)
    if session.is_open and not works_at(request.user, session):
        # The relief's way in: the table's name and who runs it, as the
        # table list shows them, and the take-over button; nothing more.
        return render(request, "tablet/takeover.html", {"session": session})
    refused = refusal(request, session, read_check)
    if refused:
        return refused
    ctx = _hub_context(request, session)
    if session.is_open and ctx["shoe"] is not None and ctx["turn"] is not None:
        return redirect("tablet:coup", ctx["shoe"].pk)
    return render(request, "tablet/session.html", ctx)


def _hub_form_submit(request, session, form, service, form_name: str):
    """Run a session-hub form through its service: back to the hub on success,
    the hub again with the errors (field-named) and a 400 otherwise."""
    if form.is_valid():
        try:
            service(
                session=session,
                user=request.user,
                device=device_of(request),
                **form.cleaned_data,
            )
            return redirect("tablet:session", session.pk)
        except ServiceError as exc:
            _service_error(form, exc)
    ctx = _hub_context(request, session, **{form_name: form})
    return render(request, "tablet/session.html", ctx, status=400)


@require_POST
@tablet_view("shoe.manage")
def shoe_open(request, session_id: int):
    session = _session(session_id)
    if refused := refusal(request, session):
        return refused
    form = ShoeOpenForm(request.POST)
    return _hub_form_submit(request, session, form, services.shoe_open, "shoe_form")


@require_POST
@tablet_view("turn.manage")
def turn_open(request, session_id: int):
    """A new bank at any seat, at least the minimum banco."""
    session = _session(session_id)
    if refused := refusal(request, session):
        return refused
    table = session.table
    form = TurnOpenForm(
        request.POST,
        seats=table.seats,
        minimum_banco=session.house_rules.minimum_banco,
    )
    return _hub_form_submit(
        request, session, form, services.banker_turn_open, "turn_form"
    )


@require_POST
@tablet_view("turn.manage")
def bank_take(request, session_id: int):
    """A seat takes the passed bank at its standing amount (docs/rules.md,
    "Banker turns and the suite")."""
    session = _session(session_id)
    if refused := refusal(request, session):
        return refused
    last, offer = services.passed_bank_offer(session)
    try:
        seat = int(request.POST.get("seat", ""))
    except ValueError:
        seat = 0
    if offer is None or seat not in _rotation(last.seat, session.table.seats):
        return redirect("tablet:session", session.pk)
    try:
        services.banker_turn_open(
            session=session,
            user=request.user,
            device=device_of(request),
            seat=seat,
            bank=offer,
            player_card=request.POST.get("player_card", ""),
        )
    except ServiceError as exc:
        ctx = _hub_context(request, session)
        ctx["error"] = exc.message
        return render(request, "tablet/session.html", ctx, status=409)
    return redirect("tablet:session", session.pk)


@require_POST
@tablet_view("turn.manage")
def turn_pass(request, turn_id: int):
    turn = get_object_or_404(BankerTurn.objects.select_related("session"), pk=turn_id)
    if refused := refusal(request, turn.session):
        return refused
    try:
        services.banker_turn_pass(
            turn=turn, user=request.user, device=device_of(request)
        )
    except ServiceError:
        pass  # already over: the hub shows where things stand
    return redirect("tablet:session", turn.session_id)


def _closed_message(request, shoe: Shoe) -> None:
    """After the close, on the hub: the count agrees, or by how much it
    differs (the shoe_count finding is then on its way to the pit boss)."""
    counted = shoe.left_counted
    if counted is None:
        return
    expected = shoe.cards_left  # what the shoe should still hold
    diff = abs(counted - expected)
    if diff == 0:
        text = ngettext(
            "Shoe %(n)s closed: the count agrees (%(left)s card left).",
            "Shoe %(n)s closed: the count agrees (%(left)s cards left).",
            counted,
        ) % {"n": shoe.number, "left": counted}
        messages.success(request, text)
        return
    text = ngettext(
        "Shoe %(n)s closed: the count differs by %(diff)s card (counted "
        "%(counted)s, expected %(expected)s). The pit boss is told.",
        "Shoe %(n)s closed: the count differs by %(diff)s cards (counted "
        "%(counted)s, expected %(expected)s). The pit boss is told.",
        diff,
    ) % {"n": shoe.number, "diff": diff, "counted": counted, "expected": expected}
    messages.warning(request, text)


@require_POST
@tablet_view("shoe.manage")
def shoe_close(request, shoe_id: int):
    """Close the shoe with the cards counted left in it (required here)."""
    shoe = get_object_or_404(Shoe.objects.select_related("session"), pk=shoe_id)
    if refused := refusal(request, shoe.session):
        return refused
    form = ShoeCloseForm(request.POST)
    if form.is_valid():
        try:
            closed = services.shoe_close(
                shoe=shoe,
                user=request.user,
                device=device_of(request),
                cards_left=form.cleaned_data["cards_left"],
            )
            _closed_message(request, closed)
            return redirect("tablet:session", shoe.session_id)
        except Invalid as exc:
            _service_error(form, exc)
        except ServiceError:
            return redirect("tablet:session", shoe.session_id)  # already closed
    session = _session(shoe.session_id)
    ctx = _hub_context(request, session, close_form=form)
    return render(request, "tablet/session.html", ctx, status=400)


@require_POST
@tablet_view("session.close")
def session_close(request, session_id: int):
    session = _session(session_id)
    if refused := refusal(request, session):
        return refused
    try:
        services.session_close(
            session=session, user=request.user, device=device_of(request)
        )
    except ServiceError:
        pass
    return redirect(reverse("tablet:tables"))

