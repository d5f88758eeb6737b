"""When checkpoints are made (casino/merkle.py) and pushed to the witnesses
(casino/witness.py): the `trail.checkpoint` task's body, and the write
path's request for it."""

from __future__ import annotations

import logging
import time

from django.conf import settings

from .merkle import checkpoint_make
from .witness import witnesses_push

log = logging.getLogger("casino.witness")
DEBOUNCE_SECONDS = 1.0


def checkpoint_publish() -> dict:
    """The Celery task's body: a checkpoint if the log grew, then every
    witness brought up to the latest checkpoint."""
    made = checkpoint_make()
    pushed = witnesses_push()
    return {"checkpoint": made.size if made else None, "witnesses": pushed}


_sent = [float("-inf")]


def checkpoint_soon() -> None:
    """After a commit that wrote the log: ask for a checkpoint in a second,
    unless this process asked less than a second ago (that task, still to
    run, covers this commit). Costs the coup nothing but a clock read; eager
    Celery (no broker: a laptop, the tests) sends nothing, since the task
    would run inside the request."""
    now = time.monotonic()
    if now - _sent[0] < DEBOUNCE_SECONDS or not settings.TRAIL_CHECKPOINTS:
        return
    from .celery import app, by_name, publish

    if app.conf.task_always_eager:
        return
    _sent[0] = now
    try:
        publish(by_name("trail.checkpoint").set(countdown=DEBOUNCE_SECONDS))
    except Exception:  # noqa: BLE001 - the coup is committed; beat catches up
        _sent[0] = float("-inf")
        log.warning("could not send trail.checkpoint", exc_info=True)
