"""Recording a coup: one call, one transaction, nothing half-written.

The input is parsed before the transaction (it needs no database and refuses
broken input early); inside, the shoe row is locked, so coups on one shoe are
numbered one after the other and two tablets cannot fork the ledger. The coup
itself is checked and settled by ledger.coup_prepare and written by
ledger_store.ledger_write, the same code shoe_play runs for a whole shoe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import DataError, IntegrityError
from django.utils import timezone

from casino.bounds import check_moment
from casino.continuity import guard, seal_check
from casino.roles import CROUPIER, has_capability, user_roles

from ..chemmy import CoupError
from ..errors import Conflict, Forbidden, Invalid
from ..models import Coup, Finding, Stake
from . import ledger_pg
from .holds import hold_codes
from .ledger import (
    BANCO,
    LEDGER_MAX,
    CoupInput,
    ShoeHeld,
    ShoeState,
    StakeInput,
    TurnState,
    _engine_stakes,
    coup_input,
    coup_prepare,
)
from .ledger_store import (
    coup_context,
    coup_log_entry,
    ledger_write,
    lock_open_turn,
    lock_shoe,
    shoe_check,
    tableau_by_id,
    tableau_for,
)

# corrections.py, selectors and the tests import these from here.
__all__ = [
    "BANCO",
    "LEDGER_MAX",
    "RecordResult",
    "StakeInput",
    "_engine_stakes",
    "coup_accept",
    "coup_record",
    "tableau_by_id",
    "tableau_for",
]


@dataclass(frozen=True)
class RecordResult:
    coup: Coup
    created: bool
    # A new coup's rows as written (None for a replay: read them from the coup).
    stakes: Sequence[Stake] | None = None
    findings: Sequence[Finding] | None = None


def _replay(key: str, digest: str, shoe_id: int) -> Coup | None:
    """A retry of an acknowledged coup returns it; the key on another body is
    a conflict, never a second coup."""
    existing = Coup.objects.filter(idempotency_key=key).order_by().first()
    if existing is None:
        return None
    if existing.request_digest != digest or existing.shoe_id != shoe_id:
        raise Conflict(
            "Idempotency-Key", "this key was already used for a different coup"
        )
    return existing


@dataclass(frozen=True)
class _Acceptance:
    """A pit boss stores a croupier's queued coup on his behalf, with why."""

    by: object
    reason: str


def _username(user_id: int) -> str:
    name = (
        get_user_model()
        .objects.filter(pk=user_id)
        .values_list("username", flat=True)
        .first()
    )
    return name if name is not None else f"user {user_id}"


def coup_record(
    *,
    shoe_id: int,
    user,
    punter: Sequence[str],
    banker: Sequence[str],
    stakes: Sequence[StakeInput],
    declared_bank: Decimal | None = None,
    idempotency_key: str | None = None,
    expected_seq: int | None = None,
    device: str = "",
    entered_by: int | None = None,
    entered_at: datetime | None = None,
) -> RecordResult:
    """Record a coup entered by `user`. `entered_by` (a user id) is who the
    tablet says entered it: a coup queued under one croupier is never stored
    under another who is signed in when the queue is sent (coup_accept is the
    pit boss's way). `entered_at`, the tablet's clock, goes to the log row."""
    if entered_by is not None and entered_by != user.pk:
        name = _username(entered_by)
        raise Forbidden(
            "entered_by",
            f"this coup was entered by {name}, not by you: it is sent when "
            f"{name} signs in, or a pit boss accepts it on their behalf with a "
            "reason",
        )
    return _record(
        shoe_id=shoe_id,
        sender=user,
        author=user,
        acceptance=None,
        punter=punter,
        banker=banker,
        stakes=stakes,
        declared_bank=declared_bank,
        idempotency_key=idempotency_key,
        expected_seq=expected_seq,
        device=device,
        entered_at=entered_at,
    )


def coup_accept(
    *,
    shoe_id: int,
    user,
    entered_by: int,
    reason: str,
    punter: Sequence[str],
    banker: Sequence[str],
    stakes: Sequence[StakeInput],
    declared_bank: Decimal | None = None,
    idempotency_key: str | None = None,
    expected_seq: int | None = None,
    device: str = "",
    entered_at: datetime | None = None,
) -> RecordResult:
    """A pit boss (`user`) stores a coup that croupier `entered_by` entered on
    a tablet and could not send himself (relieved meanwhile). The coup stays
    the croupier's (entered_by, the day's rollup, his flags); `accepted_by` and
    `accepted_reason` say who vouched for it and why, and its change-log row is
    the pit boss's, with the reason."""
    reason = (reason or "").strip()
    if not reason:
        raise Invalid(
            "reason", "accepting a coup on a croupier's behalf needs a reason"
        )
    if not has_capability(user, "coup.accept"):
        raise Forbidden(
            "entered_by", "only a pit boss accepts a coup on a croupier's behalf"
        )
    if entered_by == user.pk:
        raise Forbidden(
            "entered_by",
            "nobody accepts his own coup: a pit boss accepts a croupier's",
        )
    author = get_user_model().objects.filter(pk=entered_by).first()
    if author is None:
        raise Invalid("entered_by", f"no user with id {entered_by}")
    # His role, not whether his account is still active: a croupier signed
    # off since (or whose account was closed) still entered these coups.
    if not (author.is_superuser or CROUPIER in user_roles(author)):
        raise Invalid(
            "entered_by",
            f"{author.get_username()} is not a croupier: only a croupier's "
            "coups are accepted on his behalf",
        )
    return _record(
        shoe_id=shoe_id,
        sender=user,
        author=author,
        acceptance=_Acceptance(user, reason),
        punter=punter,
        banker=banker,
        stakes=stakes,
        declared_bank=declared_bank,
        idempotency_key=idempotency_key,
        expected_seq=expected_seq,
        device=device,
        entered_at=entered_at,
    )


