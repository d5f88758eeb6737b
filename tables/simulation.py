"""A simulated casino night: real shuffled shoes played by the rules, recorded
through the same services as the API (so a simulated coup is audited exactly
like a croupier's). Used by `manage.py simulate` and the demo data.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction

from . import chemmy, services
from .chemmy import Action
from .models import BankerTurn, Table, TableSession

STAKE_STEPS = (1, 2, 2, 3, 5, 5, 10, 20)  # multiples of the minimum punter stake


@dataclass
class SimulationReport:
    tables: int = 0
    shoes: int = 0
    coups: int = 0
    false_draws_injected: int = 0
    findings: int = 0
    commission: Decimal = Decimal("0")
    table_ids: list[int] = field(default_factory=list)


def _decide(rng: random.Random, action: Action, rate: float, report) -> bool:
    """True to draw. Optional cells are the player's free choice; a mandatory
    one is broken with probability `rate` (an injected false draw)."""
    if action == Action.OPTIONAL:
        return rng.random() < 0.5
    draw = action == Action.DRAW
    if rate and rng.random() < rate:
        report.false_draws_injected += 1
        return not draw
    return draw


def deal_coup(
    rng: random.Random, cards: list[str], tableau: chemmy.Tableau, rate: float, report
) -> tuple[list[str], list[str]]:
    """Deal one coup from the end of `cards` (popped in dealing order)."""
    p = [cards.pop(), None]
    b = [cards.pop(), None]
    p[1], b[1] = cards.pop(), cards.pop()
    pt, bt = chemmy.hand_total(p), chemmy.hand_total(b)
    if pt >= 8 or bt >= 8:
        return p, b
    third = None
    if _decide(rng, chemmy.punter_action(pt), rate, report):
        p.append(cards.pop())
        third = chemmy.point(p[2])
    if _decide(rng, tableau.banker_action(bt, third), rate, report):
        b.append(cards.pop())
    return p, b


def _stakes(rng: random.Random, table: Table, turn: BankerTurn) -> list:
    unit = table.rules.minimum_banco / 10
    others = [s for s in range(1, table.seats + 1) if s != turn.seat]
    if rng.random() < 0.08:  # someone goes banco
        return [
            services.StakeInput(
                amount=turn.bank, seat=rng.choice(others), announcement="banco_solo"
            )
        ]
    seats = rng.sample(others, k=rng.randint(1, min(5, len(others))))
    return [
        services.StakeInput(amount=unit * rng.choice(STAKE_STEPS), seat=seat)
        for seat in seats
    ]


def _new_bank(rng: random.Random, table: Table) -> Decimal:
    return table.rules.minimum_banco * rng.choice((1, 1, 2, 3, 5))


def simulate_shoe(
    *,
    session: TableSession,
    user,
    rng: random.Random,
    false_draw_rate: float,
    report: SimulationReport,
    device: str = "simulate",
) -> None:
    """Open a shoe, deal it down to the cut card, close it. One transaction per
    shoe keeps a whole night's simulation fast; each coup still goes through
    coup_record with its own checks and log row."""
    table = session.table
    tableau = chemmy.Tableau.from_dict(
        {"version": table.rules.tableau.version, "rows": table.rules.tableau.rows}
    )
    decks = table.rules.decks
    cards = [c for c in chemmy.ALL_CODES for _ in range(decks)]
    rng.shuffle(cards)
    burned = rng.randint(1, 10)
    del cards[-burned:]
    with transaction.atomic():
        shoe = services.shoe_open(
            session=session, user=user, burned=burned, device=device
        )
        turn = session.turns.filter(closed_at__isnull=True).first()
        if turn is None:
            last = session.turns.order_by("-number").first()
            seat = services.next_seat(last.seat, table.seats) if last else 1
            turn = services.banker_turn_open(
                session=session,
                user=user,
                seat=seat,
                bank=_new_bank(rng, table),
                device=device,
            )
        while len(cards) >= 7:
            punter, banker = deal_coup(rng, cards, tableau, false_draw_rate, report)
            result = services.coup_record(
                shoe_id=shoe.pk,
                user=user,
                device=device,
                punter=punter,
                banker=banker,
                stakes=_stakes(rng, table, turn),
            )
            coup = result.coup
            report.coups += 1
            report.findings += coup.finding_count
            report.commission += coup.commission
            turn.bank = coup.bank_after
            if coup.next_banker_seat is not None:  # bank lost: next seat opens
                turn = services.banker_turn_open(
                    session=session,
                    user=user,
                    seat=coup.next_banker_seat,
                    bank=_new_bank(rng, table),
                    device=device,
                )
            elif coup.outcome == "banker" and (
                rng.random() < 0.15 or turn.bank > 16 * table.rules.minimum_banco
            ):
                turn = _pass_bank(rng, session, turn, user, device)
        services.shoe_close(shoe=shoe, user=user, device=device)
    report.shoes += 1


def _pass_bank(rng, session, turn, user, device) -> BankerTurn:
    """Suite: offered on at its standing amount; if nobody takes it, the next
    seat opens a fresh bank."""
    table = session.table
    passed = services.banker_turn_pass(turn=turn, user=user, device=device)
    seat = services.next_seat(passed.seat, table.seats)
    bank = passed.bank if rng.random() < 0.5 else _new_bank(rng, table)
    return services.banker_turn_open(
        session=session, user=user, seat=seat, bank=bank, device=device
    )


def simulate(
    *,
    user,
    tables: int,
    shoes: int,
    seed: int,
    false_draw_rate: float = 0.0,
    table_prefix: str = "Sim",
) -> SimulationReport:
    if not 0 <= false_draw_rate <= 1:
        raise ValueError("false_draw_rate must be between 0 and 1")
    rng = random.Random(seed)
    report = SimulationReport()
    for n in range(1, tables + 1):
        name = f"{table_prefix} {seed}-{n}"
        table = Table.objects.filter(name=name).first() or services.table_create(
            user=user, name=name, device="simulate"
        )
        session = TableSession.objects.filter(
            table=table, closed_at__isnull=True
        ).first() or services.session_open(table=table, user=user, device="simulate")
        for _ in range(shoes):
            simulate_shoe(
                session=session,
                user=user,
                rng=rng,
                false_draw_rate=false_draw_rate,
                report=report,
            )
        report.tables += 1
        report.table_ids.append(table.pk)
    return report
