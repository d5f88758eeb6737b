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
from functools import cache
from hmac import compare_digest

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import Q
from django.utils import timezone
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from knox.crypto import hash_token
from knox.settings import CONSTANTS, knox_settings
from rest_framework.exceptions import AuthenticationFailed

from .continuity import sealed_sql, trusted_as_sealed, with_seals
from .rawrows import reader
from .roles import role_rows, roles_columns, roles_read_with

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


@cache
def _token_query():
    """(widths of the token's and the user's columns, the SQL of the tokens
    under one lookup key, each with its user and his memberships with their
    groups: every concrete column of the token then its seal, of the user
    then his seal, then what casino.roles.role_rows reads; one row a
    membership, and for a user without any one row, its membership's
    columns NULL). Made once: compiling knox's queryset (token and user)
    and then the roles' own query (casino/roles.py) cost a fifth of a
    tablet request's instructions (bench/count_coup.py). The seals are read
    with the rows, at every request (casino/continuity.py)."""
    from .models import ApiToken

    token = ApiToken._meta
    user = token.get_field("user").related_model._meta
    link = user.get_field("groups").remote_field.through._meta
    columns = [f't."{f.column}"' for f in token.concrete_fields]
    columns.append(sealed_sql(token.label_lower, f't."{token.pk.column}"'))
    columns += [f'u."{f.column}"' for f in user.concrete_fields]
    columns.append(sealed_sql(user.label_lower, f'u."{user.pk.column}"'))
    group = link.get_field("group").related_model._meta
    sql = (
        f'SELECT {", ".join(columns)}, {roles_columns("l", "g")} '
        f'FROM "{token.db_table}" t '
        f'JOIN "{user.db_table}" u ON u."{user.pk.column}" = '
        f't."{token.get_field("user").column}" '
        f'LEFT JOIN "{link.db_table}" l ON l."{link.get_field("user").column}" = '
        f'u."{user.pk.column}" '
        f'LEFT JOIN "{group.db_table}" g ON g."{group.pk.column}" = '
        f'l."{link.get_field("group").column}" '
        f'WHERE t."{token.get_field("token_key").column}" = %s '
        f'ORDER BY t."{token.pk.column}", l."{link.pk.column}"'
    )
    return len(token.concrete_fields), len(user.concrete_fields), sql


def _tokens(key: str) -> list[tuple]:
    """[(token with its user, [the token's seal, the user's], the user's
    memberships as casino.roles.role_rows gives them)] under `key`: one
    statement (see _token_query)."""
    from .models import ApiToken

    field = ApiToken._meta.get_field("user")
    t_end, u_width, sql = _token_query()
    u_end = t_end + 1 + u_width
    alias = router.db_for_read(ApiToken)
    tokens, users = reader(ApiToken, alias), reader(field.related_model, alias)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [key])
        rows = cursor.fetchall()
    found: dict = {}
    for row in rows:
        head = row[:t_end]
        if head not in found:
            token = tokens.build(head)
            user = users.build(row[t_end + 1:u_end])
            field.set_cached_value(token, user)
            found[head] = (token, [row[t_end], row[u_end]], [])
        found[head][2].append(row[u_end + 1:])
    return [(token, seals, role_rows(alias, links))
            for token, seals, links in found.values()]


class TokenAuthentication(KnoxTokenAuthentication):
    """`Authorization: Token <token>`, as with DRF's own token (the tablets'
    header does not change)."""

    def authenticate_credentials(self, token: bytes):
        """knox's own, its token and user read in one statement made once
        together with their seals and the user's memberships (_token_query):
        the request's roles come from this statement, from the database as
        before, checked against their seals when first asked for
        (casino/roles.py)."""
        if not _TOKEN.fullmatch(token):
            raise AuthenticationFailed("Invalid token.")
        token = token.decode()
        for auth_token, seals, memberships in _tokens(
                token[: CONSTANTS.TOKEN_KEY_LENGTH]):
            if self._cleanup_token(auth_token):
                continue
            if compare_digest(hash_token(token), auth_token.digest):
                if knox_settings.AUTO_REFRESH and auth_token.expiry:
                    self.renew_token(auth_token)
                user = self._validated(auth_token, seals)
                roles_read_with(user, memberships)
                return user, auth_token
        raise AuthenticationFailed("Invalid token.")

    def _validated(self, auth_token, seals: list):
        user, auth_token = super().validate_user(auth_token)  # is_active
        # the token's expiry, the user's password and flags, as sealed now
        trusted_as_sealed(with_seals([auth_token, user], seals),
                          device=auth_token.device)
        if not _mark_matches(user, auth_token.password_mark):
            auth_token.delete()
            raise AuthenticationFailed(
                "The password changed since this token was issued: sign in again."
            )
        return user

    def _cleanup_token(self, auth_token) -> bool:
        """Whether this token has expired (then it is deleted). Knox's own
        also reads all the user's other tokens at every request to purge
        theirs: a query on every coup; token_issue purges them instead."""
        if auth_token.expiry is not None and auth_token.expiry <= timezone.now():
            auth_token.delete()
            return True
        return False