def _record(
    *,
    shoe_id: int,
    sender,
    author,
    acceptance: _Acceptance | None,
    punter: Sequence[str],
    banker: Sequence[str],
    stakes: Sequence[StakeInput],
    declared_bank: Decimal | None,
    idempotency_key: str | None,
    expected_seq: int | None,
    device: str,
    entered_at: datetime | None,
) -> RecordResult:
    if entered_at is not None:  # the tablet's clock: 2000 to a few minutes ahead
        check_moment("entered_at", entered_at)
    inp = coup_input(
        punter=punter,
        banker=banker,
        stakes=stakes,
        declared_bank=declared_bank,
        key=idempotency_key,
    )
    # The happy path never looks the key up: the unique index on it refuses a
    # second coup, and only then (or when the table refuses the coup: closed
    # shoe, the shoe moved on...) is the key checked for a replay. A retry
    # racing its original waits on the shoe lock and then hits the index.
    try:
        with guard(user=sender, device=device):
            return _record_locked(
                shoe_id=shoe_id,
                user=sender,
                author=author,
                acceptance=acceptance,
                device=device,
                inp=inp,
                expected_seq=expected_seq,
                entered_at=entered_at,
            )
    except (IntegrityError, Conflict, Invalid, CoupError):
        # A replay of an acknowledged coup is answered with that coup even
        # when the table has moved on since (shoe closed, turn over, the
        # bank passed to a seat the coup's stakes name: a 400 judged against
        # the table as it is now, not as it was).
        if idempotency_key:
            replay = _replay(idempotency_key, inp.digest, shoe_id)
            if replay is not None:
                return RecordResult(replay, False)
        raise
    except DataError:
        # A running total past its column (a day's rollup cell, say): the
        # database refused it and the transaction rolled back, nothing written.
        raise Conflict(
            "stakes",
            "this coup would take a running total past the largest amount the "
            f"ledger holds ({LEDGER_MAX})",
        ) from None


def _record_locked(
    *,
    shoe_id,
    user,
    author,
    acceptance: _Acceptance | None,
    device,
    inp: CoupInput,
    expected_seq,
    entered_at: datetime | None,
) -> RecordResult:
    # PostgreSQL: three round trips (ledger_pg); no shoe or no open turn, and
    # any other database, take the ORM's statements, which also say why.
    fast = ledger_pg.lock_for_coup(shoe_id) if ledger_pg.supported() else None
    if fast is not None:
        shoe, turn, coup_id = fast
    else:
        shoe = lock_shoe(shoe_id)
    shoe_check(user, shoe)
    if expected_seq is not None and expected_seq != shoe.next_seq:
        raise Conflict(
            "expected_seq",
            f"the shoe moved on: the next coup is number {shoe.next_seq}",
        )
    if fast is None:
        turn = lock_open_turn(shoe.session_id)
        if turn is None:
            raise Conflict("turn", "no open banker turn: open one before dealing")
        # the fast path checked the same rows in its lock statement
        seal_check(shoe, shoe.session, shoe.session.table, turn)
    if shoe.held_by_seq is not None:
        # refused before anything is prepared, naming what stopped play
        # (coup_prepare refuses it too, for a batch that holds the shoe)
        raise ShoeHeld(shoe.held_by_seq, hold_codes(shoe))
    # The coup is its author's (entered_by); the log row is whoever sent it.
    ctx = coup_context(shoe, author, device)
    now = timezone.now()
    prepared = coup_prepare(
        ctx, ShoeState.of(shoe), TurnState.of(turn), inp, now=now
    )
    prepared.turn.apply(now)
    if acceptance is not None:
        prepared.coup.accepted_by = acceptance.by
        prepared.coup.accepted_reason = acceptance.reason
    log = coup_log_entry(prepared, user=user, device=device)
    if acceptance is not None or entered_at is not None:
        new = dict(log["new"])
        if acceptance is not None:
            log["reason"] = acceptance.reason
            new["entered_by"] = author.pk
            new["accepted_by"] = acceptance.by.pk
        if entered_at is not None:
            new["entered_at"] = entered_at  # the tablet's clock
        log["new"] = new
    if fast is not None:
        ledger_pg.coup_write(
            shoe=shoe,
            shoe_state=prepared.shoe,
            prepared=prepared,
            coup_id=coup_id,
            turn=turn,
            log=log,
            table_id=ctx.table.pk,
        )
    else:
        ledger_write(
            shoe=shoe,
            shoe_state=prepared.shoe,
            coups=[prepared],
            turns_changed=[turn],
            log=[log],
            table_id=ctx.table.pk,
        )
    # The caller answers from the rows in hand, without reading them back.
    return RecordResult(prepared.coup, True, prepared.stakes, prepared.findings)
