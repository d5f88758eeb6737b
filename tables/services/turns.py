"""Banker turns: opening one (la main), passing the bank (suite), closing one
when the bank is lost or the session closes, and the checks the floor
services and shoe_play share.

Each service is keyword-only, runs in one transaction, locks the row it moves
on, and writes its change-log row in that same transaction.
"""

from __future__ import annotations

from decimal import Decimal

from django.utils import timezone

from casino.changelog import log_action
from casino.continuity import guard, seal_check

from ..errors import Conflict, Invalid, NotFound
from ..models import BankerTurn, TableSession
from . import ledger_pg
from .access import croupier_check
from .facts import player_card_clean, turn_closing


def _money(value: Decimal, field: str) -> Decimal:
    if not isinstance(value, Decimal) or not value.is_finite():
        raise Invalid(field, "must be a decimal amount")
    if value.as_tuple().exponent < -2:
        raise Invalid(field, "must have at most 2 decimal places")
    return value


def passed_bank_offer(
    session: TableSession,
) -> tuple[BankerTurn | None, Decimal | None]:
    """The bank standing on offer after a pass, if no turn has opened since."""
    last = session.turns.order_by("-number").first()
    return last, standing_offer(last)


def standing_offer(last: BankerTurn | None) -> Decimal | None:
    """The bank on offer after `last` (the session's latest turn) was passed."""
    if last is not None and last.end == BankerTurn.End.PASSED:
        return last.bank
    return None


def turn_open_check(
    *,
    session_open: bool,
    turn_open: bool,
    seats: int,
    minimum_banco: Decimal,
    last: BankerTurn | None,
    seat: int,
    bank: Decimal,
) -> tuple[Decimal, bool]:
    """May a turn open here with this seat and bank? Returns the bank and
    whether it is the passed bank taken over (banker_turn_open, shoe_play)."""
    if not session_open:
        raise Conflict("session", "this session is closed")
    if turn_open:
        raise Conflict("session", "a banker turn is already open")
    if not isinstance(seat, int) or not 1 <= seat <= seats:
        raise Invalid("seat", f"must be a seat between 1 and {seats}")
    bank = _money(bank, "bank")
    offer = standing_offer(last)
    took_passed = offer is not None and bank == offer and seat != last.seat
    if not took_passed and bank < minimum_banco:
        raise Invalid("bank", f"must be at least the minimum banco {minimum_banco}")
    return bank, took_passed


def turn_opened_new(seat: int, bank: Decimal, took_passed: bool, card: str) -> dict:
    """The change log's `new` of a turn opened (the card only when given)."""
    new = {"seat": seat, "bank": bank, "took_passed_bank": took_passed}
    if card:
        new["player_card"] = card
    return new


def turn_pass_check(turn: BankerTurn) -> None:
    """May the bank be passed now (banker_turn_pass, shoe_play)?"""
    if not turn.is_open:
        raise Conflict("turn", "this banker turn is already over")
    if turn.coups == 0:
        raise Conflict("turn", "the bank can only be passed after a coup")


def banker_turn_open(
    *,
    session: TableSession | int,
    user,
    seat: int,
    bank: Decimal,
    player_card: str = "",
    device: str = "",
) -> BankerTurn:
    """Open a banker turn. After a pass, whoever takes the bank opens with
    exactly its standing amount; otherwise the bank is at least the minimum.
    `session` is the row or its id: it is read again under its lock, and the
    user must be its croupier then (a pit boss anywhere). `player_card`: the
    banker's card number, when the croupier entered one."""
    player_card = player_card_clean(player_card, "player_card")
    session_id = session if isinstance(session, int) else session.pk
    with guard(user=user, device=device):
        # PostgreSQL: the reads in one statement and the writes in another
        # (ledger_pg); elsewhere, or for a table without rules, the ORM's.
        fast = ledger_pg.lock_for_turn(session_id) if ledger_pg.supported() else None
        if fast is not None:
            session, last, turn_id, head = fast
        else:
            try:
                session = (
                    TableSession.objects.select_for_update(of=("self",), no_key=True)
                    .select_related("table", "rules")
                    .get(pk=session_id)
                )
            except TableSession.DoesNotExist:
                raise NotFound("session", f"no session with id {session_id}") from None
            # One open turn at most, and it is the latest: one read says both.
            last = (session.turns.select_for_update(of=("self",), no_key=True)
                    .order_by("-number").first())
            seal_check(session, session.table, last)
        croupier_check(user, session)
        table = session.table
        turn_open = last is not None and last.closed_at is None
        bank, took_passed = turn_open_check(
            session_open=session.is_open,
            turn_open=turn_open,
            seats=table.seats,
            minimum_banco=session.house_rules.minimum_banco,
            last=last,
            seat=seat,
            bank=bank,
        )
        turn = BankerTurn(
            session=session,
            number=(last.number + 1) if last else 1,
            seat=seat,
            player_card=player_card,
            opening_bank=bank,
            bank=bank,
            took_passed_bank=took_passed,
            opened_at=timezone.now(),
            opened_by=user,
        )
        log = {
            "action": "tables.turn.opened",
            "user": user,
            "device": device,
            "obj": turn,
            "new": turn_opened_new(seat, bank, took_passed, player_card),
        }
        if fast is not None:
            ledger_pg.turn_write(turn, turn_id, log, head)
        else:
            turn.save()
            log_action(**log)
    return turn


def banker_turn_pass(*, turn: BankerTurn, user, device: str = "") -> BankerTurn:
    """Suite: the banker passes the bank after a win. He leaves with the bank
    and his garage; the bank is offered on at its standing amount."""
    with guard(user=user, device=device):
        turn = (
            BankerTurn.objects.select_for_update(of=("self",), no_key=True)
            .select_related("session")
            .get(pk=turn.pk)
        )
        seal_check(turn, turn.session)
        croupier_check(user, turn.session)
        turn_pass_check(turn)
        _turn_close(turn, BankerTurn.End.PASSED, user=user, device=device)
    return turn


def _turn_close(turn: BankerTurn, end: str, *, user, device: str) -> None:
    if "_trail_before" not in turn.__dict__:
        seal_check(turn)
    new = turn_closing(turn, end, timezone.now())
    turn.save(update_fields=["closed_at", "end", "closing_amount"])
    log_action(
        action=f"tables.turn.{end}", user=user, device=device, obj=turn, new=new
    )
