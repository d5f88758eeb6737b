"""Sign-in against rows as the trail sealed them.

Django's ModelBackend, but a user whose row was changed outside the
application (a password hash set by hand, a user inserted with the runtime
role's credentials, a staff flag turned on) neither signs in nor stays signed
in: the row is checked against its last sealed state (casino/continuity.py)
at sign-in and at every request of a browser session, and the alarm is
raised."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend

from .errors import RecordChanged


class SealedModelBackend(ModelBackend):
    def user_can_authenticate(self, user) -> bool:
        if not super().user_can_authenticate(user):
            return False
        from .continuity import trusted

        try:
            trusted(user, user=None, device="sign-in")
        except RecordChanged:
            return False
        return True


class AddressLimit:
    """First of AUTHENTICATION_BACKENDS: refuses every sign-in from an address
    that has failed LOGIN_ADDRESS_FAILURE_LIMIT times within the cool-off
    (AXES_COOLOFF_TIME; None: until the failures are reset), whatever the
    user names. Counted in the database, from axes' own rows (one per name
    and address, reset by that name's success there): guessing across many
    names from one device is held back even with the sign-in throttle's
    Redis keys deleted or Redis down. Set well above AXES_FAILURE_LIMIT, so
    that a shared tablet's team, each with his own typo, is not locked out.

    Refusing, it marks the request as axes does (`axes_locked_out`, so the
    pages answer with the lockout page and the token endpoint with its 429)
    and `casino_address_locked` (the page then names the device, not a user).
    The attempt still counts as a failure (Django's user_login_failed)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        from django.conf import settings
        from django.core.exceptions import PermissionDenied

        if request is None or not settings.AXES_ENABLED:
            return None
        if address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            request.axes_locked_out = True
            request.casino_address_locked = True
            raise PermissionDenied("too many failed sign-ins from this address")
        return None  # no get_user: it signs no one in (a session never names it)


def address_failures(request) -> int:
    """Failed sign-ins from the request's address within the cool-off."""
    from axes.helpers import get_cool_off
    from axes.models import AccessAttempt
    from django.db.models import Sum
    from django.utils import timezone

    from .throttles import client_ip

    address = client_ip(request)
    if address is None:
        return 0
    rows = AccessAttempt.objects.filter(ip_address=address)
    cool_off = get_cool_off(request)
    if cool_off is not None:
        rows = rows.filter(attempt_time__gte=timezone.now() - cool_off)
    return rows.aggregate(n=Sum("failures_since_start"))["n"] or 0
