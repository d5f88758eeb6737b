"""Recording a run of a shoe in one call: coups, banks opened and passed.

`shoe_play` is what `coup_record`, `banker_turn_open` and `banker_turn_pass`
would do called one after the other, event by event, with the same checks and
the same rows and change-log entries, but in one transaction with the shoe
locked once and everything written in a few statements at the end (the
simulator records a whole shoe this way). A refused event refuses the call:
nothing is written, and the error names the event (`events[12].stakes[0]...`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from django.db import DataError
from django.utils import timezone

from casino.continuity import guard, seal_check

from .. import chemmy
from ..errors import Conflict, Invalid, ServiceError
from ..models import BankerTurn, Coup, Shoe
from .facts import turn_closing
from .ledger import (
    LEDGER_MAX,
    CoupInput,
    PreparedCoup,
    ShoeState,
    StakeInput,
    TurnState,
    coup_input,
    coup_prepare,
    player_card_clean,
)
from .ledger_store import (
    coup_context,
    coup_log_entry,
    ledger_write,
    lock_open_turn,
    lock_shoe,
    shoe_check,
)
from .turns import turn_open_check, turn_opened_new, turn_pass_check


@dataclass(frozen=True)
class CoupEvent:
    """A coup, as coup_record takes it."""

    punter: Sequence[str]
    banker: Sequence[str]
    stakes: Sequence[StakeInput]
    declared_bank: Decimal | None = None


@dataclass(frozen=True)
class TurnOpen:
    """A banker turn opens at `seat` with `bank` (banker_turn_open)."""

    seat: int
    bank: Decimal
    player_card: str = ""  # the banker's card number, if entered


@dataclass(frozen=True)
class TurnPass:
    """The open turn's banker passes the bank (banker_turn_pass)."""


ShoeEvent = CoupEvent | TurnOpen | TurnPass


@dataclass(frozen=True)
class PlayResult:
    shoe: Shoe
    coups: list[Coup]
    # The turn the shoe went on with (if one was open), then those opened.
    turns: list[BankerTurn] = field(default_factory=list)


def _at(i: int, exc: ServiceError | chemmy.CoupError):
    """The same error, its field under the event that raised it."""
    return type(exc)(f"events[{i}].{exc.field}", exc.message)


def shoe_play(
    *, shoe_id: int, user, events: Sequence[ShoeEvent], device: str = ""
) -> PlayResult:
    """Record `events` in order on the shoe, in one transaction.

    Refusals: broken input (a card, a stake's form) in any event first, as
    coup_record refuses it before reading the table; then the shoe's own
    (NotFound "shoe", Forbidden "session", Conflict "shoe": not prefixed, they
    are about the whole call); then, event by event, what coup_record,
    banker_turn_open or banker_turn_pass would answer at that point."""
    if not events:
        raise Invalid("events", "nothing to record: send at least one event")
    # Broken input is refused before the table is looked at (as coup_record).
    inputs: list[CoupInput | ShoeEvent] = []
    for i, event in enumerate(events):
        try:
            inputs.append(_parse(event))
        except (ServiceError, chemmy.CoupError) as exc:
            raise _at(i, exc) from None
    try:
        with guard(user=user, device=device):
            return _play_locked(
                shoe_id=shoe_id, user=user, device=device, inputs=inputs
            )
    except DataError:
        raise Conflict(
            "events",
            "these events would take a running total past the largest amount "
            f"the ledger holds ({LEDGER_MAX})",
        ) from None


def _parse(event) -> CoupInput | ShoeEvent:
    if isinstance(event, CoupEvent):
        return coup_input(
            punter=event.punter,
            banker=event.banker,
            stakes=event.stakes,
            declared_bank=event.declared_bank,
        )
    if isinstance(event, TurnOpen):
        card = player_card_clean(event.player_card, "player_card")
        return event if card == event.player_card else replace(event, player_card=card)
    if isinstance(event, TurnPass):
        return event
    raise Invalid("type", f"not a shoe event: {type(event).__name__}")


