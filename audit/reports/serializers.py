"""Explicit input and output serializers for the reports API."""

from __future__ import annotations

from decimal import Decimal

from django.urls import reverse
from rest_framework import serializers

from casino.drf import CharField, IntegerField

from .models import ReauditFinding, ReauditRun, ReportJob
from .selectors import GROUPS


class ReportRequestSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=ReportJob.Kind.choices)
    format = serializers.ChoiceField(choices=ReportJob.Format.choices)
    from_day = serializers.DateField(help_text="First gaming day (YYYY-MM-DD).")
    to_day = serializers.DateField(help_text="Last gaming day (YYYY-MM-DD).")
    group_by = serializers.ChoiceField(choices=list(GROUPS), default="table")
    tables = serializers.ListField(
        child=IntegerField(min_value=1), required=False, default=list,
        help_text="Table ids; empty for every table.",
    )


class ReportJobSerializer(serializers.ModelSerializer):
    status_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()
    requested_by = CharField(source="requested_by.username", default=None)

    class Meta:
        model = ReportJob
        fields = [
            "id", "kind", "format", "params", "source", "status", "percent", "rows",
            "rows_expected", "error", "requested_by", "requested_at", "dispatched_at",
            "started_at", "finished_at", "attempts", "file_size", "sha256", "stamp",
            "data_position", "status_url", "download_url",
        ]

    def get_status_url(self, job) -> str:
        return reverse("reports-api:job", args=[job.pk])

    def get_download_url(self, job) -> str | None:
        if job.status != "done":
            return None
        return reverse("reports-api:download", args=[job.pk])


class ReauditRequestSerializer(serializers.Serializer):
    from_day = serializers.DateField()
    to_day = serializers.DateField()
    tableau_version = CharField(
        required=False, default="", allow_blank=True
    )
    chunk_size = IntegerField(required=False, default=30_000)
    tables = serializers.ListField(
        child=IntegerField(min_value=1), required=False, default=list,
        help_text="Table ids; empty for every table.",
    )


class ReauditRunSerializer(serializers.ModelSerializer):
    percent = serializers.IntegerField(read_only=True)
    status_url = serializers.SerializerMethodField()
    findings_url = serializers.SerializerMethodField()
    appear = serializers.IntegerField(
        source="findings_new", read_only=True,
        help_text="Findings the new version raises that the coups were not "
        "recorded with")
    disappear = serializers.IntegerField(
        source="findings_cleared", read_only=True,
        help_text="Findings the coups were recorded with (under the version "
        "they were checked against) that the new version does not raise")
    kept = serializers.SerializerMethodField(
        help_text="Findings the new version raises that the coups were "
        "recorded with: counted, not listed")
    data_position = serializers.JSONField(
        read_only=True,
        help_text="How far the data the run read goes, its chunks' most "
        "conservative (the lowest last coup, the largest replica lag), with "
        "its line in `text`; {} until the run has finished")

    class Meta:
        model = ReauditRun
        fields = [
            "id", "from_day", "to_day", "tableau_version", "tables", "status",
            "percent", "chunks_total", "chunks_done", "coups_expected",
            "coups_checked", "findings", "findings_new", "findings_cleared",
            "appear", "disappear", "kept", "error", "requested_at",
            "dispatched_at", "started_at", "finished_at", "data_position",
            "status_url", "findings_url",
        ]

    def get_kept(self, run) -> int:
        return run.findings - run.findings_new

    def get_status_url(self, run) -> str:
        return reverse("reports-api:reaudit", args=[run.pk])

    def get_findings_url(self, run) -> str:
        return reverse("reports-api:reaudit-findings", args=[run.pk])


# A run's stored change, in the words the issue uses.
CHANGE_WORDS = {"new": "appear", "cleared": "disappear", "kept": "kept"}


class ReauditFindingSerializer(serializers.ModelSerializer):
    change = serializers.SerializerMethodField()
    table_name = serializers.CharField(source="table.name")
    checked_against = serializers.CharField(
        source="coup.tableau_version",
        help_text="The version the coup was checked against when recorded")

    class Meta:
        model = ReauditFinding
        fields = [
            "id", "coup", "table", "table_name", "gaming_day", "change", "code",
            "severity", "side", "detail", "message", "checked_against",
            "tableau_version",
        ]

    def get_change(self, row) -> str:
        """appear (new under the re-audit's version), disappear (recorded,
        gone under it) or kept."""
        return CHANGE_WORDS[row.change]


class ReauditFindingsQuerySerializer(serializers.Serializer):
    change = serializers.ChoiceField(
        choices=["appear", "disappear", "kept", "changed"], default="changed",
        help_text="changed: appear and disappear. kept: listed only by runs "
        "made before kept findings were counted (the run's `kept`) instead "
        "of written")


class OddsQuerySerializer(serializers.Serializer):
    decks = serializers.IntegerField(min_value=1, max_value=8, default=6)
    tableau = CharField(required=False, default="chemmy-standard-1")
    punto_banco = serializers.BooleanField(required=False, default=False)
    punter_draws_on_5 = serializers.BooleanField(required=False, default=True)
    banker_draws_optional = serializers.BooleanField(required=False, default=True)
    rate = serializers.DecimalField(
        max_digits=5, decimal_places=4, min_value=Decimal("0"),
        max_value=Decimal("0.5"), default=Decimal("0.05"),
    )


class CommissionQuerySerializer(serializers.Serializer):
    from_day = serializers.DateField()
    to_day = serializers.DateField()
    group_by = serializers.ChoiceField(choices=list(GROUPS), default="table")
    tables = serializers.ListField(child=serializers.IntegerField(min_value=1),
                                   required=False, default=list)
