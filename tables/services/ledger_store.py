"""The coup ledger's database side: locks and checks before coup_prepare
(ledger.py), and writing what it prepared, in bulk.

`ledger_write` takes a few statements for any number of coups: the turns,
then one insert each for the coups, their stakes and their findings
(PostgreSQL and SQLite hand the new ids back), the day's rollup cells, the
shoe's running state, and the change log last (from its first row to the
commit the chain is held).
"""

from __future__ import annotations

from collections.abc import Sequence

from casino.changelog import chain_hold, log_actions

from ..errors import Conflict, NotFound
from ..models import (
    BankerTurn,
    Coup,
    Finding,
    Shoe,
    Stake,
    TableSession,
)
from ..rollups import rollup_apply, rollup_apply_many
from .access import croupier_check
from .facts import tableau_by_id, tableau_for  # noqa: F401 - re-exported
from .hooks import findings_written
from .ledger import CoupContext, PreparedCoup, ShoeState
from .ledger_pg import TURN_FIELDS


def lock_shoe(shoe_id: int, *, session_first: bool = False) -> Shoe:
    """The shoe row, locked. A writer that also opens banker turns locks the
    session row first, as banker_turn_open does (and in session_close's order:
    the session, then its shoe)."""
    if session_first:
        session = TableSession.objects.select_for_update(of=("self",), no_key=True)
        list(session.filter(shoes=shoe_id).order_by().values_list("pk", flat=True))
    try:
        return (
            Shoe.objects.select_for_update(of=("self",), no_key=True)
            .select_related("session__table", "session__rules")
            .get(pk=shoe_id)
        )
    except Shoe.DoesNotExist:
        raise NotFound("shoe", f"no shoe with id {shoe_id}") from None


def shoe_check(user, shoe: Shoe) -> None:
    """Who may write to this shoe, and whether it still takes coups."""
    session = shoe.session
    croupier_check(user, session)
    if not shoe.is_open or not session.is_open:
        raise Conflict("shoe", "this shoe is closed")


def lock_open_turn(session_id: int) -> BankerTurn | None:
    return (
        BankerTurn.objects.select_for_update(of=("self",), no_key=True)
        .filter(session_id=session_id, closed_at__isnull=True)
        .order_by()  # Meta.ordering would join the session for nothing
        .first()
    )


def coup_context(shoe: Shoe, user, device: str) -> CoupContext:
    """What coups on this (locked) shoe are checked against."""
    table = shoe.session.table
    rules = shoe.session.house_rules
    tableau = tableau_by_id(rules.tableau_id)
    return CoupContext(shoe, table, rules, tableau, user, device)


def coup_log_entry(prepared: PreparedCoup, *, user, device: str) -> dict:
    return {
        "action": "tables.coup.recorded",
        "user": user,
        "device": device,
        "obj": prepared.coup,
        "new": prepared.log_new,
        # Bound to this log row with the coup (in insertion order).
        "rows": [*prepared.stakes, *prepared.findings],
    }


def ledger_write(
    *,
    shoe: Shoe,
    shoe_state: ShoeState,
    coups: Sequence[PreparedCoup],
    turns_changed: Sequence[BankerTurn] = (),
    turns_opened: Sequence[BankerTurn] = (),
    log: Sequence[dict] = (),
    table_id: int,
) -> None:
    """Write what coup_prepare and the turn events produced, in order.

    `turns_changed` are rows that exist (saved with their running state);
    `turns_opened` are new ones, inserted with theirs. A session holds one
    open turn: the rows that close go first, then the new ones."""
    for turn in turns_changed:
        BankerTurn.objects.filter(pk=turn.pk).update(
            **{name: getattr(turn, name) for name in TURN_FIELDS}
        )
    if turns_opened:
        BankerTurn.objects.bulk_create(turns_opened)
    if coups:
        chain_hold()  # before the rollup cells (casino.changelog.chain_hold)
        Coup.objects.bulk_create([p.coup for p in coups])
        Stake.objects.bulk_create([s for p in coups for s in p.stakes])
        findings = [f for p in coups for f in p.findings]
        if findings:
            Finding.objects.bulk_create(findings)
            # their review flags, in this transaction (hooks.py)
            findings_written([(p.coup, p.findings) for p in coups])
        if len(coups) == 1:
            rollup_apply(coups[0].coup, coups[0].codes, table_id=table_id)
        else:
            rollup_apply_many([(p.coup, p.codes) for p in coups], table_id=table_id)
        shoe.next_seq = shoe_state.next_seq
        shoe.dealt = shoe_state.dealt
        shoe.card_counts = dict(shoe_state.counts)
        shoe.held_by_seq = shoe_state.held_seq
        Shoe.objects.filter(pk=shoe.pk).update(
            next_seq=shoe.next_seq,
            dealt=shoe.dealt,
            card_counts=shoe.card_counts,
            held_by_seq=shoe.held_by_seq,
        )
    log = list(log)
    if log:
        # The turns' and the shoe's state after the whole batch, bound to its
        # last log row (the latest digest of a row is the one that counts).
        last = log[-1]
        state = [*turns_changed, *turns_opened, *([shoe] if coups else [])]
        log[-1] = {**last, "rows": [*last.get("rows", ()), *state]}
    log_actions(log)
