"""A pit boss accepts, at the tablet, the coups a relieved croupier left in
its queue.

Coups queued on a tablet (Wi-Fi down) keep the croupier who entered them, and
the tablet sends them only while he is signed in (static/tablet/coup/queue.js
and send.js; the pit boss's side in coup/accept.js). When he has been
relieved, the relief croupier's tablet shows that they wait for him; the pit
boss can then store them on his behalf here: he signs this one
request with his own user name and password (the sign-in lockout counts a
wrong one) and gives a reason. The tablet stays signed in as the relief.

Every coup goes through `coup_accept`, as `POST /api/v1/shoes/{id}/coups/
accept/` does for a pit boss's own client: the coups stay the croupier's
(entered_by), with the pit boss as accepted_by and the reason on each coup and
its change-log row. One transaction: all the coups sent, or none (the refusal
names the coup by its index and key).
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casino.drf import CharField, IntegerField
from casino.roles import Can, has_capability
from casino.signin import forget_failures, locked_out, lockout_response

from .. import chemmy, services
from ..api.serializers import USER_ID_MAX, CoupInSerializer, coup_payload
from ..api.views import coups_queryset, device_of
from ..errors import Forbidden, Invalid, ServiceError

# More than a shoe's coups (about 80 from eight decks): one request is enough.
MAX_COUPS = 200


class QueuedCoupSerializer(serializers.Serializer):
    shoe = IntegerField(min_value=1, max_value=USER_ID_MAX)
    key = CharField(max_length=100, help_text="The tablet's Idempotency-Key")
    body = CoupInSerializer()


class TabletAcceptSerializer(serializers.Serializer):
    username = CharField(max_length=150)
    password = CharField(max_length=128)
    reason = CharField(max_length=500)
    entered_by = IntegerField(min_value=1, max_value=USER_ID_MAX)
    coups = serializers.ListField(
        child=QueuedCoupSerializer(), min_length=1, max_length=MAX_COUPS
    )


def _refusal(i: int, key: str, exc: ServiceError | chemmy.CoupError) -> Response:
    field = f"coups[{i}].{exc.field}"
    code = getattr(exc, "code", "invalid")
    return Response(
        {
            field: [exc.message],
            "detail": f"{field}: {exc.message}",
            "code": code,
            "index": i,
            "key": key,
        },
        status=getattr(exc, "status", status.HTTP_400_BAD_REQUEST),
    )


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


class TabletAcceptView(APIView):
    # The tablet is in a croupier's hands (the relief's); the acceptance is
    # the pit boss's, by his password in the body.
    permission_classes = [Can("coup.record")]

    @extend_schema(exclude=True)  # the tablet's; clients use api-coup-accept
    def post(self, request):
        data = TabletAcceptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        pitboss = authenticate(request, username=v["username"], password=v["password"])
        if locked_out(request):
            return lockout_response(request)
        if pitboss is None or not pitboss.is_active:
            message = "unknown user or wrong password"
            return Response(
                {
                    "password": [message],
                    "detail": f"password: {message}",
                    "code": "invalid",
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        forget_failures(request, pitboss)
        if pitboss.pk == v["entered_by"]:
            raise Forbidden(
                "username",
                "these are your own coups: unlock the tablet under your name "
                "and they are sent",
            )
        if not has_capability(pitboss, "coup.accept"):
            raise Forbidden(
                "username",
                f"{pitboss.get_username()} is not a pit boss: only a pit boss "
                "accepts coups on a croupier's behalf",
            )
        try:
            stored = self._accept(request, pitboss, v)
        except _Refused as refused:
            return refused.response
        return Response({"accepted_by": pitboss.get_username(), "stored": stored})

    def _accept(self, request, pitboss, v) -> list[dict]:
        stored = []
        with transaction.atomic():
            for i, item in enumerate(v["coups"]):
                body, key = item["body"], item["key"]
                try:
                    if body.get("entered_by") not in (None, v["entered_by"]):
                        raise Invalid(
                            "body.entered_by",
                            "entered by another croupier than the one these "
                            "coups are accepted for",
                        )
                    result = services.coup_accept(
                        shoe_id=item["shoe"],
                        user=pitboss,
                        device=device_of(request),
                        entered_by=v["entered_by"],
                        reason=v["reason"],
                        punter=body["punter"],
                        banker=body["banker"],
                        stakes=[services.StakeInput(**s) for s in body["stakes"]],
                        declared_bank=body.get("declared_bank"),
                        expected_seq=body.get("expected_seq"),
                        idempotency_key=key,
                        entered_at=body.get("entered_at"),
                    )
                except (ServiceError, chemmy.CoupError) as exc:
                    # Nothing of this request stays: the transaction rolls back.
                    raise _Refused(_refusal(i, key, exc)) from None
                if result.created:
                    coup = coup_payload(result.coup, result.stakes, result.findings)
                else:  # already stored (an answer lost on the way back)
                    coup = coup_payload(coups_queryset().get(pk=result.coup.pk))
                stored.append({"key": key, "coup": coup})
        return stored
