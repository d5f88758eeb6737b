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

    class Status(models.TextChoices):
        OPEN = "open"
        CONFIRMED = "confirmed"
        DISMISSED = "dismissed"
        RESOLVED = "resolved"  # no longer shown by the record (a correction)

    # What it is about, stable across coup revisions: "f:<shoe>:<seq>:<key>",
    # "c:<session>", "s:<shoe>:<seq>:<kind>", "l:<sha256 of the difference>".
    ident = models.CharField(max_length=120, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    code = models.CharField(max_length=32, db_index=True)
    severity = models.CharField(max_length=10, choices=Finding.Severity.choices)
    side = models.CharField(max_length=8, blank=True)
    message = models.CharField(max_length=400)
    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="+")
    session = models.ForeignKey(
        TableSession, on_delete=models.PROTECT, related_name="flags"
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
