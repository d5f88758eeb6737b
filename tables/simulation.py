"""A simulated casino night: real shuffled shoes played by the rules, recorded
through the same checks and ledger code as the API (so a simulated coup is
audited exactly like a croupier's): each shoe is one shoe_play call, which
runs coup_record's and the turn services' checks event by event. Used by
`manage.py simulate` and the demo data.
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


@dataclass
class _Bank:
    """The simulator's own view of the banker turn: who holds the bank, and
    how much (it decides stakes, passes and fresh banks from it; shoe_play
    checks and settles everything again)."""

    seat: int
    bank: Decimal


def _stakes(rng: random.Random, table: Table, turn: _Bank) -> list:
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


def _settle(table: Table, tableau, turn: _Bank, punter, banker, stakes):
    """The coup's settlement by the pure engine, to play on from."""
    rules = table.rules
    verdict = chemmy.evaluate(punter, banker, tableau=tableau)
    coverage = chemmy.cover_stakes(
        [
            chemmy.StakeIn(
                amount=s.amount,
                seat=s.seat,
                announcement=chemmy.Announcement(s.announcement),
            )
            for s in stakes
        ],
        bank=turn.bank,
        banker_seat=turn.seat,
        seats=table.seats,
        minimum_banco=rules.minimum_banco,
        **rules.cover_args(),
    )
    return chemmy.settle(verdict.outcome, coverage, **rules.settle_args())


def simulate_shoe(
    *,
    session: TableSession,
    user,
    rng: random.Random,
    false_draw_rate: float,
    report: SimulationReport,
    device: str = "simulate",
) -> None:
    """Open a shoe, deal it down to the cut card, close it. The whole shoe's
    coups, passes and new banks are recorded by one shoe_play call, with the
    same checks and log rows as coup_record and the turn services."""
    table = session.table
    # Dealt under the session's own version (a change waits for the next one):
    # table.rules below means the rules this session plays.
    table.rules = session.house_rules
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
        last = session.turns.order_by("-number").first()
        events = shoe_events(
            rng=rng,
            table=table,
            tableau=tableau,
            cards=cards,
            last=last,
            false_draw_rate=false_draw_rate,
            report=report,
        )
        played = services.shoe_play(
            shoe_id=shoe.pk, user=user, events=events, device=device
        )
        for coup in played.coups:
            report.coups += 1
            report.findings += coup.finding_count
            report.commission += coup.commission
        services.shoe_close(shoe=shoe, user=user, device=device)
    report.shoes += 1


def shoe_events(
    *,
    rng: random.Random,
    table: Table,
    tableau: chemmy.Tableau,
    cards: list[str],
    last: BankerTurn | None,
    false_draw_rate: float,
    report: SimulationReport,
) -> list[services.ShoeEvent]:
    """Deal `cards` down to the cut card: the coups, passes and fresh banks,
    as shoe_play takes them. `last` is the session's latest banker turn (it
    plays on if still open)."""
    events: list[services.ShoeEvent] = []
    if last is not None and last.is_open:
        turn = _Bank(last.seat, last.bank)
    else:
        seat = services.next_seat(last.seat, table.seats) if last else 1
        turn = _open(events, seat, _new_bank(rng, table))
    while len(cards) >= 7:
        punter, banker = deal_coup(rng, cards, tableau, false_draw_rate, report)
        stakes = _stakes(rng, table, turn)
        events.append(services.CoupEvent(punter, banker, stakes))
        settlement = _settle(table, tableau, turn, punter, banker, stakes)
        turn.bank = settlement.bank_after
        if settlement.turn_ends:  # bank lost: the next seat opens
            seat = services.next_seat(turn.seat, table.seats)
            turn = _open(events, seat, _new_bank(rng, table))
        elif settlement.outcome == chemmy.Outcome.BANKER and (
            rng.random() < 0.15 or turn.bank > 16 * table.rules.minimum_banco
        ):
            turn = _pass_bank(rng, table, turn, events)
    return events


def _open(events: list, seat: int, bank: Decimal) -> _Bank:
    events.append(services.TurnOpen(seat=seat, bank=bank))
    return _Bank(seat, bank)


def _pass_bank(rng, table: Table, turn: _Bank, events: list) -> _Bank:
    """Suite: offered on at its standing amount; if nobody takes it, the next
    seat opens a fresh bank."""
    events.append(services.TurnPass())
    seat = services.next_seat(turn.seat, table.seats)
    bank = turn.bank if rng.random() < 0.5 else _new_bank(rng, table)
    return _open(events, seat, bank)


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
