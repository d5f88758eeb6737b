"""Tablet API tokens on the wire: issued at sign-in, checked at each request.

django-rest-knox does the token work (random 256-bit tokens, only a SHA-512
digest stored, an expiry); the project's model adds the device and the
password mark (casino.models.ApiToken). On top of knox, a token is refused:

- past its expiry: `API_TOKEN_TTL` from sign-in (one 12-hour shift);
- when its user is deactivated (knox checks `is_active` at each request);
- when the user's password changed since it was issued, by whatever path:
  the token carries a mark of the password hash it was issued under
  (Django's session auth hash, the same that signs a password change's other
  browser sessions out), and the mark must still match.

casino/tokens.py revokes (deletes) tokens: on request, and when a password
changes or a user is deactivated. DRF names the authentication class in its
settings and imports it while it imports its own views, so this module must
not import rest_framework.views (casino/tokens.py does).
"""

from __future__ import annotations

import re
from hmac import compare_digest

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from .continuity import trusted

# What knox issues: 64 hex digits (no prefix). Anything else is refused
# before the database is asked (a NUL or a non-UTF-8 byte in a header would
# otherwise reach the query or the decoder: a 500 instead of a 401).
_TOKEN = re.compile(rb"[0-9a-f]{64}")


def password_mark(user) -> str:
    """Changes whenever the user's password hash does."""
    return user.get_session_auth_hash()


def _mark_matches(user, mark: str) -> bool:
    # SECRET_KEY_FALLBACKS: a key rotation does not sign every tablet out.
    marks = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(compare_digest(mark, m) for m in marks)


def token_issue(*, user, device: str = ""):
    """A new token for one device: (the row, the token to hand over once).

    The user's tokens that can no longer be used (expired, or issued under an
    older password) are deleted first: a tablet signs in every shift, and the
    table should hold live tokens only.

    One transaction with the trail rows that bind them (casino/accounts.py
    writes them from the model's signals): when the chain cannot be taken
    (held, casino/dbsession.py) no token is left behind, so the 503's
    "nothing was written" is true and verify_trail finds no token that no
    trail row wrote. (A delete needs no such block: Django deletes in a
    transaction of its own, with its signals.)"""
    from .models import ApiToken

    now = timezone.now()
    mark = password_mark(user)
    with transaction.atomic():
        ApiToken.objects.filter(user=user).filter(
            Q(expiry__lte=now) | ~Q(password_mark=mark)
        ).delete()
        return ApiToken.objects.create(
            user=user,
            expiry=settings.API_TOKEN_TTL,
            device=(device or "")[:200],
            password_mark=mark,
        )


class TokenAuthentication(KnoxTokenAuthentication):
    """`Authorization: Token <token>`, as with DRF's own token (the tablets'
    header does not change)."""

    def authenticate_credentials(self, token: bytes):
        if not _TOKEN.fullmatch(token):
            raise AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(token)

    def _cleanup_token(self, auth_token) -> bool:
        """Whether this token has expired (then it is deleted). Knox's own
        also reads all the user's other tokens at every request to purge
        theirs: a query on every coup; token_issue purges them instead."""
        if auth_token.expiry is not None and auth_token.expiry <= timezone.now():
            auth_token.delete()
            return True
        return False

    def validate_user(self, auth_token):
        user, auth_token = super().validate_user(auth_token)  # is_active
        # the token's expiry, the user's password and flags, as sealed
        trusted(auth_token, user, device=auth_token.device)
        if not _mark_matches(user, auth_token.password_mark):
            auth_token.delete()
            raise AuthenticationFailed(
                "The password changed since this token was issued: sign in again."
            )
        return user, auth_token
