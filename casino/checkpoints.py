"""When checkpoints are made (casino/merkle.py) and pushed to the witnesses
(casino/witness.py): beat runs `trail.checkpoint` every
TRAIL_CHECKPOINT_SECONDS (0.5 s), which signs a checkpoint only if the log grew
(idle: none) and pushes it; and `trail.witnesses` every
WITNESS_CHECK_SECONDS, which brings a lagging witness up and asks each again
(a witness that holds more than the database says so). When idle, the tick
still compares the database's tree with what the witnesses cosigned as the
shared cache remembers it (casino/witness.py `witnessed_beyond_database`:
one cache read, one indexed look-up) and asks them at once when the database
holds less: a restored dump is named within a second or two, not
WITNESS_CHECK_SECONDS (bench/bench_witness_detect.py). Nothing of it is on
a write's path: no coup waits for it, and a coup's cost (bench/count_coup.py)
does not change."""

from __future__ import annotations

import logging

from .merkle import checkpoint_make
from .witness import witnessed_beyond_database, witnesses_push

log = logging.getLogger("casino.witness")


def checkpoint_tick() -> dict:
    """`trail.checkpoint`: a checkpoint if the log grew, pushed to every
    witness; idle, nothing, unless the witnesses cosigned a larger tree than
    the database holds (then they are asked at once, and name it)."""
    made = checkpoint_make()
    pushed = witnesses_push() if made or witnessed_beyond_database() else {}
    return {"checkpoint": made.size if made else None, "witnesses": pushed}


def checkpoint_publish() -> dict:
    """`trail.witnesses` (and verify_trail --ask-witnesses, the tests): a
    checkpoint if the log grew, then every witness brought up to the latest
    checkpoint, or asked again."""
    made = checkpoint_make()
    pushed = witnesses_push()
    return {"checkpoint": made.size if made else None, "witnesses": pushed}
