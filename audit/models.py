"""Audit records. Reads the floor (tables), never the other way round."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from casino.models import AppendOnlyModel
from tables.models import MONEY, Coup, Finding, Shoe, Table, TableSession


class CagnotteCount(AppendOnlyModel):
    """The counted cagnotte box of a session at closing, beside the commission
    the system computed. A recount is a new row; the latest one counts."""

    session = models.ForeignKey(
        TableSession, on_delete=models.PROTECT, related_name="cagnotte_counts"
    )
    counted = models.DecimalField(**MONEY)
    computed = models.DecimalField(**MONEY)
    variance = models.DecimalField(**MONEY)  # counted - computed
    counted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    counted_at = models.DateTimeField()
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["session", "-counted_at"]


class CagnotteAttestation(AppendOnlyModel):
    """A manager's "certifié exact" on a count. Once a session's latest count
    is attested, the session is locked: later changes only through corrections
    with reasons (and no recount)."""

    count = models.OneToOneField(
        CagnotteCount, on_delete=models.PROTECT, related_name="attestation"
    )
    attested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    attested_at = models.DateTimeField()
    statement = models.CharField(max_length=100, default="certifié exact")


class Flag(models.Model):
    """A review item for the pit boss: a coup's finding, a cagnotte variance,
    a turn-structure issue a correction found, or a stored value the nightly
    re-settlement (verify_ledger) found differing from the cards. The finding
    (or count) is the fact; the flag carries its review state, which
    `FlagEvent` rows record one by one (status here is re-computable from
    them)."""

    class Kind(models.TextChoices):
        FINDING = "finding"
        CAGNOTTE = "cagnotte"
        STRUCTURE = "structure"
        LEDGER = "ledger", "ledger mismatch"
        SHOE = "shoe", "shoe count"  # a ShoeFinding: the shoe's, no coup's
        # A statistical alert of a surveillance run (audit/surveillance): no
        # coup of its own; its evidence is a SurveillanceEvidence row.
        SURVEILLANCE = "surveillance"
        # A row found changed outside the application by a write that was
        # then refused (casino/continuity.py): critical, no coup of its own.
        INTEGRITY = "integrity", "record changed outside the app"

    class Status(models.TextChoices):
        OPEN = "open"
        CONFIRMED = "confirmed"
        DISMISSED = "dismissed"
        RESOLVED = "resolved"  # no longer shown by the record (a correction)

    # What it is about, stable across coup revisions: "f:<shoe>:<seq>:<key>",
    # "c:<session>", "s:<shoe>:<seq>:<kind>", "l:<sha256 of the difference>",
    # "v:<test>:<subject>:<from day>:<to day>" (a surveillance alert: once per
    # subject, test and period, whichever run finds it).
    ident = models.CharField(max_length=120, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    code = models.CharField(max_length=32, db_index=True)
    severity = models.CharField(max_length=10, choices=Finding.Severity.choices)
    side = models.CharField(max_length=8, blank=True)
    message = models.CharField(max_length=400)
    # None only for a surveillance alert about a croupier or a banker across
    # the floor (no one table or session is its subject).
    table = models.ForeignKey(
        Table, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    session = models.ForeignKey(
        TableSession, null=True, blank=True, on_delete=models.PROTECT,
        related_name="flags",
    )
    gaming_day = models.DateField(db_index=True)
    shoe = models.ForeignKey(
        Shoe, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    seq = models.PositiveIntegerField(null=True, blank=True)
    # The coup revision and finding it stands on now (moved on by corrections).
    coup = models.ForeignKey(
        Coup, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    finding = models.OneToOneField(
        Finding, null=True, blank=True, on_delete=models.PROTECT, related_name="flag"
    )
    count = models.ForeignKey(
        CagnotteCount, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )
    # The croupier concerned (queue filter), and whose work this reviews:
    # four eyes — he may not decide on it.
    croupier = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )
    raised_at = models.DateTimeField(db_index=True)
    live = models.BooleanField(default=True)  # still shown by the record
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        ordering = ["-raised_at"]
        indexes = [models.Index(fields=["status", "severity", "raised_at"])]

    def __str__(self) -> str:
        return f"flag {self.pk} {self.code} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def to_review(self) -> bool:
        """Resolved by a correction, to review: the record no longer shows
        it, yet the flag stays open until a pit boss other than the one whose
        correction made it disappear confirms or dismisses it (four eyes).
        (A finding, variance or shoe count the record still shows is live; a
        flag of another kind is always live.)"""
        return self.is_open and not self.live


class FlagEvent(AppendOnlyModel):
    """One step in a flag's history: raised, confirmed, dismissed, corrected,
    moved to a new revision, resolved by a correction, raised again."""

    flag = models.ForeignKey(Flag, on_delete=models.PROTECT, related_name="events")
    at = models.DateTimeField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )
    action = models.CharField(max_length=20)
    reason = models.TextField(blank=True)
    coup = models.ForeignKey(
        Coup, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["flag", "at", "id"]


class GamingDayClose(AppendOnlyModel):
    """A gaming day closed at one cut-off hour and what the close ran for it,
    written once it has run (audit/reports/nightly.py): the hourly beat task
    finds it here and does not run it again, however often it fires."""

    class Kind(models.TextChoices):
        ANCHOR = "anchor", "trail anchored"
        LEDGER = "ledger", "ledger re-settled"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    cutoff_hour = models.PositiveSmallIntegerField()
    gaming_day = models.DateField()
    done_at = models.DateTimeField()
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["gaming_day", "cutoff_hour", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "cutoff_hour", "gaming_day"],
                name="gaming_day_close_once",
            )
        ]


class SurveillanceRun(models.Model):
    """One run of the statistical surveillance (audit/surveillance) over a
    period of gaming days: the nightly one over the day that just closed, or
    one a manager or an auditor asked for. A small state machine (queued,
    running, done, failed) with its progress, like a report job; what it
    found is flags of kind "surveillance" (raised once per subject, test and
    period, whichever run finds them) and the run's `summary` (the page's
    charts and tables)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Source(models.TextChoices):
        MANUAL = "manual"
        NIGHTLY = "nightly"
        # A look of the live surveillance during the gaming day that raised
        # alerts (audit/surveillance/live.py): its evidence rows' run.
        LIVE = "live"

    from_day = models.DateField()
    to_day = models.DateField()
    tables = models.JSONField(default=list, blank=True)  # ids; empty: all
    source = models.CharField(max_length=10, choices=Source.choices,
                              default=Source.MANUAL)
    # The nightly run of one cut-off and gaming day happens once.
    dedupe_key = models.CharField(max_length=100, null=True, blank=True,
                                  unique=True)
    fdr = models.DecimalField(max_digits=5, decimal_places=4)
    status = models.CharField(max_length=10, choices=Status.choices,
                              default=Status.QUEUED)
    stage = models.CharField(max_length=12, blank=True)  # collect, detect, write
    percent = models.PositiveSmallIntegerField(default=0)
    coups = models.PositiveIntegerField(default=0)
    shoes = models.PositiveIntegerField(default=0)
    tests = models.PositiveIntegerField(default=0)
    alerts = models.PositiveIntegerField(default=0)  # found by this run
    alerts_new = models.PositiveIntegerField(default=0)  # raised by this run
    summary = models.JSONField(default=dict, blank=True)
    timings = models.JSONField(default=dict, blank=True)  # seconds per stage
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
    )
    requested_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-requested_at", "-id"]
        indexes = [models.Index(fields=["from_day", "to_day", "status"])]

    def __str__(self) -> str:
        return f"surveillance run {self.pk} {self.from_day}..{self.to_day}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)


class SurveillanceEvidence(AppendOnlyModel):
    """What a surveillance alert stands on, written once with its flag and
    bound to the trail (casino/trail.py BOUND): the test, its statistic and
    p-value, and the evidence (counts, expectation, limits, the chart's
    points) as the run computed it."""

    flag = models.ForeignKey(Flag, on_delete=models.PROTECT,
                             related_name="evidence")
    run = models.ForeignKey(SurveillanceRun, on_delete=models.PROTECT,
                            related_name="+")
    subject = models.CharField(max_length=80)
    test = models.CharField(max_length=40)
    statistic = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    q_value = models.FloatField(null=True, blank=True)
    evidence = models.JSONField(default=dict)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["flag", "id"]
