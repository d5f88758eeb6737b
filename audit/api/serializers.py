"""Explicit input and output serializers of the pit boss's API."""

from __future__ import annotations

from rest_framework import serializers

from casino.drf import CharField, IntegerField
from casino.models import ChangeLog
from tables.api.serializers import (
    CoupSerializer,
    StakeInSerializer,
    hand_field,
    money_field,
)

from ..models import CagnotteCount, Flag, FlagEvent


class FlagEventSerializer(serializers.ModelSerializer):
    user = serializers.StringRelatedField()

    class Meta:
        model = FlagEvent
        fields = ["at", "user", "action", "reason", "coup", "detail"]


class FlagSerializer(serializers.ModelSerializer):
    kind_label = CharField(source="get_kind_display", read_only=True)
    table_name = CharField(source="table.name", read_only=True)
    croupier = serializers.StringRelatedField()
    decided_by = serializers.StringRelatedField()
    revision = serializers.IntegerField(source="coup.revision", default=None)
    to_review = serializers.BooleanField(
        read_only=True,
        help_text="Resolved by a correction, to review: the record no longer "
        "shows it, yet it stays open until a pit boss other than the corrector "
        "confirms or dismisses it (four eyes).")

    class Meta:
        model = Flag
        fields = [
            "id", "kind", "kind_label", "code", "severity", "side", "message",
            "status", "to_review", "live", "table", "table_name", "session",
            "gaming_day", "shoe", "seq", "coup", "revision", "count", "croupier",
            "raised_at", "decided_at", "decided_by",
        ]


class FlagDetailSerializer(FlagSerializer):
    events = FlagEventSerializer(many=True, read_only=True)
    current_coup = CoupSerializer(source="coup", read_only=True)
    rule = CharField(read_only=True)

    class Meta(FlagSerializer.Meta):
        fields = [*FlagSerializer.Meta.fields, "events", "current_coup", "rule"]


class CountOptionSerializer(serializers.Serializer):
    value = serializers.JSONField(allow_null=True)
    label = CharField()
    count = serializers.IntegerField()


class FlagCountsSerializer(serializers.Serializer):
    total = CountOptionSerializer(many=True)
    table = CountOptionSerializer(many=True)
    code = CountOptionSerializer(many=True)
    side = CountOptionSerializer(many=True)
    croupier = CountOptionSerializer(many=True)
    gaming_day = CountOptionSerializer(many=True)
    status = CountOptionSerializer(many=True)
    severity = CountOptionSerializer(many=True)


class ReasonSerializer(serializers.Serializer):
    reason = CharField(max_length=2000)


class ConfirmSerializer(ReasonSerializer):
    fine_amount = money_field(required=False, allow_null=True)


class CorrectionInSerializer(serializers.Serializer):
    punter = hand_field()
    banker = hand_field()
    stakes = serializers.ListField(child=StakeInSerializer(), min_length=1,
                                   max_length=40)
    declared_bank = money_field(required=False, allow_null=True)


class CorrectionSerializer(CorrectionInSerializer):
    reason = CharField(max_length=2000)
    plan_digest = CharField(
        min_length=64, max_length=64,
        help_text="The digest of the preview the pit boss saw: the correction "
        "is refused (409) if the table moved on since.")


class DismissSerializer(ReasonSerializer):
    correction = CorrectionInSerializer(required=False, allow_null=True)
    plan_digest = CharField(min_length=64, max_length=64,
                                        required=False)

    def validate(self, attrs):
        if attrs.get("correction") and not attrs.get("plan_digest"):
            raise serializers.ValidationError(
                {"plan_digest": "preview the correction first and send its digest"})
        return attrs


class PlanSerializer(serializers.Serializer):
    coup = serializers.IntegerField()
    shoe = serializers.IntegerField()
    seq = serializers.IntegerField()
    commission_delta = CharField()
    payout_delta_by_seat = serializers.DictField(child=CharField())
    coups = serializers.ListField(child=serializers.DictField())
    turns = serializers.ListField(child=serializers.DictField())
    issues = serializers.ListField(child=serializers.DictField())
    digest = CharField()


