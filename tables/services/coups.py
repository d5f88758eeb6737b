"""Recording a coup: one call, one transaction, nothing half-written.

The engine runs before the transaction (it needs no database and refuses
broken input early); inside, the shoe row is locked, so coups on one shoe are
numbered one after the other and two tablets cannot fork the ledger.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from casino.changelog import log_action
from casino.roles import works_at

from .. import chemmy
from ..errors import Conflict, Forbidden, Invalid, NotFound
from ..models import BankerTurn, Coup, Finding, Shoe, Stake, TableauVersion
from ..rollups import rollup_apply
from .floor import gaming_day_for, next_seat

BANCO = {chemmy.Announcement.BANCO_SOLO, chemmy.Announcement.SUIVI}
# The money columns are DecimalField(14, 2): nothing past this reaches them.
LEDGER_MAX = Decimal("999999999999.99")


@dataclass(frozen=True)
class StakeInput:
    amount: Decimal
    seat: int | None = None
    standing: str | None = None
    announcement: str = "none"


@dataclass(frozen=True)
class RecordResult:
    coup: Coup
    created: bool


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


def _digest(punter, banker, stakes, declared_bank) -> str:
    body = {
        "punter": list(punter),
        "banker": list(banker),
        "stakes": [
            [f"{s.amount:.2f}", s.seat, s.standing or None, str(s.announcement)]
            for s in stakes
        ],
        "declared_bank": None if declared_bank is None else str(declared_bank),
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


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
    if not stakes:
        raise Invalid("stakes", "at least one stake is needed for a coup")
    engine_stakes = _engine_stakes(stakes)
    # Parse cards first: a mis-keyed card is refused before anything else.
    punter_cards = chemmy.parse_hand(punter, field="punter")
    banker_cards = chemmy.parse_hand(banker, field="banker")
    digest = _digest(punter_cards, banker_cards, stakes, declared_bank)
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
                punter=punter_cards,
                banker=banker_cards,
                stakes=engine_stakes,
                declared_bank=declared_bank,
                key=idempotency_key,
                digest=digest,
                expected_seq=expected_seq,
            )
    except (IntegrityError, Conflict):
        # A replay of an acknowledged coup is answered with that coup even
        # when the table has moved on since (shoe closed, turn over).
        if idempotency_key:
            replay = _replay(idempotency_key, digest, shoe_id)
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


def _lock_shoe(shoe_id: int) -> Shoe:
    try:
        return (
            Shoe.objects.select_for_update(of=("self",))
            .select_related("session__table__rules")
            .get(pk=shoe_id)
        )
    except Shoe.DoesNotExist:
        raise NotFound("shoe", f"no shoe with id {shoe_id}") from None



def _record_locked(
    *,
    shoe_id,
    user,
    device,
    punter,
    banker,
    stakes,
    declared_bank,
    key,
    digest,
    expected_seq,
) -> RecordResult:
    shoe = _lock_shoe(shoe_id)
    session = shoe.session
    if not works_at(user, session):
        raise Forbidden(
            "session",
            "you are not the croupier of this session: a pit boss hands it "
            "over, or take it over as the relief",
        )
    if not shoe.is_open or not session.is_open:
        raise Conflict("shoe", "this shoe is closed")
    if expected_seq is not None and expected_seq != shoe.next_seq:
        raise Conflict(
            "expected_seq",
            f"the shoe moved on: the next coup is number {shoe.next_seq}",
        )
    turn = (
        BankerTurn.objects.select_for_update(of=("self",))
        .filter(session_id=session.pk, closed_at__isnull=True)
        .order_by()  # Meta.ordering would join the session for nothing
        .first()
    )
    if turn is None:
        raise Conflict("turn", "no open banker turn: open one before dealing")
    table = session.table
    rules = table.rules
    cards = punter + banker
    if shoe.cards_left < len(cards):
        raise Conflict("shoe", f"only {shoe.cards_left} cards are left in this shoe")

    tableau = tableau_by_id(rules.tableau_id)
    verdict = chemmy.evaluate(punter, banker, tableau=tableau)
    coverage = chemmy.cover_stakes(
        stakes,
        bank=turn.bank,
        banker_seat=turn.seat,
        seats=table.seats,
        minimum_banco=rules.minimum_banco,
        suivi_seat=turn.suivi_seat,
    )
    settlement = chemmy.settle(
        verdict.outcome,
        coverage,
        commission_rate=rules.commission_rate,
        commission_unit=rules.commission_unit,
    )
    _check_ledger_room(turn, settlement)
    findings = list(verdict.findings) + chemmy.shoe_findings(
        decks=shoe.decks,
        burned=shoe.burned,
        dealt_before=shoe.dealt,
        seen=shoe.card_counts,
        new_cards=cards,
    )
    if declared_bank is not None:
        mismatch = chemmy.bank_mismatch_finding(
            declared=declared_bank, carried=turn.bank
        )
        if mismatch is not None:
            findings.append(mismatch)

    now = timezone.now()
    lost = settlement.turn_ends
    coup = Coup.objects.create(
        shoe=shoe,
        turn=turn,
        seq=shoe.next_seq,
        rules=rules,
        tableau_version=tableau.version,
        gaming_day=gaming_day_for(now, rules.gaming_day_cutoff),
        created_at=now,
        entered_by=user,
        device=device[:200],
        idempotency_key=key or None,
        request_digest=digest,
        punter_cards=list(punter),
        banker_cards=list(banker),
        punter_total=verdict.punter_total,
        banker_total=verdict.banker_total,
        outcome=verdict.outcome.value,
        natural=verdict.natural or "",
        punter_choice=verdict.punter_choice or "",
        banker_choice=verdict.banker_choice or "",
        banker_seat=turn.seat,
        punter_seat=coverage.punter_seat,
        punter_standing=coverage.punter_standing or "",
        declared_bank=declared_bank,
        bank_before=settlement.bank_before,
        covered=settlement.covered,
        garage=settlement.garage,
        commission=settlement.commission,
        bank_after=settlement.bank_after,
        cards_left_before=shoe.cards_left,
        finding_count=len(findings),
        next_banker_seat=next_seat(turn.seat, table.seats) if lost else None,
    )
    stake_rows = Stake.objects.bulk_create(
        Stake(
            coup=coup,
            position=c.index,
            seat=c.stake.seat,
            standing=c.stake.standing or "",
            announcement=c.stake.announcement.value,
            amount=c.stake.amount,
            covered=c.covered,
            declined=c.declined,
            payout=payout,
        )
        for c, payout in zip(coverage.stakes, settlement.payouts, strict=True)
    )
    finding_rows = []
    if findings:
        finding_rows = Finding.objects.bulk_create(
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
        )
    rollup_apply(coup, [f.code for f in findings], table_id=table.pk)
    _advance_shoe(shoe, cards)
    _advance_turn(turn, coup, coverage, settlement, now)
    log_action(
        action="tables.coup.recorded",
        user=user,
        device=device,
        obj=coup,
        new={
            "shoe": shoe.pk,
            "seq": coup.seq,
            "punter": coup.punter_cards,
            "banker": coup.banker_cards,
            "outcome": coup.outcome,
            "covered": coup.covered,
            "commission": coup.commission,
            "bank_after": coup.bank_after,
            "findings": [f.code for f in findings],
        },
    )
    # The caller serializes what was just written without reading it back.
    coup._prefetched_objects_cache = {
        "stakes": _as_prefetched(Stake.objects.filter(coup=coup), stake_rows),
        "findings": _as_prefetched(Finding.objects.filter(coup=coup), finding_rows),
    }
    return RecordResult(coup, True)


def _as_prefetched(queryset, rows):
    """A queryset that answers from rows already in hand, as prefetch_related's
    cache does; any further filtering still goes to the database."""
    queryset._result_cache = list(rows)
    queryset._prefetch_done = True
    return queryset


def _check_ledger_room(turn: BankerTurn, settlement) -> None:
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


def _advance_shoe(shoe: Shoe, cards: Sequence[str]) -> None:
    counts = dict(shoe.card_counts)
    for card in cards:
        counts[card] = counts.get(card, 0) + 1
    Shoe.objects.filter(pk=shoe.pk).update(
        next_seq=shoe.next_seq + 1, dealt=shoe.dealt + len(cards), card_counts=counts
    )


def _advance_turn(turn: BankerTurn, coup: Coup, coverage, settlement, now) -> None:
    turn.bank = settlement.bank_after
    turn.coups += 1
    turn.garage_total += settlement.garage
    turn.commission_total += settlement.commission
    turn.suivi_seat = None
    holder = (
        coverage.stakes[coverage.punter_index]
        if coverage.punter_index is not None
        else None
    )
    if (
        settlement.outcome == chemmy.Outcome.BANKER
        and holder is not None
        and holder.stake.announcement in BANCO
    ):
        turn.suivi_seat = holder.stake.seat
    fields = ["bank", "coups", "garage_total", "commission_total", "suivi_seat"]
    if settlement.turn_ends:
        turn.closed_at = now
        turn.end = BankerTurn.End.LOST
        turn.closing_amount = turn.garage_total
        fields += ["closed_at", "end", "closing_amount"]
    turn.save(update_fields=fields)
