"""The pit boss's REST API. Thin: validate, call a service or selector,
serialize. Permissions come from casino.access.ROUTES (ByRoute)."""

from __future__ import annotations

from datetime import date, timedelta

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from casino.access import ByRoute
from casino.api import IdFilter, parse_id
from casino.bounds import check_day
from casino.models import ChangeLog
from casino.roles import CROUPIER, user_roles
from casino.trail import trail_verify
from tables import services as floor
from tables.api.serializers import CoupSerializer, ErrorSerializer
from tables.api.views import coups_queryset, device_of, visible_coups
from tables.errors import Invalid
from tables.models import Coup, TableSession
from tables.services import access as floor_access

from .. import selectors, services, stats
from ..models import CagnotteCount, Flag
from . import serializers as s

CONFLICT = {409: OpenApiResponse(ErrorSerializer, description="The record or the "
                                 "session is not in a state to take this")}
QUEUE_PARAMS = [
    OpenApiParameter("table", int), OpenApiParameter("code", str),
    OpenApiParameter("side", str, description="punter, banker or - (none)"),
    OpenApiParameter("croupier", int), OpenApiParameter("gaming_day", date),
    OpenApiParameter("status", str, enum=Flag.Status.values),
    OpenApiParameter("severity", str, enum=["warning", "critical"]),
]


def _stakes(rows) -> list[floor.StakeInput]:
    return [floor.StakeInput(**r) for r in rows]


def _correction_kwargs(v: dict) -> dict:
    return {"punter": v["punter"], "banker": v["banker"],
            "stakes": _stakes(v["stakes"]), "declared_bank": v.get("declared_bank")}


class FloorView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: s.FloorTableSerializer(many=True)},
                   summary="Every open table, refreshed by the floor page")
    def get(self, request):
        services.flags_sync(wait=False)
        # croupier: his user name; no alert about the reader
        rows = selectors.floor_tables(hidden=selectors.hidden_from(request.user))
        return Response(s.FloorTableSerializer(rows, many=True).data)


class FlagFilter(filters.FilterSet):
    table = IdFilter(field_name="table_id")
    croupier = IdFilter(field_name="croupier_id")
    side = filters.CharFilter(method="filter_side")
    status = filters.ChoiceFilter(choices=Flag.Status.choices)
    severity = filters.ChoiceFilter(choices=[("warning", "warning"),
                                             ("critical", "critical")])

    class Meta:
        model = Flag
        fields = ["table", "code", "side", "croupier", "gaming_day", "status",
                  "severity", "kind", "session"]

    def filter_side(self, queryset, name, value):
        return queryset.filter(side="" if value == "-" else value)


class FlagListView(generics.ListAPIView):
    """Flags sorted by severity, then age. Default: all statuses; filter
    `status=open` for the queue."""

    permission_classes = [ByRoute]
    serializer_class = s.FlagSerializer
    filterset_class = FlagFilter

    def get_queryset(self):
        return selectors.flag_queue(selectors.QueueFilter(
            status=None, hidden=selectors.hidden_from(self.request.user)))

    def list(self, request, *args, **kwargs):
        services.flags_sync(wait=False)
        return super().list(request, *args, **kwargs)


def _queue_filter(params, user=None) -> selectors.QueueFilter:
    form = FlagFilter(params, queryset=Flag.objects.none())
    if not form.is_valid():
        raise ValidationError(form.errors)
    d = form.form.cleaned_data
    return selectors.QueueFilter(
        table=d.get("table"), code=d.get("code") or None,
        side=params.get("side") or None, croupier=d.get("croupier"),
        gaming_day=d.get("gaming_day"), status=d.get("status") or None,
        severity=d.get("severity") or None, hidden=selectors.hidden_from(user))


class FlagCountsView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(parameters=QUEUE_PARAMS, responses={200: s.FlagCountsSerializer},
                   summary="Counts for every value of every filter, given the others")
    def get(self, request):
        services.flags_sync(wait=False)
        return Response(selectors.flag_counts(
            _queue_filter(request.query_params, request.user)))


