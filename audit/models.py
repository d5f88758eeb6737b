"""Audit records. Reads the floor (tables), never the other way round."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from casino.models import AppendOnlyModel
from tables.models import MONEY, TableSession


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
