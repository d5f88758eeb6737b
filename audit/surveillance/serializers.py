"""Explicit input and output serializers of the surveillance API."""

from __future__ import annotations

from decimal import Decimal

from django.urls import reverse
from rest_framework import serializers

from casino.drf import CharField, DecimalField, IntegerField

from ..models import Flag, SurveillanceRun


class RunRequestSerializer(serializers.Serializer):
    from_day = serializers.DateField(help_text="First gaming day (YYYY-MM-DD).")
    to_day = serializers.DateField(help_text="Last gaming day (YYYY-MM-DD).")
    tables = serializers.ListField(
        child=IntegerField(min_value=1), required=False, default=list,
        max_length=500, help_text="Table ids; empty for every table.")
    fdr = DecimalField(
        max_digits=5, decimal_places=4, min_value=Decimal("0"), required=False,
        allow_null=True, default=None,
        help_text="False discovery rate for this run (a manager only); "
        "default: the house's (SURVEILLANCE_FDR).")


class RunSerializer(serializers.ModelSerializer):
    status_url = serializers.SerializerMethodField()
    alerts_url = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    requested_by = CharField(source="requested_by.username", default=None)
    fdr = CharField()

    class Meta:
        model = SurveillanceRun
        fields = [
            "id", "from_day", "to_day", "tables", "source", "fdr", "status",
            "stage", "percent", "coups", "shoes", "tests", "alerts",
            "alerts_new", "error", "requested_by", "requested_at",
            "dispatched_at", "started_at", "finished_at", "attempts", "timings",
            "status_url", "alerts_url", "page_url",
        ]

    def get_status_url(self, run) -> str:
        return reverse("audit-api-surveillance-run", args=[run.pk])

    def get_alerts_url(self, run) -> str:
        return reverse("audit-api-surveillance-alerts", args=[run.pk])

    def get_page_url(self, run) -> str:
        return reverse("floor:surveillance-run", args=[run.pk])


class AlertSerializer(serializers.ModelSerializer):
    """An alert the run found: its flag in the queue (raised by this run or
    an earlier one over the same subject, test and period) and its
    evidence."""

    flag_url = serializers.SerializerMethodField()
    test = CharField(source="code")
    subject = CharField(default=None)
    statistic = serializers.FloatField(default=None)
    p_value = serializers.FloatField(default=None)
    q_value = serializers.FloatField(default=None)
    evidence = serializers.SerializerMethodField()
    raised_by_run = serializers.IntegerField(default=None)
    croupier = serializers.StringRelatedField()
    decided_by = serializers.StringRelatedField()

    class Meta:
        model = Flag
        fields = [
            "id", "ident", "test", "severity", "message", "status", "subject",
            "statistic", "p_value", "q_value", "table", "session", "shoe",
            "croupier", "gaming_day", "raised_at", "decided_at", "decided_by",
            "raised_by_run", "evidence", "flag_url",
        ]

    def get_evidence(self, flag) -> dict | None:
        return getattr(flag, "alert_evidence", None)

    def get_flag_url(self, flag) -> str:
        return reverse("floor:flag", args=[flag.pk])
