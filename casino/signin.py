"""The sign-in lockout (django-axes): what a locked-out person is told.

The sign-in pages (ours and the admin's) authenticate with the request; axes'
middleware then answers a locked-out attempt with `lockout_page`
(AXES_LOCKOUT_CALLABLE): a page saying why and for how long, 429. The API
token endpoint, a DRF view, answers for itself with `lockout_response`: JSON
that names the reason (code "locked_out"), 429 and Retry-After.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.shortcuts import render
from rest_framework import status
from rest_framework.response import Response

from .throttles import client_ip


def locked_out(request) -> bool:
    """After authenticate(request, ...): did axes refuse, or has this failure
    just reached the limit?"""
    return bool(getattr(request, "axes_locked_out", False))


def _retry_after(cool_off) -> dict[str, str]:
    return {"Retry-After": str(int(cool_off.total_seconds()))} if cool_off else {}


def lockout_page(request, response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: the page instead of the sign-in form."""
    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    device = address_locked(request)  # the device, for everyone: no name
    page = render(
        request,
        "registration/locked_out.html",
        {
            "minutes": minutes,
            "device": device,
            "username": "" if device else get_client_username(request, credentials)
            or "",
        },
        status=status.HTTP_429_TOO_MANY_REQUESTS,
    )
    for name, value in _retry_after(cool_off).items():
        page[name] = value
    return page


def address_locked(request) -> bool:
    """Refused for the address, whatever the name (casino.backends.AddressLimit)."""
    return bool(getattr(request, "casino_address_locked", False))


def lockout_response(request) -> Response:
    cool_off = get_cool_off(request)
    if address_locked(request):
        detail = (
            "too many failed sign-ins from this device, whatever the user name: "
            "no one signs in from it until the failures are older than the "
            "cool-off (an administrator can reset them sooner)"
        )
    elif cool_off:
        minutes = max(1, round(cool_off.total_seconds() / 60))
        detail = (
            f"too many failed sign-ins for this user name from this device: "
            f"locked for {minutes} minutes (an administrator can unlock it sooner)"
        )
    else:
        detail = (
            "too many failed sign-ins for this user name from this device: "
            "locked until an administrator unlocks it"
        )
    return Response(
        {"username": [detail], "detail": detail, "code": "locked_out"},
        status=status.HTTP_429_TOO_MANY_REQUESTS,
        headers=_retry_after(cool_off),
    )


def forget_failures(request, user) -> None:
    """A successful sign-in clears this name's failures from this address
    (as axes does for the pages, AXES_RESET_ON_SUCCESS)."""
    if settings.AXES_ENABLED and settings.AXES_RESET_ON_SUCCESS:
        AxesProxyHandler.reset_attempts(
            username=user.get_username(), ip_address=client_ip(request)
        )
