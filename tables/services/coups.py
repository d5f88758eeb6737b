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
from decimal import Decimal

from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from ..errors import Conflict
from ..models import Coup, Finding, Stake
from . import ledger_pg
from .ledger import (
    BANCO,
    LEDGER_MAX,
    CoupInput,
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
) -> RecordResult:
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
        with transaction.atomic():
            return _record_locked(
                shoe_id=shoe_id,
                user=user,
                device=device,
                inp=inp,
                expected_seq=expected_seq,
            )
    except (IntegrityError, Conflict):
        # A replay of an acknowledged coup is answered with that coup even
        # when the table has moved on since (shoe closed, turn over).
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
    *, shoe_id, user, device, inp: CoupInput, expected_seq
) -> RecordResult:
    # PostgreSQL: two round trips (ledger_pg); no shoe or no open turn, and
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
    ctx = coup_context(shoe, user, device)
    now = timezone.now()
    prepared = coup_prepare(
        ctx, ShoeState.of(shoe), TurnState.of(turn), inp, now=now
    )
    prepared.turn.apply(now)
    log = coup_log_entry(prepared, user=user, device=device)
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
