"""When checkpoints are made (casino/merkle.py) and pushed to the witnesses
(casino/witness.py): beat runs `trail.checkpoint` every
TRAIL_CHECKPOINT_SECONDS (1 s), which signs a checkpoint only if the log grew
(idle: none) and pushes it; and `trail.witnesses` every
WITNESS_CHECK_SECONDS, which brings a lagging witness up and asks each again
(a witness that holds more than the database says so). Nothing of it is on
a write's path: no coup waits for it, and a coup's cost (bench/count_coup.py)
does not change."""

from __future__ import annotations

import logging

from .merkle import checkpoint_make
from .witness import witnesses_push

log = logging.getLogger("casino.witness")


def checkpoint_tick() -> dict:
    """`trail.checkpoint`: a checkpoint if the log grew, pushed to every
    witness; idle, nothing (not even a witness asked)."""
    made = checkpoint_make()
    pushed = witnesses_push() if made else {}
    return {"checkpoint": made.size if made else None, "witnesses": pushed}


def checkpoint_publish() -> dict:
    """`trail.witnesses` (and verify_trail --ask-witnesses, the tests): a
    checkpoint if the log grew, then every witness brought up to the latest
    checkpoint, or asked again."""
    made = checkpoint_make()
    pushed = witnesses_push()
    return {"checkpoint": made.size if made else None, "witnesses": pushed}
