"""REST API for the floor. Views are thin: validate, call a service, serialize."""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from casino.api import IdFilter
from casino.roles import Can
from casino.signin import forget_failures, locked_out, lockout_response
from casino.throttles import ScopedRateThrottle
from casino.tokenauth import token_issue

from .. import chemmy, services
from ..models import BankerTurn, Coup, Shoe, Table, TableauVersion, TableSession
from ..services import access
from . import serializers as s

ERRORS = {
    400: OpenApiResponse(
        s.ErrorSerializer, description="Invalid input; names the field"
    ),
    401: OpenApiResponse(s.ErrorSerializer, description="Not signed in"),
    403: OpenApiResponse(s.ErrorSerializer, description="Role not allowed"),
    404: OpenApiResponse(s.ErrorSerializer, description="No such object"),
    409: OpenApiResponse(s.ErrorSerializer, description="Table state conflict"),
}


def own_session(request, session) -> None:
    """A croupier acts only at the session he runs: asked before the body is
    read, so that a refusal is a 403 whatever the body (the service asks
    again under its lock). The tablet's pages ask the same helper."""
    access.croupier_check(request.user, session)


class OwnTableRead:
    """Detail views: a croupier reads his own table's objects only
    (tables.services.access.read_check: 403 naming the session)."""

    def session_of(self, obj):
        return obj.session

    def get_object(self):
        obj = super().get_object()
        access.read_check(self.request.user, self.session_of(obj))
        return obj


def errors(*codes: int) -> dict:
    return {code: ERRORS[code] for code in codes}


def device_of(request) -> str:
    """Which tablet: the X-Device header, else the user agent."""
    return (request.headers.get("X-Device") or request.headers.get("User-Agent") or "")[
        :200
    ]


