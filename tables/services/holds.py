"""Releasing a shoe held by a critical finding (house rule "hold on error",
docs/rules.md, "House rules"): a pit boss lets play go on, with a reason."""

from __future__ import annotations

from django.utils import timezone

from casino.changelog import log_action
from casino.continuity import guard, seal_check
from casino.roles import has_capability

from ..errors import Conflict, Forbidden, Invalid
from ..models import Shoe, ShoeRelease
from .ledger_store import lock_shoe


def shoe_release(
    *, shoe: Shoe | int, user, reason: str, device: str = ""
) -> ShoeRelease:
    """Release a held shoe. The pit boss who releases it must not be the
    croupier whose coup held it (four eyes), and says why."""
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("reason", "releasing a held shoe needs a reason")
    if not has_capability(user, "shoe.release"):
        raise Forbidden("shoe", "only a pit boss releases a held shoe")
    shoe_id = shoe if isinstance(shoe, int) else shoe.pk
    with guard(user=user, device=device):
        shoe = lock_shoe(shoe_id)
        seal_check(shoe, shoe.session)
        if shoe.held_by_seq is None:
            raise Conflict("shoe", "this shoe is not held")
        seq = shoe.held_by_seq
        held_by = (
            shoe.coups.filter(seq=seq)
            .order_by("revision")
            .values_list("entered_by_id", "accepted_by_id")
            .first()
        )
        if held_by and user.pk in held_by:
            raise Forbidden(
                "shoe",
                "you entered the coup that held this shoe: another pit "
                "boss releases it",
            )
        now = timezone.now()
        release = ShoeRelease.objects.create(
            shoe=shoe,
            held_by_seq=seq,
            released_at=now,
            released_by=user,
            reason=reason,
        )
        shoe.held_by_seq = None
        Shoe.objects.filter(pk=shoe.pk).update(held_by_seq=None)
        log_action(
            action="tables.shoe.released",
            user=user,
            device=device,
            obj=shoe,
            reason=reason,
            old={"held_by_seq": seq},
            new={"held_by_seq": None},
            rows=[shoe, release],
        )
    return release
