"""The coup ledger's shared core: preparing a coup, without the database.

`coup_record` (one coup from a tablet) and `shoe_play` (a whole shoe's events
in one call) run the same code: the locked shoe's and turn's running state is
read once into `ShoeState` / `TurnState`; `coup_prepare` checks one coup and
runs the engine on that state, returning the rows to write (unsaved) and the
state after it; ledger_store.ledger_write then writes any number of prepared
coups in a handful of statements.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from .. import chemmy
from ..errors import Conflict, Invalid
from ..models import (
    BankerTurn,
    Coup,
    Finding,
    HouseRules,
    Shoe,
    Stake,
    Table,
)
from .facts import gaming_day_for, next_seat, player_card_clean, turn_closing

BANCO = {chemmy.Announcement.BANCO_SOLO, chemmy.Announcement.SUIVI}
# The money columns are DecimalField(14, 2): nothing past this reaches them.
LEDGER_MAX = Decimal("999999999999.99")
CENT = Decimal("0.01")


@dataclass(frozen=True)
class StakeInput:
    amount: Decimal
    seat: int | None = None
    standing: str | None = None
    announcement: str = "none"
    player_card: str = ""


def _stake_digest(s: StakeInput) -> list:
    row = [f"{s.amount:.2f}", s.seat, s.standing or None, str(s.announcement)]
    if s.player_card:  # left out when none: digests from before stay as they were
        row.append(s.player_card)
    return row


def _digest(punter, banker, stakes, declared_bank) -> str:
    body = {
        "punter": list(punter),
        "banker": list(banker),
        "stakes": [_stake_digest(s) for s in stakes],
        "declared_bank": None if declared_bank is None else str(declared_bank),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _engine_stakes(stakes: Sequence[StakeInput]) -> list[chemmy.StakeIn]:
    out = []
    for i, s in enumerate(stakes):
        try:
            announcement = chemmy.Announcement(s.announcement or "none")
        except ValueError:
            raise Invalid(
                f"stakes[{i}].announcement", f"unknown announcement {s.announcement!r}"
            ) from None
        out.append(
            chemmy.StakeIn(
                amount=s.amount,
                seat=s.seat,
                standing=s.standing or None,
                announcement=announcement,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class CoupInput:
    """One coup's input, parsed: what is refused before any row is read."""

    punter: tuple[str, ...]
    banker: tuple[str, ...]
    stakes: list[chemmy.StakeIn]
    declared_bank: Decimal | None
    digest: str
    key: str | None = None
    # each stake's player card ("" for none), in the order of `stakes`
    cards: tuple[str, ...] = ()


def coup_input(
    *,
    punter: Sequence[str],
    banker: Sequence[str],
    stakes: Sequence[StakeInput],
    declared_bank: Decimal | None = None,
    key: str | None = None,
) -> CoupInput:
    if not stakes:
        raise Invalid("stakes", "at least one stake is needed for a coup")
    engine_stakes = _engine_stakes(stakes)
    cards = tuple(
        player_card_clean(s.player_card, f"stakes[{i}].player_card")
        for i, s in enumerate(stakes)
    )
    stakes = [
        s if s.player_card == c else replace(s, player_card=c)
        for s, c in zip(stakes, cards, strict=True)
    ]
    # Parse cards first: a mis-keyed card is refused before anything else.
    punter_cards = chemmy.parse_hand(punter, field="punter")
    banker_cards = chemmy.parse_hand(banker, field="banker")
    digest = _digest(punter_cards, banker_cards, stakes, declared_bank)
    return CoupInput(
        punter_cards, banker_cards, engine_stakes, declared_bank, digest, key, cards
    )


@dataclass(frozen=True, slots=True)
class ShoeState:
    """The shoe's running state (Shoe.next_seq, dealt, card_counts)."""

    decks: int
    burned: int
    next_seq: int
    dealt: int
    counts: Mapping[str, int]
    held_seq: int | None = None  # Shoe.held_by_seq ("hold on error")

    @classmethod
    def of(cls, shoe: Shoe) -> ShoeState:
        counts = dict(shoe.card_counts)
        return cls(
            shoe.decks, shoe.burned, shoe.next_seq, shoe.dealt, counts, shoe.held_by_seq
        )

    @property
    def cards_left(self) -> int:
        return 52 * self.decks - self.burned - self.dealt

    def after(self, cards: Sequence[str], held_seq: int | None = None) -> ShoeState:
        counts = dict(self.counts)
        for card in cards:
            counts[card] = counts.get(card, 0) + 1
        return ShoeState(
            self.decks,
            self.burned,
            self.next_seq + 1,
            self.dealt + len(cards),
            counts,
            self.held_seq if held_seq is None else held_seq,
        )