class FlagDetailView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: s.FlagDetailSerializer})
    def get(self, request, pk: int):
        flag = get_object_or_404(selectors.visible(
            Flag.objects.select_related("table", "croupier", "decided_by"),
            selectors.hidden_from(request.user)), pk=pk)
        flag.rule = selectors.RULE_QUOTES.get(flag.code, "")
        if flag.coup_id:
            flag.coup = coups_queryset().get(pk=flag.coup_id)
        return Response(s.FlagDetailSerializer(flag).data)


class FlagConfirmView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(request=s.ConfirmSerializer,
                   responses={200: s.FlagSerializer, **CONFLICT},
                   summary="Confirm: the event happened (reason required)")
    def post(self, request, pk: int):
        flag = get_object_or_404(selectors.visible(
            Flag.objects.all(), selectors.hidden_from(request.user)), pk=pk)
        data = s.ConfirmSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        flag = services.flag_confirm(flag=flag, user=request.user,
                                     device=device_of(request), **data.validated_data)
        return Response(s.FlagSerializer(flag).data)


class FlagDismissView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(request=s.DismissSerializer,
                   responses={200: s.FlagSerializer, **CONFLICT},
                   summary="Dismiss: not a real event; with the correction when the "
                   "record is wrong (four eyes: the flag then stays open, "
                   "resolved by the correction, to review by another pit boss)")
    def post(self, request, pk: int):
        flag = get_object_or_404(selectors.visible(
            Flag.objects.all(), selectors.hidden_from(request.user)), pk=pk)
        data = s.DismissSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        correction = None
        if v.get("correction"):
            correction = {**_correction_kwargs(v["correction"]),
                          "plan_digest": v["plan_digest"]}
        flag = services.flag_dismiss(flag=flag, user=request.user, reason=v["reason"],
                                     correction=correction, device=device_of(request))
        return Response(s.FlagSerializer(flag).data)


class CorrectionPreviewView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(request=s.CorrectionInSerializer,
                   responses={200: s.PlanSerializer, **CONFLICT},
                   summary="What a correction would change, money first; writes "
                   "nothing")
    def post(self, request, pk: int):
        coup = get_object_or_404(Coup.objects.select_related("shoe"), pk=pk)
        data = s.CorrectionInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        plan = floor.coup_correct_preview(coup=coup,
                                          **_correction_kwargs(data.validated_data))
        return Response(plan.to_dict())


class CorrectionView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(request=s.CorrectionSerializer,
                   responses={201: s.CorrectionResultSerializer, **CONFLICT},
                   summary="Correct a coup: a new revision, later coups re-settled")
    def post(self, request, pk: int):
        coup = get_object_or_404(Coup.objects.select_related("shoe"), pk=pk)
        data = s.CorrectionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        result = services.coup_correct_reviewed(
            coup=coup, user=request.user, reason=v["reason"],
            plan_digest=v["plan_digest"], device=device_of(request),
            **_correction_kwargs(v))
        revision = coups_queryset().get(pk=result.revision.pk)
        return Response({"revision": CoupSerializer(revision).data,
                         "plan": result.plan.to_dict()},
                        status=status.HTTP_201_CREATED)


class RevisionsView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: CoupSerializer(many=True)},
                   summary="Every revision of a coup, the original first")
    def get(self, request, pk: int):
        # A croupier reads his own table's coups only, revisions included
        # (the same rule as /coups/: tables.api.views.visible_coups).
        coup = get_object_or_404(visible_coups(request.user, Coup.objects.all()), pk=pk)
        rows = visible_coups(request.user, coups_queryset()).filter(
            shoe_id=coup.shoe_id, seq=coup.seq)
        return Response(CoupSerializer(rows.order_by("revision"), many=True).data)


def _cagnotte_state(session: TableSession) -> dict:
    counts = (CagnotteCount.objects.filter(session=session)
              .select_related("counted_by", "attestation__attested_by")
              .order_by("-counted_at", "-pk"))
    return {"session": session.pk, "open": session.is_open,
            "computed": services.session_commission(session),
            "locked": services.session_locked(session), "counts": counts}


