"""A table's house rules over the API: its versions, and a new one
(docs/rules.md, "House rules"). A manager writes; everyone who reads tables
reads them."""

from __future__ import annotations

from decimal import Decimal

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casino.drf import BooleanField, CharField, DecimalField, IntegerField
from casino.roles import Can

from ..models import HouseRules, Shoe, Table
from ..services.floor import gaming_day_for
from ..services.holds import shoe_release
from ..services.house import house_rules_change, rules_in_force
from .serializers import ShoeSerializer, money_field
from .views import device_of, errors


class HouseRulesVersionSerializer(serializers.ModelSerializer):
    """One version, every rule, as the engine plays it."""

    tableau_version = CharField(source="tableau.version")
    banker_prescriptions = serializers.SerializerMethodField()
    hold_warnings = serializers.SerializerMethodField()
    created_by = serializers.StringRelatedField()

    class Meta:
        model = HouseRules
        fields = [
            "version",
            "decks",
            "commission_rate",
            "commission_unit",
            "commission_rounding",
            "minimum_banco",
            "maximum_bank",
            "tie_rule",
            "cover_rule",
            "punter_five",
            "banker_prescriptions",
            "hold_on_error",
            "hold_warnings",
            "tableau_version",
            "gaming_day_cutoff",
            "false_draw_sanction",
            "effective_from",
            "created_at",
            "created_by",
        ]

    def get_banker_prescriptions(self, rules) -> dict[str, str]:
        """Cell ("3/9": banker 3, punter's third card 9) -> draw or stand;
        a cell not named is free."""
        return rules.banker_prescriptions or {}

    def get_hold_warnings(self, rules) -> list[str]:
        """Under hold on error, the warnings (finding codes) that stop play
        too; a critical finding always does. Empty: critical findings only."""
        return rules.hold_warnings or []


class TableRulesSerializer(serializers.Serializer):
    table = serializers.IntegerField()
    in_force = serializers.IntegerField(
        allow_null=True,
        help_text="The version the table's open session plays, or, with none "
        "open, the one a session opened now would play.",
    )
    latest = serializers.IntegerField()
    versions = HouseRulesVersionSerializer(many=True)


CHOICE = {
    "commission_rounding": HouseRules.Rounding,
    "tie_rule": HouseRules.Tie,
    "cover_rule": HouseRules.CoverRule,
    "punter_five": HouseRules.Choice,
    "false_draw_sanction": HouseRules.Sanction,
}


class HouseRulesChangeSerializer(serializers.Serializer):
    """A new version: the rules named change, the others keep their value."""

    reason = CharField(max_length=500, help_text="Why the rules change (logged)")
    effective_from = serializers.DateField(
        required=False,
        allow_null=True,
        help_text="The first gaming day it may be played (default: from the "
        "table's next session). Never a day already begun.",
    )
    decks = IntegerField(min_value=1, max_value=8, required=False)
    commission_rate = DecimalField(
        max_digits=5,
        decimal_places=4,
        min_value=Decimal("0"),
        max_value=Decimal("0.5"),
        required=False,
    )
    commission_unit = DecimalField(
        max_digits=8,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal("1000.00"),
        required=False,
    )
    commission_rounding = serializers.ChoiceField(
        choices=HouseRules.Rounding.choices, required=False
    )
    minimum_banco = money_field(required=False)
    maximum_bank = money_field(
        required=False, allow_null=True, help_text="null: no maximum"
    )
    tie_rule = serializers.ChoiceField(choices=HouseRules.Tie.choices, required=False)
    cover_rule = serializers.ChoiceField(
        choices=HouseRules.CoverRule.choices, required=False
    )
    punter_five = serializers.ChoiceField(
        choices=HouseRules.Choice.choices, required=False
    )
    banker_prescriptions = serializers.DictField(
        child=serializers.ChoiceField(choices=HouseRules.Choice.choices),
        required=False,
        allow_null=True,
        help_text='Cell -> free, draw or stand: {"3/9": "draw"} (banker 3 '
        "against a punter's third card 9). Only an optional cell of the "
        "table's tableau. The whole map: a cell not named is free.",
    )
    hold_on_error = BooleanField(required=False)
    hold_warnings = serializers.ListField(
        child=serializers.ChoiceField(choices=HouseRules.HOLDABLE_WARNINGS),
        required=False,
        allow_null=True,
        allow_empty=True,
        help_text='Under hold_on_error, the warnings that stop play too, e.g. '
        '["false_draw"]; a critical finding always does. The whole list: '
        "empty or null, critical findings only.",
    )
    gaming_day_cutoff = IntegerField(min_value=0, max_value=23, required=False)
    false_draw_sanction = serializers.ChoiceField(
        choices=HouseRules.Sanction.choices, required=False
    )
    tableau_version = CharField(max_length=64, required=False)


def table_rules_body(table: Table) -> dict:
    versions = list(
        HouseRules.objects.filter(table=table)
        .select_related("tableau", "created_by")
        .order_by("-version")
    )
    open_session = table.sessions.filter(closed_at__isnull=True).first()
    if open_session is not None:
        in_force = open_session.house_rules
    else:
        day = gaming_day_for(timezone.now(), table.rules.gaming_day_cutoff)
        in_force = rules_in_force(table, day)
    return {
        "table": table.pk,
        "in_force": in_force.version if in_force else None,
        "latest": versions[0].version if versions else 0,
        "versions": versions,
    }


class TableRulesView(APIView):
    def get_permissions(self):
        cap = "table.manage" if self.request.method == "POST" else "table.read"
        return [Can(cap)()]

    @extend_schema(
        responses={200: TableRulesSerializer, **errors(401, 403, 404)},
        summary="A table's house-rules versions, newest first",
    )
    def get(self, request, pk: int):
        table = get_object_or_404(Table, pk=pk)
        return Response(TableRulesSerializer(table_rules_body(table)).data)

    @extend_schema(
        request=HouseRulesChangeSerializer,
        responses={201: HouseRulesVersionSerializer, **errors(400, 401, 403, 404)},
        summary="Write a new version of a table's house rules",
        description="In force from the table's next session (or from "
        "`effective_from`), never for a session already open nor for coups "
        "already played. A bad rule is refused naming it; nothing is written.",
    )
    def post(self, request, pk: int):
        table = get_object_or_404(Table, pk=pk)
        data = HouseRulesChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        reason = values.pop("reason")
        effective_from = values.pop("effective_from", None)
        rules = house_rules_change(
            table=table,
            user=request.user,
            device=device_of(request),
            reason=reason,
            effective_from=effective_from,
            **values,
        )
        return Response(
            HouseRulesVersionSerializer(rules).data, status=status.HTTP_201_CREATED
        )


class ReleaseSerializer(serializers.Serializer):
    reason = CharField(max_length=500, help_text="Why play may go on (logged)")


class ShoeReleaseView(APIView):
    """A shoe held by a critical finding (house rule hold_on_error) takes no
    coup until a pit boss releases it, with a reason."""

    permission_classes = [Can("shoe.release")]

    @extend_schema(
        request=ReleaseSerializer,
        responses={200: ShoeSerializer, **errors(400, 401, 403, 404, 409)},
        summary="Release a held shoe",
    )
    def post(self, request, pk: int):
        shoe = get_object_or_404(Shoe, pk=pk)
        data = ReleaseSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        shoe_release(
            shoe=shoe,
            user=request.user,
            device=device_of(request),
            reason=data.validated_data["reason"],
        )
        return Response(ShoeSerializer(Shoe.objects.get(pk=pk)).data)