@dataclass(frozen=True, slots=True)
class TurnState:
    """A banker turn's running state; `row` is the turn the coups are booked
    to (unsaved while shoe_play has opened it and not written it yet)."""

    row: BankerTurn
    seat: int
    bank: Decimal
    coups: int
    garage_total: Decimal
    commission_total: Decimal
    suivi_seat: int | None
    lost: bool = False
    # BankerTurn.tied_stakes: what stays on the table after a tie
    tied: list | None = None

    @classmethod
    def of(cls, turn: BankerTurn) -> TurnState:
        # Cents, as the money columns give them back: a turn opened in memory
        # settles exactly as one read from the database.
        return cls(
            turn,
            turn.seat,
            Decimal(turn.bank).quantize(CENT),
            turn.coups,
            Decimal(turn.garage_total).quantize(CENT),
            Decimal(turn.commission_total).quantize(CENT),
            turn.suivi_seat,
            False,
            turn.tied_stakes,
        )

    def apply(self, now: datetime) -> None:
        """Put this state on the row (a lost bank closes the turn)."""
        turn = self.row
        turn.bank = self.bank
        turn.coups = self.coups
        turn.garage_total = self.garage_total
        turn.commission_total = self.commission_total
        turn.suivi_seat = self.suivi_seat
        turn.tied_stakes = self.tied
        if self.lost:
            turn_closing(turn, BankerTurn.End.LOST, now)


@dataclass(frozen=True, slots=True)
class CoupContext:
    """What a coup is checked against: fixed for a whole shoe_play call."""

    shoe: Shoe
    table: Table
    rules: HouseRules
    tableau: chemmy.Tableau
    user: object
    device: str


@dataclass(slots=True)
class PreparedCoup:
    coup: Coup
    stakes: list[Stake]
    findings: list[Finding]
    codes: list[str]
    shoe: ShoeState  # the running state after this coup
    turn: TurnState
    log_new: dict


def coup_prepare(
    ctx: CoupContext, shoe: ShoeState, turn: TurnState, inp: CoupInput, *, now: datetime
) -> PreparedCoup:
    """Check one coup and run the engine on it; no database. Raises what
    coup_record answers with (Conflict, CoupError) and leaves the states as
    they were."""
    cards = inp.punter + inp.banker
    if shoe.held_seq is not None:
        raise ShoeHeld(shoe.held_seq)
    if shoe.cards_left < len(cards):
        raise Conflict("shoe", f"only {shoe.cards_left} cards are left in this shoe")
    if turn.tied:
        tied_stakes_check(turn.tied, inp.stakes)
    rules, table, tableau = ctx.rules, ctx.table, ctx.tableau
    verdict = chemmy.evaluate(inp.punter, inp.banker, tableau=tableau)
    coverage = chemmy.cover_stakes(
        inp.stakes,
        bank=turn.bank,
        banker_seat=turn.seat,
        seats=table.seats,
        minimum_banco=rules.minimum_banco,
        suivi_seat=turn.suivi_seat,
        **rules.cover_args(),
    )
    settlement = chemmy.settle(verdict.outcome, coverage, **rules.settle_args())
    _check_ledger_room(turn, settlement)
    counts = shoe.counts
    findings = [
        *verdict.findings,
        *chemmy.house_findings(verdict, rules.prescriptions),
    ] + chemmy.shoe_findings(
        decks=shoe.decks,
        burned=shoe.burned,
        dealt_before=shoe.dealt,
        # Only this coup's codes can go past `decks`: the rest of the shoe's
        # counts change nothing (and would be re-parsed on every coup).
        seen={c: counts[c] for c in set(cards) if c in counts},
        new_cards=cards,
    )
    if inp.declared_bank is not None:
        mismatch = chemmy.bank_mismatch_finding(
            declared=inp.declared_bank, carried=turn.bank
        )
        if mismatch is not None:
            findings.append(mismatch)

    lost = settlement.turn_ends
    coup = Coup(
        shoe=ctx.shoe,
        turn=turn.row,
        seq=shoe.next_seq,
        rules=rules,
        tableau_version=tableau.version,
        gaming_day=gaming_day_for(now, rules.gaming_day_cutoff),
        created_at=now,
        entered_by=ctx.user,
        device=ctx.device[:200],
        idempotency_key=inp.key or None,
        request_digest=inp.digest,
        punter_cards=list(inp.punter),
        banker_cards=list(inp.banker),
        punter_total=verdict.punter_total,
        banker_total=verdict.banker_total,
        outcome=verdict.outcome.value,
        natural=verdict.natural or "",
        punter_choice=verdict.punter_choice or "",
        banker_choice=verdict.banker_choice or "",
        banker_seat=turn.seat,
        punter_seat=coverage.punter_seat,
        punter_standing=coverage.punter_standing or "",
        declared_bank=inp.declared_bank,
        bank_before=settlement.bank_before,
        covered=settlement.covered,
        garage=settlement.garage,
        commission=settlement.commission,
        bank_after=settlement.bank_after,
        cards_left_before=shoe.cards_left,
        finding_count=len(findings),
        next_banker_seat=next_seat(turn.seat, table.seats) if lost else None,
    )
    stakes = [
        Stake(
            coup=coup,
            position=c.index,
            seat=c.stake.seat,
            standing=c.stake.standing or "",
            player_card=inp.cards[c.index] if inp.cards else "",
            announcement=c.stake.announcement.value,
            amount=c.stake.amount,
            covered=c.covered,
            declined=c.declined,
            payout=payout,
        )
        for c, payout in zip(coverage.stakes, settlement.payouts, strict=True)
    ]
    finding_rows = [
        Finding(
            coup=coup,
            code=f.code,
            severity=f.severity,
            side=f.side or "",
            detail=dict(f.detail),
            message=f.message,
            tableau_version=tableau.version,
        )
        for f in findings
    ]
    codes = [f.code for f in findings]
    log_new = {
        "shoe": ctx.shoe.pk,
        "seq": coup.seq,
        "punter": coup.punter_cards,
        "banker": coup.banker_cards,
        "outcome": coup.outcome,
        "covered": coup.covered,
        "commission": coup.commission,
        "bank_after": coup.bank_after,
        "findings": codes,
    }
    # House rule "hold on error": play stops at the mistake (docs/rules.md).
    # A critical finding, or a warning the house named (hold_warnings).
    held = rules.stops_play(findings)
    return PreparedCoup(
        coup,
        stakes,
        finding_rows,
        codes,
        shoe.after(cards, coup.seq if held else None),
        _turn_after(turn, coverage, settlement,
                    rules.tie_rule == HouseRules.Tie.STAY),
        log_new,
    )


