"""The small shared facts of the floor, below both the ledger core (ledger,
ledger_pg, ledger_store, rollups) and the floor's operations (sessions,
shoes, turns, house rules), which both use them and which they call neither:
the gaming day of a moment, the seat on the banker's right, a player's card
number as stored, a turn's closing figures, and the parsed tableau of a
version (cached: tableau rows never change)."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache

from django.utils import timezone

from .. import chemmy
from ..errors import Invalid
from ..models import PLAYER_CARD_MAX, BankerTurn, TableauVersion

PLAYER_CARD_RE = re.compile(rf"[A-Z0-9]{{1,{PLAYER_CARD_MAX}}}")


def gaming_day_for(moment: datetime, cutoff_hour: int) -> date:
    """The casino's accounting day: a coup at 03:00 with a 06:00 cut-off belongs
    to the previous day's gaming day."""
    local = timezone.localtime(moment)
    return (local - timedelta(hours=cutoff_hour)).date()


def next_seat(seat: int, seats: int) -> int:
    """The seat on the banker's right (seat numbers run that way and wrap)."""
    return seat % seats + 1


def player_card_clean(value, field: str) -> str:
    """A player's card number as stored: letters and digits, up to
    PLAYER_CARD_MAX, upper case (the card printed "ab12" and "AB12" is one
    player); "" (or None) for none. Anything else is refused, naming `field`."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Invalid(field, "must be a text of letters and digits")
    value = value.strip().upper()
    if value and not PLAYER_CARD_RE.fullmatch(value):
        raise Invalid(
            field, f"must be letters and digits only, at most {PLAYER_CARD_MAX}"
        )
    return value


def turn_closing(turn: BankerTurn, end: str, now: datetime) -> dict:
    """End the turn in memory: the banker leaves with bank + garage when he
    passes, the garage alone when he lost. Returns the change log's `new`."""
    turn.closed_at = now
    turn.end = end
    turn.closing_amount = (
        turn.garage_total
        if end == BankerTurn.End.LOST
        else turn.bank + turn.garage_total
    )
    return {
        "bank": turn.bank,
        "garage_total": turn.garage_total,
        "commission_total": turn.commission_total,
        "closing_amount": turn.closing_amount,
        "coups": turn.coups,
    }


@lru_cache(maxsize=64)
def tableau_for(version: str) -> chemmy.Tableau:
    """Tableau versions never change once written, so parse each one once."""
    row = TableauVersion.objects.get(version=version)
    return row.as_engine()


@lru_cache(maxsize=64)
def tableau_by_id(tableau_id: int) -> chemmy.Tableau:
    """Tableau rows are append-only, so a parsed one is good forever (tests
    clear this cache: a rolled-back SQLite id can come back)."""
    return TableauVersion.objects.get(pk=tableau_id).as_engine()
