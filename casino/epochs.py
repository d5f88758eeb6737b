"""A real disaster restore, declared (issue 37 item 3): the witnesses named
a fork or a rollback, writes are stopped (casino/trailstop.py), and the
operator says so in the trail. `epoch_declare` writes the declaration as the
first row of a new epoch of the log: what the witnesses last cosigned of the
old one (size, root, when), the largest tree they said they hold, the rows
the database holds, and so the rows lost, with the operator's reason. The
new epoch is a new log for the witnesses (origin "<TRAIL_LOG_ORIGIN>/epoch<n>",
casino/merkle.py): they never cosign a tree that does not extend the last
one, so the regulator adds the new log's key to its witness, and sees the
declaration doing it. A loss is never silent, and the floor waits only for
this command."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tools.evidence_verifier import tlog

from .changelog import log_action
from .merkle import current_epoch, log_vkey, origin
from .models import ChangeLog, Checkpoint, WitnessEvent
from .trailstop import STOPPING, stop_reason_event
from .witness import epoch_rows, last_cosigned

ACTION = "casino.trail.epoch_declared"


class EpochRefused(ValueError):
    pass


def _witnessed(epoch: int) -> dict[str, dict]:
    out = {}
    for w in settings.WITNESSES:
        last = last_cosigned(w["name"], epoch)
        if last is not None:
            out[w["name"]] = {
                "size": last.checkpoint.size,
                "root": tlog.b64(bytes.fromhex(last.checkpoint.root)),
                "at": last.time.isoformat(), "line": last.line}
    return out


def epoch_declare(*, reason: str, user=None, device: str = "") -> ChangeLog:
    """Declare the loss the witnesses named and start the next epoch; its
    first row (returned) says what was lost."""
    reason = (reason or "").strip()
    if not reason:
        raise EpochRefused("reason: say what happened (the restore, its dump)")
    stop = stop_reason_event()
    if stop is None:
        raise EpochRefused("nothing to declare: no fork or rollback stops the trail")
    epoch, start = current_epoch()
    witnessed = _witnessed(epoch)
    named = WitnessEvent.objects.filter(kind__in=STOPPING, id__gte=stop.pk)
    held = max([e.size or 0 for e in named]
               + [v["size"] for v in witnessed.values()] + [0])
    rows = epoch_rows()
    last = Checkpoint.objects.filter(epoch=epoch).order_by("-id").first()
    with transaction.atomic():
        first = (ChangeLog.objects.order_by("-id").values_list("id", flat=True)
                 .first() or 0) + 1
        WitnessEvent.objects.create(
            kind="epoch", epoch=epoch + 1, row=first, at=timezone.now(),
            detail=f"epoch {epoch + 1} declared: {reason}"[:2000])
        return log_action(
            action=ACTION, user=user, device=device, reason=reason,
            new={
                "epoch": epoch + 1, "origin": origin(epoch + 1),
                "log_key": log_vkey(epoch + 1),
                "previous": {"epoch": epoch, "origin": origin(epoch),
                             "first_row": start,
                             "last_checkpoint": last.note if last else None},
                "stopped_by": {"kind": stop.kind, "witness": stop.witness,
                               "detail": stop.detail, "at": stop.at.isoformat()},
                "witnesses": witnessed,
                "database_rows": rows,
                "witness_held": held,
                "rows_lost": max(0, held - rows),
            })
