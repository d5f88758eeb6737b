"""The trail's own schedule: anchors of the chain's head (casino/anchors.py)
and their trusted timestamps (casino/timestamps.py)."""

from __future__ import annotations

from celery import shared_task

from .anchors import trail_anchor
from .celery import message_refused
from .checkpoints import checkpoint_publish, checkpoint_tick
from .timestamps import timestamps_retry

# The reasons an anchor asked for through the broker may carry: beat's
# (settings.CELERY_BEAT_SCHEDULE). The message's text never reaches a signed
# anchor: a Redis writer could otherwise sign "key rotation" in our name.
ANCHOR_REASONS = frozenset({"interval"})


@shared_task(name="trail.anchor", acks_late=True)
def trail_anchor_task(reason: str = "interval") -> int | dict | None:
    """Idempotent enough: a second anchor of the same head is one more file
    saying the same thing (all a forged message with a good reason gets)."""
    if not (isinstance(reason, str) and reason in ANCHOR_REASONS):
        return message_refused(
            "trail.anchor", f"reason {str(reason)[:80]!r} is not one of "
            f"{sorted(ANCHOR_REASONS)}")
    anchor = trail_anchor(reason=reason)
    return anchor.row if anchor else None


@shared_task(name="trail.timestamps_retry", acks_late=True)
def timestamps_retry_task() -> dict:
    """Ask the time-stamp authority again for the anchors it did not answer
    for (casino/timestamps.py). Idempotent: an anchor with its token is not
    asked again."""
    return timestamps_retry()


@shared_task(name="trail.checkpoint", acks_late=True)
def trail_checkpoint_task(*args, **kwargs) -> dict:
    """A checkpoint of the trail if it grew since the last one, pushed to the
    witnesses (casino/checkpoints.py); idle, nothing. Idempotent."""
    if args or kwargs:  # it takes nothing: a message with more is forged
        return message_refused("trail.checkpoint", "it takes no arguments")
    return checkpoint_tick()


@shared_task(name="trail.witnesses", acks_late=True)
def trail_witnesses_task(*args, **kwargs) -> dict:
    """Every witness brought up to the latest checkpoint, or asked again: a
    witness down is retried, one that holds more than the database is heard
    (casino/witness.py). Idempotent."""
    if args or kwargs:
        return message_refused("trail.witnesses", "it takes no arguments")
    return checkpoint_publish()
