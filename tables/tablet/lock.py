"""The lock screen, PINs and the language setting.

Locking signs the croupier out (nothing can be recorded from a locked
tablet, whatever the page's script does) but remembers where the tablet was.
Anyone with a role that records coups and a PIN of their own unlocks it under
their own name: a relief croupier takes over, and the coups that follow are
theirs. PIN attempts are limited per user name and device, counted in the
database so that parallel requests cannot go past the limit (pins.py).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model, login, logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from casino.api import parse_id
from casino.continuity import trusted
from casino.roles import has_capability

from ..errors import RecordChanged, ServiceError
from ..models import TableSession
from . import language, pins, theme
from .forms import PinForm, PreferencesForm, ThemeForm, UnlockForm
from .models import TabletProfile, profile_for
from .views import LOCK_KEY, device_of, take_over

RETURN_KEY = "tablet_return_to"


def _safe_next(request, url: str | None) -> str:
    if url and url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return url
    return "/tablet/"


@require_POST
def lock(request):
    """Sign out, remember the screen and the table, show the lock screen."""
    back = _safe_next(request, request.POST.get("next"))
    table = request.POST.get("table", "")[:100]
    session_id = parse_id(request.POST.get("session"))
    lang = request.session.get(language.SESSION_KEY)
    shade = theme.current(request)
    previous = request.user.get_username() if request.user.is_authenticated else ""
    logout(request)
    request.session[LOCK_KEY] = {
        "table": table,
        "by": previous,
        "session": session_id,
    }
    request.session[RETURN_KEY] = back
    if lang:
        language.remember(request, lang)
    theme.remember(request, shade)  # the lock screen stays in his theme
    return redirect("tablet:unlock")


def _locked_out_message() -> str:
    wait = pins.cool_off()
    if wait:
        minutes = max(1, round(wait.total_seconds() / 60))
        return _(
            "Too many wrong PINs: wait %(minutes)s minutes or sign in with your "
            "password."
        ) % {"minutes": minutes}
    return _("Too many wrong PINs: sign in with your password.")


@never_cache
def unlock(request):
    lock_info = request.session.get(LOCK_KEY) or {}
    form = UnlockForm(request.POST or None)
    error = None
    status = 200
    if request.method == "POST" and form.is_valid():
        username = form.cleaned_data["username"].strip()
        who = {"username": username, "address": pins.address_of(request)}
        # The attempt is taken before the PIN is looked at (pins.py says why).
        if not pins.pin_attempt_take(**who):
            error = _locked_out_message()
            status = 429
        else:
            user = get_user_model().objects.filter(username=username).first()
            profile = (
                TabletProfile.objects.filter(user=user).first() if user else None
            )
            if (
                user is None
                or not user.is_active
                or profile is None
                or not _sealed(user, profile, device_of(request))
                or not profile.check_pin(form.cleaned_data["pin"])
            ):
                pins.pin_attempt_failed(**who, user=user, device=device_of(request))
                error = _("Unknown user name or wrong PIN.")
                status = 400
            else:
                pins.pin_attempts_clear(**who)
                if not has_capability(user, "coup.record"):
                    error = _("Your role does not allow coup entry.")
                    status = 403
                else:
                    back = _safe_next(request, request.session.get(RETURN_KEY))
                    login(
                        request,
                        user,
                        backend="casino.backends.SealedModelBackend",
                    )
                    request.session.pop(LOCK_KEY, None)
                    request.session.pop(RETURN_KEY, None)
                    _relieve(request, lock_info.get("session"))
                    return redirect(back)
    return render(
        request,
        "tablet/lock.html",
        {"form": form, "error": error, "lock": lock_info},
        status=status,
    )


def _sealed(user, profile, device: str) -> bool:
    """The PIN and the user as the trail sealed them: a PIN hash or a user
    set by hand with the database's credentials unlocks nothing (the alarm
    is raised, casino/continuity.py)."""
    try:
        trusted(user, profile, device=device)
    except RecordChanged:
        return False
    return True


def _relieve(request, session_id) -> None:
    """The croupier who unlocks takes the table the tablet was at (a relief);
    the take-over is logged by the service."""
    session = TableSession.objects.filter(pk=session_id, closed_at__isnull=True)
    session = session.first() if session_id else None
    if session is not None:
        try:
            take_over(request, session)
        except ServiceError:
            pass  # closed meanwhile: the screen he returns to says so


@never_cache
@login_required
def preferences(request):
    """The user's language, theme and PIN."""
    profile = profile_for(request.user)
    prefs = PreferencesForm(initial={"language": profile.language})
    theme_form = ThemeForm(initial={"theme": profile.theme or theme.DAY})
    pin_form = PinForm(user=request.user)
    saved = None
    status = 200
    if request.method == "POST" and request.POST.get("form") == "language":
        prefs = PreferencesForm(request.POST)
        if prefs.is_valid():
            profile.language = prefs.cleaned_data["language"]
            profile.save(
                update_fields=["language", "updated_at"] if profile.pk else None
            )
            language.remember(request, profile.language)
            lang = profile.language or translation.get_language_from_request(
                request
            )
            translation.activate(lang)
            request.LANGUAGE_CODE = lang
            saved = _("Language saved.")
        else:
            status = 400
    elif request.method == "POST" and request.POST.get("form") == "theme":
        theme_form = ThemeForm(request.POST)
        if theme_form.is_valid():
            profile.theme = theme_form.cleaned_data["theme"]
            profile.save(update_fields=["theme", "updated_at"] if profile.pk else None)
            theme.remember(request, profile.theme)
            saved = _("Theme saved: every page you open uses it.")
        else:
            status = 400
    elif request.method == "POST" and request.POST.get("form") == "pin":
        pin_form = PinForm(request.POST, user=request.user)
        if pin_form.is_valid():
            profile.set_pin(pin_form.cleaned_data["pin"])
            profile.save(
                update_fields=["pin_hash", "updated_at"] if profile.pk else None
            )
            pin_form = PinForm(user=request.user)
            saved = _("PIN saved: it unlocks a locked tablet under your name.")
        else:
            status = 400
    return render(
        request,
        "tablet/preferences.html",
        {
            "prefs": prefs,
            "theme_form": theme_form,
            "pin_form": pin_form,
            "has_pin": profile.has_pin,
            "saved": saved,
        },
        status=status,
    )
