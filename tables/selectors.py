"""Selectors read. Re-computing a banker turn from its coups is how the ledger
proves itself: the stored running state must equal the engine's fold."""

from __future__ import annotations

from dataclasses import dataclass

from . import chemmy
from .models import BankerTurn, Coup
from .rollups import current_coups
from .services.coups import tableau_for


@dataclass(frozen=True)
class LedgerCheck:
    turn: BankerTurn
    ledger: chemmy.TurnLedger | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def coup_resettle(coup: Coup, bank: chemmy.Decimal | None = None) -> chemmy.Settlement:
    """Run the engine again on a stored coup (cards, stakes, house rules)."""
    rules = coup.rules
    verdict = chemmy.evaluate(
        coup.punter_cards, coup.banker_cards, tableau=tableau_for(coup.tableau_version)
    )
    stakes = [
        chemmy.StakeIn(
            amount=s.amount,
            seat=s.seat,
            standing=s.standing or None,
            announcement=chemmy.Announcement(s.announcement),
        )
        for s in coup.stakes.all()
    ]
    coverage = chemmy.cover_stakes(
        stakes,
        bank=coup.bank_before if bank is None else bank,
        banker_seat=coup.banker_seat,
        seats=coup.shoe.session.table.seats,
        minimum_banco=rules.minimum_banco,
        # suivi was checked when the coup was recorded; re-check priorities only
        suivi_seat=next((s.seat for s in stakes if s.announcement == "suivi"), None),
        **rules.cover_args(),
    )
    return chemmy.settle(verdict.outcome, coverage, **rules.settle_args())


def turn_ledger_verify(turn: BankerTurn) -> LedgerCheck:
    # The current revision of each coup: a correction re-settles the turn.
    coups = list(
        current_coups()
        .filter(turn=turn)
        .select_related("rules", "shoe__session__table")
        .prefetch_related("stakes")
        .order_by("shoe__number", "seq")
    )
    problems: list[str] = []
    settlements = []
    bank = turn.opening_bank
    for coup in coups:
        if coup.bank_before != bank:
            problems.append(f"coup {coup.pk}: bank before {coup.bank_before} != {bank}")
        s = coup_resettle(coup)
        for name in ("covered", "garage", "commission", "bank_after"):
            stored, again = getattr(coup, name), getattr(s, name)
            if stored != again:
                problems.append(f"coup {coup.pk}: {name} {stored} != {again}")
        settlements.append(s)
        bank = s.bank_after
    try:
        ledger = chemmy.turn_ledger(turn.opening_bank, settlements)
    except ValueError as exc:
        # A correction made the banker lose mid-turn: the record goes on.
        return LedgerCheck(turn, None, (*problems, f"turn {turn.pk}: {exc}"))
    stored = (turn.bank, turn.garage_total, turn.commission_total, turn.coups)
    folded = (ledger.bank, ledger.garage_total, ledger.commission_total, ledger.coups)
    if stored != folded:
        problems.append(f"turn {turn.pk}: stored {stored} != recomputed {folded}")
    if turn.closing_amount is not None and turn.closing_amount != ledger.closing():
        problems.append(
            f"turn {turn.pk}: closing {turn.closing_amount} != {ledger.closing()}"
        )
    return LedgerCheck(turn, ledger, tuple(problems))
