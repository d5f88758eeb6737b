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
