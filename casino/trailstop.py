"""Whether the trail is stopped: a fork or a rollback the witnesses or the
checkpoint maker named (casino/merkle.py, casino/witness.py) and the
operator has not declared (a later `epoch`). Below the chain's writers: on
PostgreSQL casino_chain_head asks the same in SQL (migration casino 0016)."""

from __future__ import annotations

from django.db.models import Subquery, Value
from django.db.models.functions import Coalesce

from .models import WitnessEvent

STOPPING = ("fork", "behind")


def stop_reason_event() -> WitnessEvent | None:
    """The fork or rollback that stops writes: the first one after the last
    declared epoch, the cause (None: writes go on)."""
    # one statement: this runs at every chain head read on SQLite
    epoch = WitnessEvent.objects.filter(kind="epoch").order_by("-id").values("id")[:1]
    return (WitnessEvent.objects.filter(
        kind__in=STOPPING, id__gt=Coalesce(Subquery(epoch), Value(0)))
            .order_by("id").first())
