"""The trail's own schedule: anchors of the chain's head (casino/anchors.py)."""

from __future__ import annotations

from celery import shared_task

from .anchors import trail_anchor


@shared_task(name="trail.anchor", acks_late=True)
def trail_anchor_task(reason: str = "interval") -> int | None:
    """Idempotent enough: a second anchor of the same head is one more file
    saying the same thing."""
    anchor = trail_anchor(reason=reason)
    return anchor.row if anchor else None
