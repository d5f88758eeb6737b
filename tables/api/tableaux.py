"""Banker's tableau versions over the API (docs/rules.md, "Tableau versions"):
read them, make one from another by changing cells, compare two, and move a
table to one from a gaming day. Permissions: casino.access.ROUTES (ByRoute)."""

from __future__ import annotations

from datetime import timedelta

from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casino.access import ByRoute
from casino.drf import CharField

from ..errors import Invalid
from ..models import Table, TableauVersion
from ..services.floor import gaming_day_for
from ..services.tableaux import (
    tableau_assign,
    tableau_derive,
    tableau_diff,
    tableau_in_force,
)
from .house import HouseRulesVersionSerializer
from .views import device_of, errors


class TableauSerializer(serializers.ModelSerializer):
    rows = serializers.SerializerMethodField()

    class Meta:
        model = TableauVersion
        fields = ["id", "version", "description", "rows", "created_at"]

    def get_rows(self, obj) -> dict[str, list[str]]:
        """Banker total "0".."7" -> 11 cells (D, S or O): the punter stood,
        then his third card 0..9."""
        return obj.rows


class TableauCreateSerializer(serializers.Serializer):
    from_version = CharField(max_length=64, help_text="The version it is made from")
    version = CharField(max_length=64, help_text="The new version's name (unique)")
    cells = serializers.DictField(
        child=serializers.CharField(),
        help_text='Cell -> D, S or O: {"3/9": "D", "5/stood": "S"} (banker '
        "total 0-7 / the punter's third card 0-9 or 'stood'). At least one "
        "must differ from from_version.",
    )
    reason = CharField(max_length=500, help_text="Why (logged)")
    description = CharField(max_length=200, required=False, default="",
                            allow_blank=True)


class CellChangeSerializer(serializers.Serializer):
    cell = serializers.CharField(help_text='"3/9": banker 3, punter\'s third card 9')
    banker = serializers.IntegerField()
    column = serializers.CharField(help_text="'stood' or the third card 0-9")
    # D, S or O (text, not an enum: the schema would name the same choice
    # set twice)
    from_ = serializers.CharField(help_text="D, S or O")
    to = serializers.CharField(help_text="D, S or O")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


class TableauDiffSerializer(serializers.Serializer):
    version = serializers.CharField(help_text="This version")
    against = serializers.CharField(help_text="The version it is compared with")
    table = serializers.IntegerField(allow_null=True)
    changes = CellChangeSerializer(many=True, help_text="from: against; to: this")


class TableauAssignSerializer(serializers.Serializer):
    tableau_version = CharField(max_length=64)
    effective_from = serializers.DateField(
        required=False, allow_null=True,
        help_text="The first gaming day it is played (default: the table's "
        "next session). Never a day before the current one.")
    reason = CharField(max_length=500, help_text="Why (logged)")


class ReauditOfferSerializer(serializers.Serializer):
    url = serializers.CharField(help_text="POST this body there to start it")
    body = serializers.DictField()


class TableauAssignedSerializer(serializers.Serializer):
    rules = HouseRulesVersionSerializer()
    changes = CellChangeSerializer(many=True)
    reaudit = ReauditOfferSerializer(
        help_text="Re-audit a period of this table's coups against the new "
        "version: the findings that would appear and disappear")


def _version(value: str, field: str) -> TableauVersion:
    """A version by name, or by id (digits)."""
    row = TableauVersion.objects.filter(version=value).first()
    if row is None and value.isascii() and value.isdigit() and len(value) < 12:
        row = TableauVersion.objects.filter(pk=int(value)).first()
    if row is None:
        raise Invalid(field, f"unknown tableau {value!r}")
    return row


