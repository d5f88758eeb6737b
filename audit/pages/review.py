"""A flag's file and the decisions on it; a coup's revisions; corrections."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from casino.access import route_page
from casino.api import parse_id
from casino.roles import has_capability
from tables import services as floor_services
from tables.api.views import device_of
from tables.chemmy import CoupError
from tables.errors import ServiceError
from tables.models import Coup
from tables.tablet.coup import card_keys

from .. import selectors, services
from ..forms import (
    ANNOUNCEMENTS,
    ConfirmForm,
    CorrectionForm,
    ReasonForm,
    rows_from_post,
    stake_rows_for,
)
from ..models import Flag


def _flag(pk: int, user) -> Flag:
    """The flag, unless it is a surveillance alert about the reader (404:
    the croupier never sees alerts about himself)."""
    return get_object_or_404(selectors.visible(
        Flag.objects.select_related("table", "croupier", "decided_by", "author",
                                    "coup__rules", "coup__entered_by", "finding",
                                    "session", "shoe", "count"),
        selectors.hidden_from(user)), pk=pk)


def _flag_page(request, flag, *, confirm=None, dismiss=None, error=None, status=200):
    file = selectors.flag_file(flag)
    # The service's own four-eyes rule, so the page never offers a decision
    # the service would refuse (and the POSTs below go through the service).
    own = not services.may_decide(flag, request.user)
    may_review = (has_capability(request.user, "flag.review") and flag.is_open
                  and not own)
    sanction = flag.coup.rules.false_draw_sanction if flag.coup else "none"
    if flag.kind == Flag.Kind.SURVEILLANCE:
        from ..surveillance.selectors import flag_evidence

        file.update(flag_evidence(flag))
    return render(request, "audit/flag.html", {
        **file, "confirm_form": confirm or ConfirmForm(),
        "dismiss_form": dismiss or ReasonForm(), "error": error,
        "may_review": may_review, "own": own,
        **_correction_links(request.user, flag.coup),
        "sanction": sanction,
    }, status=status)


@route_page
def flag_page(request, pk: int):
    return _flag_page(request, _flag(pk, request.user))


def _error_status(exc) -> int:
    return getattr(exc, "status", 400)


@require_POST
@route_page
def flag_confirm(request, pk: int):
    flag = _flag(pk, request.user)
    form = ConfirmForm(request.POST)
    if not form.is_valid():
        return _flag_page(request, flag, confirm=form, status=400)
    try:
        services.flag_confirm(flag=flag, user=request.user, device=device_of(request),
                              **form.cleaned_data)
    except ServiceError as exc:
        return _flag_page(request, flag, confirm=form, error=exc,
                          status=_error_status(exc))
    messages.success(request, _("Flag %(n)s confirmed.") % {"n": flag.pk})
    return redirect("floor:flag", flag.pk)


@require_POST
@route_page
def flag_dismiss(request, pk: int):
    flag = _flag(pk, request.user)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return _flag_page(request, flag, dismiss=form, status=400)
    try:
        services.flag_dismiss(flag=flag, user=request.user, device=device_of(request),
                              reason=form.cleaned_data["reason"])
    except ServiceError as exc:
        return _flag_page(request, flag, dismiss=form, error=exc,
                          status=_error_status(exc))
    messages.success(request, _("Flag %(n)s dismissed.") % {"n": flag.pk})
    return redirect("floor:flag", flag.pk)


@route_page
def coup_page(request, pk: int):
    coup = get_object_or_404(Coup.objects.select_related("shoe__session__table"),
                             pk=pk)
    revisions = selectors.coup_history(coup)
    flags = Flag.objects.filter(shoe_id=coup.shoe_id, seq=coup.seq)
    return render(request, "audit/coup.html", {
        "coup": coup, "revisions": revisions, "current": revisions[-1],
        "flags": flags,
        **_correction_links(request.user, revisions[-1]),
    })


def _correction_links(user, coup) -> dict:
    """Whether the page links to a correction of `coup`, and, for a pit boss
    whom four eyes bar from it, why not: said where the link would be, never
    only after the form is filled in."""
    if coup is None or not has_capability(user, "coup.correct"):
        return {"may_correct": False, "correction_barred": ""}
    barred = floor_services.correction_barred(coup, user)
    return {"may_correct": not barred, "correction_barred": barred}


@route_page
def correct(request, pk: int):
    """GET: the form, filled with the current revision. POST: preview (the
    money difference, nothing written); POST with the preview's digest:
    write it (and dismiss the flag it came from, if asked)."""
    coup = get_object_or_404(Coup.objects.select_related("shoe__session__table"),
                             pk=pk)
    history = selectors.coup_history(coup)
    current = history[-1]
    flag = None
    flag_id = request.GET.get("flag") or request.POST.get("flag")
    if parse_id(flag_id):
        flag = Flag.objects.filter(pk=parse_id(flag_id)).first()
    ctx = {"coup": current, "flag": flag, "announcements": ANNOUNCEMENTS,
           "plan": None, "error": None,
           "dismiss": (request.GET.get("dismiss") or request.POST.get("dismiss"))
           == "1"}
    barred = floor_services.correction_barred(current, request.user)
    if barred:
        # Four eyes, said at the start: no form to fill in for nothing.
        ctx["barred"] = barred
        return render(request, "audit/correct.html", ctx, status=403)
    ctx["ranks"], ctx["suits"] = card_keys()  # the tablet's card pad
    if request.method == "GET":
        ctx["form"] = CorrectionForm(initial=CorrectionForm.initial_for(current))
        ctx["stake_rows"] = stake_rows_for(current)
        return render(request, "audit/correct.html", ctx)
    form = CorrectionForm(request.POST)
    ctx["form"], ctx["stake_rows"] = form, rows_from_post(request.POST)
    if not form.is_valid():
        return render(request, "audit/correct.html", ctx, status=400)
    punter, banker = form.hands()
    kwargs = {"punter": punter, "banker": banker, "stakes": form.stakes(),
              "declared_bank": form.cleaned_data.get("declared_bank")}
    digest = request.POST.get("plan_digest", "")
    try:
        if request.POST.get("action") == "confirm":
            return _apply(request, current, flag, ctx, kwargs, form, digest)
        ctx["plan"] = floor_services.coup_correct_preview(coup=current, **kwargs)
        body = ctx["plan"].to_dict()
        ctx["body"] = body
        ctx["material"] = [c for c in body["coups"] if c["material"]]
        moved = [c["seq"] for c in body["coups"] if not c["material"]]
        ctx["moved"], ctx["moved_ranges"] = moved, _ranges(moved)
    except (ServiceError, CoupError) as exc:
        ctx["error"] = exc
        return render(request, "audit/correct.html", ctx,
                      status=_error_status(exc))
    return render(request, "audit/correct.html", ctx)


def _ranges(seqs: list[int]) -> str:
    """[10, 11, 12, 14] -> "10–12, 14"."""
    out, start = [], None
    for i, n in enumerate(seqs):
        if start is None:
            start = n
        if i + 1 == len(seqs) or seqs[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}–{n}")
            start = None
    return ", ".join(out)


def _apply(request, coup, flag, ctx, kwargs, form, digest):
    reason = form.cleaned_data.get("reason", "")
    device = device_of(request)
    if ctx["dismiss"] and flag is not None:
        services.flag_dismiss(flag=flag, user=request.user, reason=reason,
                              device=device,
                              correction={**kwargs, "plan_digest": digest})
        # Four eyes: his correction closes nothing by itself.
        messages.success(request, f"Coup corrected; flag {flag.pk} is resolved by "
                         "the correction, to review by another pit boss.")
        return redirect("floor:flag", flag.pk)
    result = services.coup_correct_reviewed(
        coup=coup, user=request.user, reason=reason, plan_digest=digest,
        device=device, flag=flag, **kwargs)
    messages.success(request, f"Coup {coup.seq} corrected: revision "
                     f"{result.revision.revision}, {len(result.revisions)} "
                     "revision(s) written.")
    if flag is not None:
        return redirect("floor:flag", flag.pk)
    return redirect("floor:coup", result.revision.pk)