class CagnotteView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: s.CagnotteStateSerializer},
                   summary="The session's computed commission and its counts")
    def get(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        return Response(s.CagnotteStateSerializer(_cagnotte_state(session)).data)

    @extend_schema(request=s.CagnotteCountInSerializer,
                   responses={201: s.CagnotteCountSerializer, **CONFLICT},
                   summary="Enter the counted cagnotte box at closing")
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = s.CagnotteCountInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        count = services.cagnotte_count(session=session, user=request.user,
                                        device=device_of(request),
                                        **data.validated_data)
        return Response(s.CagnotteCountSerializer(count).data,
                        status=status.HTTP_201_CREATED)


class AttestView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(request=s.AttestSerializer,
                   responses={200: s.CagnotteCountSerializer, **CONFLICT},
                   summary="Attest a count (\"certifié exact\"): the session locks")
    def post(self, request, pk: int):
        count = get_object_or_404(CagnotteCount, pk=pk)
        data = s.AttestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.cagnotte_attest(count=count, user=request.user,
                                 device=device_of(request), **data.validated_data)
        count = CagnotteCount.objects.select_related(
            "attestation__attested_by").get(pk=count.pk)
        return Response(s.CagnotteCountSerializer(count).data)


class CroupierView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(request=s.CroupierSerializer,
                   responses={200: s.CroupierResultSerializer, **CONFLICT},
                   summary="Hand the session to a croupier (a croupier: take it "
                   "over yourself, as the relief)")
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = s.CroupierSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        croupier = session_croupier_for(request.user, v.get("croupier"))
        session = floor.session_croupier_change(
            session=session, croupier=croupier, user=request.user,
            reason=v.get("reason", ""), device=device_of(request))
        return Response({"session": session.pk, "croupier": croupier.pk,
                         "croupier_name": croupier.get_username()})


def session_croupier_for(user, croupier_id: int | None):
    """A pit boss names any croupier; a croupier can only take over himself."""
    if croupier_id is None or croupier_id == user.pk:
        if CROUPIER not in user_roles(user) and not user.is_superuser:
            raise Invalid("croupier", "name the croupier who takes the table")
        return user
    floor_access.hand_over_check(user, croupier_id)
    other = get_user_model().objects.filter(pk=croupier_id, is_active=True).first()
    if other is None or CROUPIER not in user_roles(other):
        raise Invalid("croupier", "no active croupier with this id")
    return other


def _stats_day(params, field: str, default: date) -> date:
    """One end of the range, 2000 to a year ahead (casino/bounds.py): a day
    past them is refused before any arithmetic on it can overflow."""
    try:
        day = date.fromisoformat(params.get(field) or default.isoformat())
    except ValueError:
        raise ValidationError({field: "dates are YYYY-MM-DD"}) from None
    try:
        check_day(field, day)
    except Invalid as exc:
        raise ValidationError({field: exc.message}) from None
    return day


def stats_range(params) -> tuple[date, date, int | None]:
    today = timezone.localdate()
    day_to = _stats_day(params, "to", today)
    day_from = _stats_day(params, "from", day_to - timedelta(days=6))
    if day_from > day_to or (day_to - day_from).days > 366:
        raise ValidationError({"from": "a range of at most a year, from <= to"})
    table = params.get("table") or None
    if table is not None and parse_id(table) is None:
        raise ValidationError({"table": "a table id"})
    return day_from, day_to, parse_id(table)


class StatsView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(
        parameters=[OpenApiParameter("from", str), OpenApiParameter("to", str),
                    OpenApiParameter("table", int)],
        responses={200: s.StatsSerializer},
        summary="Per croupier, per seat, per table and hour (gaming days)")
    def get(self, request):
        day_from, day_to, table = stats_range(request.query_params)
        figures, position = stats.floor_stats(day_from, day_to, table)
        body = {"day_from": day_from, "day_to": day_to, **figures,
                "data_position": position.as_dict()}
        # rates are exact decimals, written as strings like money (casino/drf.py)
        return Response(s.StatsSerializer(body).data)


class TrailFilter(filters.FilterSet):
    class Meta:
        model = ChangeLog
        fields = ["action", "object_type", "object_id", "user"]


class TrailView(generics.ListAPIView):
    """The change log, newest first."""

    permission_classes = [ByRoute]
    serializer_class = s.TrailRowSerializer
    filterset_class = TrailFilter
    queryset = ChangeLog.objects.select_related("user").order_by("-id")


class TrailVerifyView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: s.TrailCheckSerializer},
                   summary="Verify the keyed chain, the anchors on file and every "
                   "ledger row; name the first problem")
    def get(self, request):
        return Response(trail_verify().to_dict())
