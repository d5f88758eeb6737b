"""The PIN lockout: how many PINs may be tried under one user name from one
device, counted so that parallel requests cannot share a look at the count.

A PIN is four to eight digits: what keeps it from being guessed is the
limit. Reading a counter, checking the PIN, then writing the counter back
lets every request that read the count before the first write check a PIN
(40 parallel requests once tried 20 PINs against a limit of 5). So an
attempt is *taken* first, by one conditional UPDATE (`attempts < limit`),
which the database applies row by row: a request that finds no attempt left
checks nothing. A right PIN gives them all back; a wrong one keeps its
attempt. The count lives in the database (PinAttempts), which also makes it
hold when the cache (Redis) is down.

Like the sign-in lockout (django-axes, casino/signin.py): per user name and
client address (casino.throttles.client_ip, as axes), AXES_FAILURE_LIMIT
attempts, AXES_COOLOFF_TIME after the last one (None: until reset). A
password sign-in by that user from that address resets it; so does an
administrator, deleting the row in the admin. The lockout itself is a row of
the trail (tablet.pin.locked_out).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from casino.changelog import log_action
from casino.throttles import client_ip

from .models import PinAttempts


def limit() -> int:
    return settings.AXES_FAILURE_LIMIT


def cool_off() -> timedelta | None:
    return settings.AXES_COOLOFF_TIME


def _key(username: str, address: str | None) -> dict:
    return {"username": username.strip().lower()[:150], "address": address or ""}


def address_of(request) -> str:
    return client_ip(request) or ""


def pin_attempt_take(*, username: str, address: str) -> bool:
    """Take one attempt for this user name from this address; False when none
    is left (locked out: check nothing). Atomic: one UPDATE decides."""
    key = _key(username, address)
    now = timezone.now()
    wait = cool_off()
    if wait:
        # Past the cool-off, this name's count starts again (and other names'
        # expired rows go, as axes clears its expired attempts).
        PinAttempts.objects.filter(last_at__lt=now - wait).delete()
    rows = PinAttempts.objects.filter(**key, attempts__lt=limit())
    if rows.update(attempts=F("attempts") + 1, last_at=now):
        return True
    if PinAttempts.objects.filter(**key).exists():
        return False  # every attempt taken: locked out
    try:
        with transaction.atomic():
            PinAttempts.objects.create(**key, attempts=1, last_at=now)
        return True
    except IntegrityError:  # a parallel request made the row first: take from it
        return bool(rows.update(attempts=F("attempts") + 1, last_at=now))


def pin_attempt_failed(*, username: str, address: str, user=None, device: str = ""):
    """A wrong PIN (or an unknown name) keeps its attempt. The one that uses
    the last attempt writes the lockout to the trail, once."""
    key = _key(username, address)
    now = timezone.now()
    with transaction.atomic():
        locked = PinAttempts.objects.filter(
            **key, attempts__gte=limit(), locked_at=None
        ).update(locked_at=now)
        if locked:
            row = PinAttempts.objects.get(**key)
            wait = cool_off()
            log_action(
                action="tablet.pin.locked_out",
                user=None,  # nobody is signed in at a locked tablet
                device=device,
                obj=user,
                bind=False,
                new={
                    **key,
                    "attempts": row.attempts,
                    "cool_off_minutes": int(wait.total_seconds() // 60)
                    if wait
                    else None,
                },
            )


def pin_attempts_clear(*, username: str, address: str) -> None:
    """A right PIN (or a password sign-in): this name's count from this
    address starts again."""
    PinAttempts.objects.filter(**_key(username, address)).delete()


def forget_on_sign_in(sender, request, user, **kwargs) -> None:
    """user_logged_in: a sign-in (password or PIN) from this address clears
    the PIN count of that name here, as a sign-in clears axes' count."""
    if request is not None:
        pin_attempts_clear(username=user.get_username(), address=address_of(request))
