"""A session's closing: close, count the cagnotte, attest; hand over the table."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from casino.access import route_page
from casino.api import parse_id
from casino.roles import has_capability
from tables import services as floor_services
from tables.api.views import device_of
from tables.errors import Forbidden, ServiceError
from tables.models import TableSession
from tables.services import access as floor_access

from .. import selectors, services
from ..forms import CountForm, CroupierForm
from ..models import CagnotteCount, Flag


def _session(pk: int) -> TableSession:
    return get_object_or_404(
        TableSession.objects.select_related("table", "croupier", "opened_by",
                                            "closed_by"), pk=pk)


def _page(request, session, *, count_form=None, croupier_form=None, error=None,
          status=200):
    counts = list(CagnotteCount.objects.filter(session=session)
                  .select_related("counted_by", "attestation__attested_by")
                  .order_by("-counted_at", "-pk"))
    locked = services.session_locked(session)
    user = request.user
    latest = counts[0] if counts else None
    # cagnotte_attest refuses while the variance flag is open: say so here
    # rather than offer the button.
    variance_open = Flag.objects.filter(ident=f"c:{session.pk}",
                                        status=Flag.Status.OPEN).first()
    return render(request, "audit/session.html", {
        "session": session, "counts": counts, "latest": latest, "locked": locked,
        "computed": services.session_commission(session),
        "flags": selectors.visible(Flag.objects.filter(session=session),
                                   selectors.hidden_from(user))
        .order_by("status", "-raised_at"),
        "shoes": session.shoes.prefetch_related("findings").order_by("number"),
        "count_form": count_form or CountForm(),
        "croupier_form": croupier_form or CroupierForm(
            initial={"croupier": session.croupier_id}),
        "error": error,
        "may_close": session.is_open and has_capability(user, "session.close"),
        "may_count": (not session.is_open and not locked
                      and has_capability(user, "cagnotte.count")),
        "may_attest": (latest is not None and not locked
                       and has_capability(user, "cagnotte.attest")
                       and latest.counted_by_id != user.pk
                       and variance_open is None),
        "variance_open": variance_open,
        "may_assign": session.is_open and has_capability(user, "session.assign"),
    }, status=status)


@route_page
def session_page(request, pk: int):
    return _page(request, _session(pk))


@require_POST
@route_page
def session_close(request, pk: int):
    session = _session(pk)
    try:
        floor_services.session_close(session=session, user=request.user,
                                     device=device_of(request))
    except ServiceError as exc:
        return _page(request, session, error=exc, status=exc.status)
    messages.success(request, "Session closed: count the cagnotte box.")
    return redirect("floor:session", session.pk)


@require_POST
@route_page
def count(request, pk: int):
    session = _session(pk)
    form = CountForm(request.POST)
    if not form.is_valid():
        return _page(request, session, count_form=form, status=400)
    try:
        c = services.cagnotte_count(session=session, user=request.user,
                                    device=device_of(request), **form.cleaned_data)
    except ServiceError as exc:
        return _page(request, session, count_form=form, error=exc,
                     status=exc.status)
    if c.variance:
        messages.warning(request, f"Variance {c.variance}: flagged for review.")
    else:
        messages.success(request, "The box matches the commission.")
    return redirect("floor:session", session.pk)


@require_POST
@route_page
def attest(request, pk: int):
    count = get_object_or_404(CagnotteCount, pk=pk)
    session = _session(count.session_id)
    try:
        services.cagnotte_attest(count=count, user=request.user,
                                 device=device_of(request))
    except ServiceError as exc:
        return _page(request, session, error=exc, status=exc.status)
    messages.success(request, "Certifié exact: the session is locked.")
    return redirect("floor:session", session.pk)


def hand_over_refusal(request):
    """The API's rule for naming a table's croupier
    (tables.services.access.hand_over_check: a croupier names himself only),
    asked before the form is read: a 403 that shows nothing; None: go on."""
    try:
        floor_access.hand_over_check(request.user,
                                     parse_id(request.POST.get("croupier")))
    except Forbidden as exc:
        return render(request, "audit/forbidden.html", {"message": exc.message},
                      status=403)
    return None


@require_POST
@route_page
def croupier(request, pk: int):
    session = _session(pk)
    if refused := hand_over_refusal(request):
        return refused
    # A croupier taking the table over (the relief) may not read this page:
    # his answers go back to the tablet, never the session's cagnotte file.
    reads = has_capability(request.user, "cagnotte.read")
    form = CroupierForm(request.POST)
    error = None
    if not form.is_valid():
        if reads:
            return _page(request, session, croupier_form=form, status=400)
        error = "choose the croupier who takes the table"
    else:
        try:
            floor_services.session_croupier_change(
                session=session, croupier=form.cleaned_data["croupier"],
                user=request.user, reason=form.cleaned_data["reason"],
                device=device_of(request))
        except ServiceError as exc:
            if reads:
                return _page(request, session, croupier_form=form, error=exc,
                             status=exc.status)
            error = exc.message
    if error is not None:
        messages.error(request, error)
        return redirect("tablet:tables")
    messages.success(request, f"{form.cleaned_data['croupier']} now runs the table.")
    if not reads:
        return redirect("tablet:session", session.pk)
    return redirect("floor:session", session.pk)
