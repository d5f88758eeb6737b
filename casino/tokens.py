"""Revoking tablet API tokens: on request, and when an account changes.

Who may revoke whose: a user his own; anyone else's only a role that holds
`token.revoke` and ranks strictly above every role of the token's holder
(casino.roles.RANKS: croupier < pit boss < manager < admin). A pit boss
therefore cannot sign a manager or an admin out, and a refusal writes nothing.

A revoked token is deleted, so the very next request carrying it is refused;
the revocation is in the trail. A password change (any path) or a
deactivation revokes the user's tokens too (casino/accounts.py calls
`tokens_revoke_for_account`); casino/tokenauth.py refuses such tokens at
once even where no signal ran.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from .access import ByRoute
from .changelog import log_action
from .drf import CharField
from .errors import Forbidden, Invalid, NotFound
from .roles import outranks


class TokenScheme(OpenApiAuthenticationExtension):
    """The schema's name for casino.tokenauth.TokenAuthentication (knox's own
    extension matches knox's class only). Registered when this module is
    imported: casino/urls.py imports it before any schema is generated."""

    target_class = "casino.tokenauth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization",
            token_prefix=self.target.authenticate_header(None),
        )


def may_revoke(actor, target) -> bool:
    return actor.pk == target.pk or outranks(actor, target, "token.revoke")


def _delete(user, device: str | None = None) -> list[str]:
    """Delete the user's tokens (one device's when named); their devices."""
    from .models import ApiToken

    tokens = ApiToken.objects.filter(user=user)
    if device is not None:
        tokens = tokens.filter(device=device)
    devices = sorted(tokens.values_list("device", flat=True))
    tokens.delete()
    return devices


def token_revoke(
    *,
    user_id: int,
    actor,
    reason: str,
    device: str = "",
    only_device: str | None = None,
) -> int:
    """Delete the user's API tokens (only those of `only_device` when given);
    the number deleted. `device` is the actor's, for the trail."""
    if not (reason or "").strip():
        raise Invalid("reason", "say why the token is revoked")
    with transaction.atomic():
        user = get_user_model().objects.filter(pk=user_id).first()
        if user is None:
            raise NotFound("user", f"no user with id {user_id}")
        if not may_revoke(actor, user):
            raise Forbidden(
                "user",
                "only the user himself or a higher role may revoke his tokens "
                "(croupier < pit boss < manager < admin)",
            )
        devices = _delete(user, only_device)
        log_action(
            action="auth.token.revoked",
            user=actor,
            device=device,
            obj=user,
            bind=False,
            reason=reason.strip(),
            new={
                "had_token": bool(devices),
                "tokens": len(devices),
                "devices": devices,
                **({"only_device": only_device} if only_device is not None else {}),
            },
        )
    return len(devices)


def tokens_revoke_for_account(user, *, actor, device: str, reason: str) -> int:
    """A password change or a deactivation: every token of the user goes, in
    the transaction of the change. Logged when there was one."""
    devices = _delete(user)
    if devices:
        log_action(
            action="auth.token.revoked",
            user=actor,
            device=device,
            obj=user,
            bind=False,
            reason=reason,
            new={"had_token": True, "tokens": len(devices), "devices": devices},
        )
    return len(devices)


class RevokeIn(serializers.Serializer):
    reason = CharField(max_length=500)
    device = CharField(
        max_length=200,
        required=False,
        help_text="Revoke only the tokens issued to this device (the X-Device "
        "header it signed in with); all the user's tokens when left out.",
    )


class RevokeOut(serializers.Serializer):
    revoked = serializers.BooleanField()
    tokens = serializers.IntegerField(help_text="How many tokens were revoked")


class TokenRevokeView(APIView):
    # Any signed-in user may ask (his own tokens); whose else he may revoke
    # depends on both accounts, so the service decides (403 "forbidden").
    permission_classes = [ByRoute]

    @extend_schema(
        request=RevokeIn,
        responses={
            200: RevokeOut,
            400: OpenApiResponse(description="No reason"),
            403: OpenApiResponse(
                description='Not the user himself nor a higher role (code "forbidden")'
            ),
            404: OpenApiResponse(description="No such user"),
        },
        summary="Revoke a user's API tokens (takes effect at once)",
    )
    def post(self, request, pk: int):
        data = RevokeIn(data=request.data)
        data.is_valid(raise_exception=True)
        count = token_revoke(
            user_id=pk,
            actor=request.user,
            reason=data.validated_data["reason"],
            device=(request.headers.get("X-Device") or "")[:200],
            only_device=data.validated_data.get("device"),
        )
        return Response(
            {"revoked": count > 0, "tokens": count}, status=status.HTTP_200_OK
        )
