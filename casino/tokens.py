"""Tablet API tokens: one per user, revocable by a pit boss or an admin.

A revoked token is deleted, so the very next request carrying it is refused
(DRF looks the key up on every request); the revocation is in the trail."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from tables.errors import Invalid, NotFound

from .changelog import log_action
from .drf import CharField
from .roles import Can


def token_revoke(*, user_id: int, actor, reason: str, device: str = "") -> bool:
    """Delete the user's API token; True when there was one."""
    if not (reason or "").strip():
        raise Invalid("reason", "say why the token is revoked")
    with transaction.atomic():
        user = get_user_model().objects.filter(pk=user_id).first()
        if user is None:
            raise NotFound("user", f"no user with id {user_id}")
        deleted, _ = Token.objects.filter(user=user).delete()
        log_action(
            action="auth.token.revoked",
            user=actor,
            device=device,
            obj=user,
            reason=reason.strip(),
            new={"had_token": bool(deleted)},
        )
    return bool(deleted)


class RevokeIn(serializers.Serializer):
    reason = CharField(max_length=500)


class RevokeOut(serializers.Serializer):
    revoked = serializers.BooleanField()


class TokenRevokeView(APIView):
    permission_classes = [Can("token.revoke")]

    @extend_schema(
        request=RevokeIn,
        responses={
            200: RevokeOut,
            400: OpenApiResponse(description="No reason"),
            404: OpenApiResponse(description="No such user"),
        },
        summary="Revoke a user's API token (takes effect at once)",
    )
    def post(self, request, pk: int):
        data = RevokeIn(data=request.data)
        data.is_valid(raise_exception=True)
        revoked = token_revoke(
            user_id=pk,
            actor=request.user,
            reason=data.validated_data["reason"],
            device=(request.headers.get("X-Device") or "")[:200],
        )
        return Response({"revoked": revoked}, status=status.HTTP_200_OK)