class ShoeHeld(Conflict):
    """The shoe is held by a critical finding (house rule "hold on error")."""

    code = "shoe_held"

    def __init__(self, seq: int, codes: Sequence[str] = ()) -> None:
        # the codes of what stopped play, when known: "held since coup 3
        # (false_draw): ..." (the tablet names it in words, refusals.js)
        which = f" ({', '.join(codes)})" if codes else ""
        super().__init__(
            "shoe",
            f"held since coup {seq}{which}: a finding that stops play at this "
            "table (house rule hold on error) holds the shoe; a pit boss must "
            "release it, with a reason, before the next coup",
        )
        self.seq = seq
        self.codes = list(codes)


def _check_ledger_room(turn: TurnState, settlement) -> None:
    """A bank that wins coup after coup nearly doubles each time; past the
    ledger's columns the database would refuse the write (a 500). Refuse the
    coup first, naming the bank: the banker passes it and a new turn opens."""
    after = {
        "bank": settlement.bank_after,
        "turn's garage": turn.garage_total + settlement.garage,
        "turn's commission": turn.commission_total + settlement.commission,
    }
    for name, value in after.items():
        if value > LEDGER_MAX:
            raise Conflict(
                "bank",
                f"after this coup the {name} would be {value}, past the largest "
                f"amount the ledger holds ({LEDGER_MAX}): pass the bank and "
                "open a new turn",
            )


def tied_after(outcome, coverage) -> list | None:
    """What stays on the table after a coup, house rule tie_rule "stay":
    after a tie, each covered stake ([seat, standing, "amount"], the covered
    part: a declined part was never on the table); None otherwise."""
    if outcome != chemmy.Outcome.TIE:
        return None
    tied = [
        [c.stake.seat, c.stake.standing or "", f"{c.covered:.2f}"]
        for c in coverage.stakes
        if c.covered > 0
    ]
    return tied or None


def _player(seat, standing) -> str:
    return f"seat {seat}" if seat is not None else standing


def tied_stakes_check(tied: Sequence, stakes: Sequence[chemmy.StakeIn]) -> None:
    """House rule tie_rule "stay" (docs/rules.md): the coup after a tie
    carries each tied stake, raised or as it was, never taken back. Refused
    (400) naming the seat (or the standing player) otherwise."""
    where = {(s.seat, s.standing or ""): i for i, s in enumerate(stakes)}
    for seat, standing, amount in tied:
        who = _player(seat, standing)
        i = where.get((seat, standing or ""))
        stays = (
            f"{who}'s stake of {amount} stays on the table after the tie "
            "(house rule: the stakes stay)"
        )
        if i is None:
            raise Invalid(
                "stakes", f"{stays}: place it again, raised or as it was"
            )
        given = stakes[i].amount
        if isinstance(given, Decimal) and given.is_finite() and given < Decimal(amount):
            raise Invalid(
                f"stakes[{i}].amount",
                f"{stays}: it may be raised, not taken back ({given} is below "
                f"{amount})",
            )


def _turn_after(
    turn: TurnState, coverage, settlement, tie_stays: bool = False
) -> TurnState:
    holder = (
        coverage.stakes[coverage.punter_index]
        if coverage.punter_index is not None
        else None
    )
    suivi_seat = None
    if (
        settlement.outcome == chemmy.Outcome.BANKER
        and holder is not None
        and holder.stake.announcement in BANCO
    ):
        suivi_seat = holder.stake.seat
    return TurnState(
        turn.row,
        turn.seat,
        settlement.bank_after.quantize(CENT),
        turn.coups + 1,
        (turn.garage_total + settlement.garage).quantize(CENT),
        (turn.commission_total + settlement.commission).quantize(CENT),
        suivi_seat,
        settlement.turn_ends,
        tied_after(settlement.outcome, coverage) if tie_stays else None,
    )