class _Play:
    """The running state of one shoe_play call, event by event."""

    def __init__(self, shoe: Shoe, user, device: str) -> None:
        self.ctx = coup_context(shoe, user, device)
        self.session = shoe.session
        self.shoe_state = ShoeState.of(shoe)
        self.turn = lock_open_turn(self.session.pk)  # the open turn, if any
        self.last = self.turn
        if self.last is None:
            self.last = self.session.turns.order_by("-number").first()
        seal_check(shoe, self.session, self.ctx.table, self.last)
        self.changed: list[BankerTurn] = [] if self.turn is None else [self.turn]
        self.opened: list[BankerTurn] = []
        self.coups: list[PreparedCoup] = []
        self.log: list[dict] = []

    def _log(self, action: str, obj, new: dict) -> None:
        self.log.append(
            {
                "action": action,
                "user": self.ctx.user,
                "device": self.ctx.device,
                "obj": obj,
                "new": new,
            }
        )

    def coup(self, inp: CoupInput) -> None:
        if self.turn is None:
            raise Conflict("turn", "no open banker turn: open one before dealing")
        now = timezone.now()
        prepared = coup_prepare(
            self.ctx, self.shoe_state, TurnState.of(self.turn), inp, now=now
        )
        prepared.turn.apply(now)
        self.shoe_state = prepared.shoe
        self.coups.append(prepared)
        self.log.append(
            coup_log_entry(prepared, user=self.ctx.user, device=self.ctx.device)
        )
        if not self.turn.is_open:  # the bank was lost
            self.turn = None

    def turn_open(self, event: TurnOpen) -> None:
        table, last = self.ctx.table, self.last
        bank, took_passed = turn_open_check(
            session_open=self.session.is_open,
            turn_open=self.turn is not None,
            seats=table.seats,
            minimum_banco=self.ctx.rules.minimum_banco,
            last=last,
            seat=event.seat,
            bank=event.bank,
        )
        turn = BankerTurn(
            session=self.session,
            number=(last.number + 1) if last else 1,
            seat=event.seat,
            player_card=event.player_card,
            opening_bank=bank,
            bank=bank,
            took_passed_bank=took_passed,
            opened_at=timezone.now(),
            opened_by=self.ctx.user,
        )
        self.opened.append(turn)
        self.turn = self.last = turn
        self._log(
            "tables.turn.opened",
            turn,
            turn_opened_new(event.seat, bank, took_passed, event.player_card),
        )

    def turn_pass(self) -> None:
        if self.turn is None:
            raise Conflict("turn", "no open banker turn to pass")
        turn_pass_check(self.turn)
        new = turn_closing(self.turn, BankerTurn.End.PASSED, timezone.now())
        self._log("tables.turn.passed", self.turn, new)
        self.turn = None


def _play_locked(*, shoe_id, user, device, inputs) -> PlayResult:
    # The session row too: turns open here, and banker_turn_open locks it.
    shoe = lock_shoe(shoe_id, session_first=True)
    shoe_check(user, shoe)
    play = _Play(shoe, user, device)
    for i, inp in enumerate(inputs):
        try:
            if isinstance(inp, CoupInput):
                play.coup(inp)
            elif isinstance(inp, TurnOpen):
                play.turn_open(inp)
            else:
                play.turn_pass()
        except (ServiceError, chemmy.CoupError) as exc:
            raise _at(i, exc) from None
    ledger_write(
        shoe=shoe,
        shoe_state=play.shoe_state,
        coups=play.coups,
        turns_changed=play.changed,
        turns_opened=play.opened,
        log=play.log,
        table_id=play.ctx.table.pk,
    )
    return PlayResult(
        shoe, [p.coup for p in play.coups], [*play.changed, *play.opened]
    )
