"""Report jobs, re-audit runs and what a re-audit finds.

A ReportJob / ReauditRun is a small state machine (queued, running, done,
failed) with its progress; the findings a re-audit records are records,
written once. Re-audit findings are kept here, not in tables.Finding, because
the daily rollups count the findings a coup was recorded with: a re-audit
against another tableau must not change the commission report's history.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from casino.models import AppendOnlyModel


class Status(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ReportJob(models.Model):
    class Kind(models.TextChoices):
        COMMISSION = "commission", "Commission report"
        FINDINGS = "findings", "Findings report"
        COUPS = "coups", "Coup detail export"
        # A period's evidence for the regulator (audit/evidence/), a ZIP
        EVIDENCE = "evidence", "Evidence bundle"

    class Format(models.TextChoices):
        CSV = "csv"
        XLSX = "xlsx"
        PDF = "pdf"
        ZIP = "zip"  # the evidence bundle only

    class Source(models.TextChoices):
        MANUAL = "manual"
        NIGHTLY = "nightly"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    format = models.CharField(max_length=8, choices=Format.choices)
    # from_day, to_day (ISO gaming days), group_by, tables (ids; empty = all)
    params = models.JSONField(default=dict)
    source = models.CharField(max_length=10, choices=Source.choices, default="manual")
    # Makes the nightly job for one table and day happen once, however often
    # beat fires (idempotent schedule).
    dedupe_key = models.CharField(max_length=100, null=True, blank=True, unique=True)
    status = models.CharField(max_length=10, choices=Status.choices, default="queued")
    percent = models.PositiveSmallIntegerField(default=0)
    rows = models.PositiveIntegerField(default=0)
    rows_expected = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    requested_at = models.DateTimeField()
    # Set once the task reached the broker; a job left undispatched (broker
    # down) is sent again by reports.dispatch_pending, never lost.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Builds started: more than 1 when the task was delivered again (a worker
    # killed mid-build). Also the fence: only the latest attempt may publish.
    attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)
    file = models.CharField(max_length=300, blank=True)  # relative to MEDIA_ROOT
    file_size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    stamp = models.JSONField(default=dict)
    # How far the data the report read goes (casino.replica.Position): the
    # last coup visible, and the replica's lag when it read a replica.
    data_position = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [models.Index(fields=["status", "requested_at"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.format})"

    @property
    def filename(self) -> str:
        p = self.params
        period = f"{p.get('from_day')}-{p.get('to_day')}"
        return f"{self.kind}-{period}-{self.pk}.{self.format}"


class ReauditRun(models.Model):
    from_day = models.DateField()
    to_day = models.DateField()
    # Blank: each table's current tableau (the usual case after a change).
    tableau_version = models.CharField(max_length=64, blank=True)
    # Table ids the run covers; empty: every table.
    tables = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default="queued")
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    coups_expected = models.PositiveIntegerField(default=0)
    coups_checked = models.PositiveIntegerField(default=0)
    findings = models.PositiveIntegerField(default=0)  # under the new version
    findings_new = models.PositiveIntegerField(default=0)
    findings_cleared = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    requested_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # How far the data the run read goes (casino.replica.Position, as
    # stored): its chunks' most conservative, set when it finishes.
    data_position = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]

    def __str__(self) -> str:
        return f"Re-audit #{self.pk} {self.from_day}..{self.to_day}"

    @property
    def percent(self) -> int:
        if self.status == Status.DONE:
            return 100
        if not self.coups_expected:
            return 0
        return min(99, self.coups_checked * 100 // self.coups_expected)


class ReauditChunk(models.Model):
    """A slice of a run: some (table, gaming day) cells, ~chunk_size coups.
    Done once (done_at): a redelivered task finds it done and returns."""

    run = models.ForeignKey(
        ReauditRun, on_delete=models.CASCADE, related_name="chunks"
    )
    index = models.PositiveIntegerField()
    cells = models.JSONField()  # [[table_id, "YYYY-MM-DD", part, parts], ...]
    coups_planned = models.PositiveIntegerField(default=0)
    coups_checked = models.PositiveIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)
    # How far the data the chunk read goes (casino.replica.Position, as
    # stored): the replica's state it read, or the primary's.
    data_position = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "index"], name="reaudit_chunk_unique"
            )
        ]

    def __str__(self) -> str:
        return f"chunk {self.index} of run {self.run_id}"


class ReauditFinding(AppendOnlyModel):
    """A coup's finding under the re-audit's tableau version, or one that the
    new version clears. `change`: new (not recorded before), kept, cleared."""

    class Change(models.TextChoices):
        NEW = "new"
        KEPT = "kept"
        CLEARED = "cleared"

    run = models.ForeignKey(ReauditRun, on_delete=models.PROTECT, related_name="+")
    coup = models.ForeignKey("tables.Coup", on_delete=models.PROTECT, related_name="+")
    table = models.ForeignKey(
        "tables.Table", on_delete=models.PROTECT, related_name="+"
    )
    gaming_day = models.DateField()
    code = models.CharField(max_length=32)
    severity = models.CharField(max_length=10)
    side = models.CharField(max_length=8, blank=True)
    detail = models.JSONField(default=dict)
    message = models.CharField(max_length=300)
    tableau_version = models.CharField(max_length=64)
    change = models.CharField(max_length=8, choices=Change.choices)

    class Meta:
        ordering = ["run", "coup", "id"]
        # Once per run, coup and finding (the engine finds a code once per
        # side): a chunk delivered twice cannot write its findings twice.
        constraints = [
            models.UniqueConstraint(
                fields=["run", "coup", "code", "side"], name="reaudit_finding_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.change} {self.code} on coup {self.coup_id}"
