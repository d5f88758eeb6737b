"""The trail's own schedule: anchors of the chain's head (casino/anchors.py)
and their trusted timestamps (casino/timestamps.py)."""

from __future__ import annotations

from celery import shared_task

from .anchors import trail_anchor
from .timestamps import timestamps_retry


@shared_task(name="trail.anchor", acks_late=True)
def trail_anchor_task(reason: str = "interval") -> int | None:
    """Idempotent enough: a second anchor of the same head is one more file
    saying the same thing."""
    anchor = trail_anchor(reason=reason)
    return anchor.row if anchor else None


@shared_task(name="trail.timestamps_retry", acks_late=True)
def timestamps_retry_task() -> dict:
    """Ask the time-stamp authority again for the anchors it did not answer
    for (casino/timestamps.py). Idempotent: an anchor with its token is not
    asked again."""
    return timestamps_retry()