class TokenView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "login"

    @extend_schema(
        request=s.TokenRequestSerializer,
        responses={
            200: s.TokenResponseSerializer,
            **errors(400),
            429: OpenApiResponse(
                s.ErrorSerializer,
                description="Too many requests from this address, or this user "
                "name is locked out on this device after repeated failures "
                '(code "locked_out"); retry after the Retry-After header',
            ),
        },
        summary="Exchange a username and password for an API token",
        description="A new token for this device (the X-Device header, else the "
        "User-Agent) at each sign-in, valid until `expiry` (API_TOKEN_TTL, one "
        "shift). A password change or a deactivation revokes it.",
    )
    def post(self, request):
        data = s.TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # With the request, so that the lockout (axes) counts this attempt.
        user = authenticate(
            request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if locked_out(request):
            return lockout_response(request)
        if user is None or not user.is_active:
            return Response(
                {
                    "password": ["unknown user or wrong password"],
                    "detail": "unknown user or wrong password",
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        forget_failures(request, user)
        instance, token = token_issue(user=user, device=device_of(request))
        return Response({"token": token, "expiry": instance.expiry})


def _tables():
    return Table.objects.select_related("rules__tableau").prefetch_related("sessions")


class TableListView(APIView):
    def get_permissions(self):
        cap = "table.manage" if self.request.method == "POST" else "table.read"
        return [Can(cap)()]

    @extend_schema(responses={200: s.TableSerializer(many=True), **errors(401, 403)})
    def get(self, request):
        return Response(s.TableSerializer(_tables(), many=True).data)

    @extend_schema(
        request=s.TableCreateSerializer,
        responses={201: s.TableSerializer, **errors(400, 401, 403)},
    )
    def post(self, request):
        data = s.TableCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        table = services.table_create(
            user=request.user, device=device_of(request), **data.validated_data
        )
        return Response(
            s.TableSerializer(_tables().get(pk=table.pk)).data,
            status=status.HTTP_201_CREATED,
        )


class TableDetailView(APIView):
    permission_classes = [Can("table.read")]

    @extend_schema(responses={200: s.TableSerializer, **errors(401, 403, 404)})
    def get(self, request, pk: int):
        return Response(s.TableSerializer(get_object_or_404(_tables(), pk=pk)).data)


class SessionOpenView(APIView):
    permission_classes = [Can("session.open")]

    @extend_schema(
        request=None,
        responses={201: s.SessionSerializer, **errors(401, 403, 404, 409)},
        summary="Open a session at a table",
    )
    def post(self, request, pk: int):
        table = get_object_or_404(Table, pk=pk)
        session = services.session_open(
            table=table, user=request.user, device=device_of(request)
        )
        return Response(
            s.SessionSerializer(session).data, status=status.HTTP_201_CREATED
        )


class SessionFilter(filters.FilterSet):
    table = IdFilter(field_name="table")
    open = filters.BooleanFilter(field_name="closed_at", lookup_expr="isnull")

    class Meta:
        model = TableSession
        fields = ["table", "gaming_day"]


class SessionListView(generics.ListAPIView):
    permission_classes = [Can("table.read")]
    serializer_class = s.SessionSerializer
    queryset = TableSession.objects.none()  # the real one depends on who asks
    filterset_class = SessionFilter

    def get_queryset(self):
        return access.readable_sessions(
            self.request.user,
            TableSession.objects.select_related("opened_by", "closed_by"),
        )


class SessionDetailView(OwnTableRead, generics.RetrieveAPIView):
    permission_classes = [Can("table.read")]
    serializer_class = s.SessionSerializer
    queryset = TableSession.objects.select_related("opened_by", "closed_by")

    def session_of(self, obj):
        return obj


class SessionCloseView(APIView):
    permission_classes = [Can("session.close")]

    @extend_schema(
        request=None, responses={200: s.SessionSerializer, **errors(401, 403, 404, 409)}
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        session = services.session_close(
            session=session, user=request.user, device=device_of(request)
        )
        return Response(s.SessionSerializer(session).data)


class ShoeOpenView(APIView):
    permission_classes = [Can("shoe.manage")]

    @extend_schema(
        request=s.ShoeOpenSerializer,
        responses={201: s.ShoeSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        own_session(request, session)
        data = s.ShoeOpenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        shoe = services.shoe_open(
            session=session,
            user=request.user,
            device=device_of(request),
            **data.validated_data,
        )
        return Response(s.ShoeSerializer(shoe).data, status=status.HTTP_201_CREATED)


class ShoeDetailView(OwnTableRead, generics.RetrieveAPIView):
    permission_classes = [Can("table.read")]
    serializer_class = s.ShoeSerializer
    queryset = Shoe.objects.select_related("session")


class ShoeCloseView(APIView):
    permission_classes = [Can("shoe.manage")]

    @extend_schema(
        request=s.ShoeCloseSerializer,
        responses={200: s.ShoeSerializer, **errors(400, 401, 403, 404, 409)},
    )
    def post(self, request, pk: int):
        shoe = get_object_or_404(Shoe.objects.select_related("session"), pk=pk)
        own_session(request, shoe.session)
        data = s.ShoeCloseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        shoe = services.shoe_close(
            shoe=shoe,
            user=request.user,
            device=device_of(request),
            cards_left=data.validated_data.get("cards_left"),
        )
        return Response(s.ShoeSerializer(shoe).data)


class TurnOpenView(APIView):
    permission_classes = [Can("turn.manage")]

    @extend_schema(
        request=s.TurnOpenSerializer,
        responses={201: s.TurnSerializer, **errors(400, 401, 403, 404, 409)},
        summary="Open a banker turn (la main)",
    )
    def post(self, request, pk: int):
        data = s.TurnOpenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # The service reads the session once, under its lock: 404 when there
        # is none, 403 when this croupier does not run it.
        turn = services.banker_turn_open(
            session=pk,
            user=request.user,
            device=device_of(request),
            **data.validated_data,
        )
        return Response(s.turn_payload(turn), status=status.HTTP_201_CREATED)


class TurnDetailView(OwnTableRead, generics.RetrieveAPIView):
    permission_classes = [Can("table.read")]
    serializer_class = s.TurnSerializer
    queryset = BankerTurn.objects.select_related("session")


class TurnPassView(APIView):
    permission_classes = [Can("turn.manage")]

    @extend_schema(
        request=None,
        responses={200: s.PassResultSerializer, **errors(401, 403, 404, 409)},
        summary="Pass the bank (suite)",
    )
    def post(self, request, pk: int):
        turn = get_object_or_404(
            BankerTurn.objects.select_related("session__table"), pk=pk
        )
        own_session(request, turn.session)
        turn = services.banker_turn_pass(
            turn=turn, user=request.user, device=device_of(request)
        )
        seats = turn.session.table.seats
        order, seat = [], turn.seat
        for _ in range(seats - 1):
            seat = services.next_seat(seat, seats)
            order.append(seat)
        return Response(
            s.PassResultSerializer(
                {"turn": turn, "offered_bank": turn.bank, "offer_order": order}
            ).data
        )


def coups_queryset():
    """Coups with what their representation reads: `latest` is whether no
    later revision supersedes the row (a correction is a new revision of the
    same shoe and seq; the old one stays, as history)."""
    newer = Coup.objects.filter(
        shoe=OuterRef("shoe"), seq=OuterRef("seq"), revision__gt=OuterRef("revision")
    )
    return (
        Coup.objects.select_related(
            "shoe__session", "entered_by", "accepted_by", "corrected_by"
        )
        .prefetch_related("stakes", "findings")
        .annotate(latest=~Exists(newer))
    )


# GET /coups/?revisions=: which revisions of each coup the list holds.
REVISIONS = {
    "latest": "each coup once, as it stands now (its latest revision): the default",
    "all": "every revision, corrected ones included (the history); a "
    "superseded row has `latest: false`",
}


def revisions_param(request) -> str:
    """The `revisions` query parameter, strictly: one of REVISIONS, given at
    most once; anything else is a 400 naming it (never a silent default)."""
    values = request.query_params.getlist("revisions")
    if not values:
        return "latest"
    if len(values) > 1:
        raise ValidationError({"revisions": ["give this parameter once"]})
    if values[0] not in REVISIONS:
        choices = ", ".join(REVISIONS)
        raise ValidationError(
            {"revisions": [f"must be one of: {choices} (got {values[0][:40]!r})"]}
        )
    return values[0]


class CoupFilter(filters.FilterSet):
    table = IdFilter(field_name="shoe__session__table")
    session = IdFilter(field_name="shoe__session")
    shoe = IdFilter(field_name="shoe")
    has_findings = filters.BooleanFilter(method="filter_has_findings")

    class Meta:
        model = Coup
        fields = ["table", "session", "shoe", "gaming_day", "outcome"]

    def filter_has_findings(self, queryset, name, value):
        return (
            queryset.filter(finding_count__gt=0)
            if value
            else queryset.filter(finding_count=0)
        )


def visible_coups(user, queryset):
    """A croupier reads his own table's coups (tables.services.access)."""
    return access.readable_coups(user, queryset)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "revisions",
            str,
            OpenApiParameter.QUERY,
            required=False,
            enum=list(REVISIONS),
            default="latest",
            description="Which revisions of each coup to list. "
            + "; ".join(f"`{k}`: {v}" for k, v in REVISIONS.items())
            + ". Any other value is a 400 naming `revisions`. One coup's "
            "history: /api/v1/coups/{id}/revisions/.",
        )
    ],
    description="Coups, newest first. A pit boss's correction writes a new "
    "revision of the coup (the old one stays): by default each coup is listed "
    "once, at its latest revision (`revision` > 1 and `corrected_at` set when "
    "it was corrected); `revisions=all` lists the history too.",
)
class CoupListView(generics.ListAPIView):
    permission_classes = [Can("coup.read")]
    serializer_class = s.CoupSerializer
    filterset_class = CoupFilter
    queryset = Coup.objects.none()  # the real one depends on who asks

    def get_queryset(self):
        coups = coups_queryset()
        if revisions_param(self.request) == "latest":
            coups = coups.filter(latest=True)
        return visible_coups(self.request.user, coups.order_by("-created_at", "-id"))


@extend_schema(
    description="One coup revision by its id. A corrected coup's earlier "
    "revisions stay readable here (`latest: false`); "
    "/api/v1/coups/{id}/revisions/ lists them all."
)
class CoupDetailView(generics.RetrieveAPIView):
    permission_classes = [Can("coup.read")]
    serializer_class = s.CoupSerializer
    queryset = Coup.objects.none()  # the real one depends on who asks

    def get_queryset(self):
        return visible_coups(self.request.user, coups_queryset())


class CoupRecordView(APIView):
    permission_classes = [Can("coup.record")]

    @extend_schema(
        request=s.CoupInSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                required=False,
                description="Created on the tablet; a retry with the same key and "
                "body returns the same coup (200), another body is a 409.",
            )
        ],
        responses={
            201: s.CoupSerializer,
            200: OpenApiResponse(s.CoupSerializer, description="Replay of a key"),
            **errors(400, 401, 403, 404, 409),
        },
        summary="Record a coup",
    )
    def post(self, request, pk: int):
        data = s.CoupInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        key = (request.headers.get("Idempotency-Key") or "").strip() or None
        if key is not None and len(key) > 100:
            return Response(
                {
                    "Idempotency-Key": ["at most 100 characters"],
                    "detail": "Idempotency-Key: at most 100 characters",
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        result = services.coup_record(
            shoe_id=pk,
            user=request.user,
            device=device_of(request),
            punter=v["punter"],
            banker=v["banker"],
            stakes=[services.StakeInput(**st) for st in v["stakes"]],
            declared_bank=v.get("declared_bank"),
            expected_seq=v.get("expected_seq"),
            idempotency_key=key,
            entered_by=v.get("entered_by"),
            entered_at=v.get("entered_at"),
        )
        return _coup_response(result)


def _coup_response(result) -> Response:
    """201 with the coup as stored, or 200 with the one a replayed key names."""
    if result.created:
        payload = s.coup_payload(result.coup, result.stakes, result.findings)
    else:  # a replay: read it back with its relations
        payload = s.coup_payload(coups_queryset().get(pk=result.coup.pk))
    return Response(
        payload,
        status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
    )


def _idempotency_key(request) -> str | None:
    key = (request.headers.get("Idempotency-Key") or "").strip() or None
    if key is not None and len(key) > 100:
        raise ValidationError({"Idempotency-Key": ["at most 100 characters"]})
    return key


class CoupAcceptView(APIView):
    permission_classes = [Can("coup.accept")]

    @extend_schema(
        request=s.CoupAcceptSerializer,
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                required=False,
                description="The key the croupier's tablet made for this coup: "
                "a coup already stored under it is returned (200).",
            )
        ],
        responses={
            201: s.CoupSerializer,
            200: OpenApiResponse(s.CoupSerializer, description="Replay of a key"),
            **errors(400, 401, 403, 404, 409),
        },
        summary="Store a croupier's queued coup on his behalf (pit boss)",
        description="A coup a croupier entered on a tablet and could not send "
        "before he was relieved: it is stored as his (entered_by), with the pit "
        "boss as accepted_by and the reason on the coup and in the change log.",
    )
    def post(self, request, pk: int):
        data = s.CoupAcceptSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        result = services.coup_accept(
            shoe_id=pk,
            user=request.user,
            device=device_of(request),
            entered_by=v["entered_by"],
            reason=v["reason"],
            punter=v["punter"],
            banker=v["banker"],
            stakes=[services.StakeInput(**st) for st in v["stakes"]],
            declared_bank=v.get("declared_bank"),
            expected_seq=v.get("expected_seq"),
            idempotency_key=_idempotency_key(request),
            entered_at=v.get("entered_at"),
        )
        return _coup_response(result)


class CheckView(APIView):
    permission_classes = [Can("engine.check")]

    @extend_schema(
        request=s.CheckInSerializer,
        responses={200: s.VerdictSerializer, **errors(400, 401, 403)},
        summary="Check a coup against the tableau; nothing is stored",
    )
    def post(self, request):
        data = s.CheckInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        row = TableauVersion.objects.filter(version=v["tableau_version"]).first()
        if row is None:
            return Response(
                {
                    "tableau_version": ["unknown tableau version"],
                    "detail": "tableau_version: unknown tableau version",
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        verdict = chemmy.evaluate(v["punter"], v["banker"], tableau=row.as_engine())
        return Response(verdict.to_dict())