class TableauListView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: TableauSerializer(many=True),
                              **errors(401, 403)},
                   summary="Every tableau version, oldest first, with its rows")
    def get(self, request):
        rows = TableauVersion.objects.order_by("created_at", "id")
        return Response(TableauSerializer(rows, many=True).data)

    @extend_schema(
        request=TableauCreateSerializer,
        responses={201: TableauSerializer, **errors(400, 401, 403)},
        summary="Make a new version from an existing one by changing cells",
        description="Refused naming the field, nothing written: an unknown "
        "from_version, a cell key or value that is not one, no change at all, "
        "a name taken, no reason.",
    )
    def post(self, request):
        data = TableauCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        row = tableau_derive(
            from_version=v["from_version"], version=v["version"], cells=v["cells"],
            user=request.user, reason=v["reason"], description=v["description"],
            device=device_of(request))
        return Response(TableauSerializer(row).data, status=status.HTTP_201_CREATED)


class TableauDetailView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(responses={200: TableauSerializer, **errors(401, 403, 404)},
                   summary="One tableau version")
    def get(self, request, pk: int):
        return Response(TableauSerializer(
            get_object_or_404(TableauVersion, pk=pk)).data)


class TableauDiffView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(
        parameters=[
            OpenApiParameter("against", str, description="A version's name or id"),
            OpenApiParameter("table", int, description="Without `against`: the "
                             "version in force at this table"),
        ],
        responses={200: TableauDiffSerializer, **errors(400, 401, 403, 404)},
        summary="The cells where this version differs from another",
    )
    def get(self, request, pk: int):
        row = get_object_or_404(TableauVersion, pk=pk)
        against = request.query_params.get("against", "")
        table_param = request.query_params.get("table", "")
        table = None
        if against:
            other = _version(against[:64], "against")
        elif table_param:
            if not (table_param.isascii() and table_param.isdigit()
                    and len(table_param) < 12):
                raise Invalid("table", "must be a table id")
            table = Table.objects.filter(pk=int(table_param)).first()
            if table is None:
                raise Invalid("table", f"no table with id {table_param}")
            other = tableau_in_force(table)
            if other is None:
                raise Invalid("table", f"{table.name} has no house rules yet")
        else:
            raise Invalid("against", "name a version (?against=) or a table "
                          "(?table=)")
        return Response(TableauDiffSerializer({
            "version": row.version, "against": other.version,
            "table": table.pk if table else None,
            "changes": tableau_diff(other, row),
        }).data)


def reaudit_offer(table: Table, version: str, start) -> dict:
    """What the assign answer offers: the re-audit request to send (by
    default the 30 gaming days before the new version's first day; any
    period may be sent)."""
    return {"url": reverse("reports-api:reaudits"), "body": {
        "tableau_version": version, "tables": [table.pk],
        "from_day": (start - timedelta(days=30)).isoformat(),
        "to_day": (start - timedelta(days=1)).isoformat(),
    }}


class TableTableauView(APIView):
    permission_classes = [ByRoute]

    @extend_schema(
        request=TableauAssignSerializer,
        responses={201: TableauAssignedSerializer, **errors(400, 401, 403, 404)},
        summary="Play a tableau version at a table from a gaming day",
        description="A new version of the table's house rules, every other rule "
        "kept (refused naming the field: an unknown version, a day before the "
        "current gaming day — never retroactive —, a house prescription the "
        "new tableau leaves no choice for). The answer offers a re-audit of a "
        "period against the new version.",
    )
    def post(self, request, pk: int):
        table = get_object_or_404(Table, pk=pk)
        data = TableauAssignSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        before = tableau_in_force(table)
        rules = tableau_assign(
            table=table, tableau_version=v["tableau_version"],
            effective_from=v.get("effective_from"), reason=v["reason"],
            user=request.user, device=device_of(request))
        start = rules.effective_from
        if start is None:
            start = gaming_day_for(timezone.now(), rules.gaming_day_cutoff)
        return Response(TableauAssignedSerializer({
            "rules": rules,
            "changes": tableau_diff(before, rules.tableau) if before else [],
            "reaudit": reaudit_offer(table, rules.tableau.version, start),
        }).data, status=status.HTTP_201_CREATED)