class CorrectionResultSerializer(serializers.Serializer):
    revision = CoupSerializer()
    plan = PlanSerializer()


class CagnotteCountInSerializer(serializers.Serializer):
    counted = money_field(min_value=0)
    reason = CharField(max_length=2000, required=False, allow_blank=True)


class CagnotteCountSerializer(serializers.ModelSerializer):
    counted_by = serializers.StringRelatedField()
    attested_by = serializers.SerializerMethodField()
    attested_at = serializers.SerializerMethodField()

    class Meta:
        model = CagnotteCount
        fields = ["id", "session", "counted", "computed", "variance", "counted_by",
                  "counted_at", "reason", "attested_by", "attested_at"]

    def _att(self, count):
        return getattr(count, "attestation", None)

    def get_attested_by(self, count) -> str | None:
        a = self._att(count)
        return str(a.attested_by) if a else None

    def get_attested_at(self, count) -> str | None:
        a = self._att(count)
        return a.attested_at.isoformat() if a else None


class CagnotteStateSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    open = serializers.BooleanField()
    computed = serializers.DecimalField(max_digits=14, decimal_places=2)
    locked = serializers.BooleanField()
    counts = CagnotteCountSerializer(many=True)


class AttestSerializer(serializers.Serializer):
    statement = CharField(max_length=100, default="certifié exact")


class CroupierSerializer(serializers.Serializer):
    croupier = IntegerField(
        required=False, help_text="User id; omitted: yourself (a relief croupier "
        "taking over)")
    reason = CharField(max_length=2000, required=False, allow_blank=True)


class CroupierResultSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    croupier = serializers.IntegerField()
    croupier_name = CharField()


class FloorTableSerializer(serializers.Serializer):
    session = serializers.IntegerField(source="session.pk")
    table = serializers.IntegerField(source="table.pk")
    table_name = CharField(source="table.name")
    croupier = CharField(allow_null=True)
    banker_seat = serializers.IntegerField(source="turn.seat", allow_null=True,
                                           default=None)
    bank = serializers.DecimalField(source="turn.bank", max_digits=14,
                                    decimal_places=2, allow_null=True, default=None)
    coups = serializers.IntegerField()
    shoe = serializers.IntegerField(source="shoe.number", allow_null=True,
                                    default=None)
    cards_left = serializers.IntegerField(source="shoe.cards_left", allow_null=True,
                                          default=None)
    critical = serializers.IntegerField()
    warning = serializers.IntegerField()
    live = serializers.IntegerField(
        help_text="open live surveillance alerts at the table (issue 38)")


class TrailRowSerializer(serializers.ModelSerializer):
    user = serializers.StringRelatedField()

    class Meta:
        model = ChangeLog
        fields = ["id", "at", "user", "device", "action", "object_type", "object_id",
                  "reason", "old", "new", "ledger", "prev_hash", "hash", "key_id",
                  "link"]


class TrailCheckSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    rows = serializers.IntegerField()
    head_id = serializers.IntegerField(allow_null=True)
    head_hash = CharField()
    broken_id = serializers.IntegerField(allow_null=True)
    problem = CharField(allow_blank=True)
    ledger_rows = serializers.IntegerField(
        help_text="ledger rows checked against the digest their trail row holds")
    anchors = serializers.IntegerField(help_text="anchors on file, each checked")
    problems = serializers.ListField(
        child=CharField(), help_text="every problem found (the first 100)")


class StatsSerializer(serializers.Serializer):
    day_from = serializers.DateField()
    day_to = serializers.DateField()
    croupiers = serializers.ListField(child=serializers.DictField())
    seats = serializers.ListField(child=serializers.DictField())
    tables = serializers.ListField(child=serializers.DictField())
    # how far the data goes (casino.replica.Position.as_dict): the reports
    # replica when there is one
    data_position = serializers.DictField()
