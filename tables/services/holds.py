"""Releasing a shoe held by a critical finding (house rule "hold on error",
docs/rules.md, "House rules"): a pit boss lets play go on, with a reason."""

from __future__ import annotations

from django.utils import timezone

from casino.changelog import log_action
from casino.continuity import guard, seal_check
from casino.roles import has_capability

from ..errors import Conflict, Forbidden, Invalid
from ..finding_words import finding_text
from ..models import Shoe, ShoeRelease
from .ledger_store import lock_shoe


def hold_of(shoe: Shoe) -> dict | None:
    """What holds a shoe (house rule hold on error), for the tablet and the
    floor: the coup that held it and its findings that stop play, in the
    reader's language. None when the shoe is not held."""
    seq = shoe.held_by_seq
    if seq is None:
        return None
    coup = (
        shoe.coups.filter(seq=seq)
        .order_by("revision")
        .select_related("rules")
        .prefetch_related("findings")
        .first()
    )
    findings = list(coup.findings.all()) if coup else []
    stopping = [f for f in findings if coup.rules.stops_play([f])] or findings
    return {
        "seq": seq,
        "coup": coup.pk if coup else None,
        "findings": [finding_text(f, coup) for f in stopping],
        # what kind of finding stopped play, for a sentence that names it
        # ("A false draw stops play at this table", the tablet's strings)
        "codes": list(dict.fromkeys(f.code for f in stopping)),
    }


def hold_codes(shoe: Shoe) -> list[str]:
    """The codes of the findings that hold this shoe (none when not held)."""
    hold = hold_of(shoe)
    return hold["codes"] if hold else []


def held_shoes() -> list[dict]:
    """Every open shoe that play is stopped at, by table: the floor's and the
    review queue's banner."""
    shoes = (
        Shoe.objects.filter(held_by_seq__isnull=False, closed_at__isnull=True)
        .select_related("session__table")
        .order_by("session__table__name", "pk")
    )
    return [{"shoe": s, "table": s.session.table, **hold_of(s)} for s in shoes]


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
