"""A simulated casino night: real shuffled shoes played by the rules, recorded
through the same checks and ledger code as the API (so a simulated coup is
audited exactly like a croupier's): each shoe is one shoe_play call, which
runs coup_record's and the turn services' checks event by event. Used by
`manage.py simulate` and the demo data.

Every player has a card number (P<table><seat>, e.g. P0103: table 1, seat 3),
entered on his stakes and on his banks, so a banker is the same person from
one turn, session and day to the next. Several croupiers take turns at the
tables shoe by shoe, and a run may span past gaming days (`days`, `start`).
`inject` plants patterns for the surveillance to find (tables/sim_patterns.py);
without it a run is honest: no finding but the false draws asked for, and
every shoe closed with its true count of the cards left.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from . import chemmy, services
from .chemmy import Action
from .models import BankerTurn, Table, TableSession
from .sim_patterns import (
    FLOOR_FALSE_DRAW_RATE,
    Injection,
    bias_for,
    clock_at,
    deal_biased,
    short_shoe,
)

STAKE_STEPS = (1, 2, 2, 3, 5, 5, 10, 20)  # multiples of the minimum punter stake
SHOES_PER_DAY = 250  # tables x shoes, on a past day's clock (sim_patterns.clock_at)


@dataclass
class SimulationReport:
    tables: int = 0
    shoes: int = 0
    coups: int = 0
    false_draws_injected: int = 0
    findings: int = 0  # the coups'
    shoe_findings: int = 0  # the shoes' own (shoe_count at a close)
    commission: Decimal = Decimal("0")
    table_ids: list[int] = field(default_factory=list)
    # What was planted, and where (sim_patterns): names, ids, rates.
    injected: dict = field(default_factory=dict)


def player_card(table_no: int, seat: int) -> str:
    """The card number of the player who sits at `seat` of the n-th table."""
    return f"P{table_no:02d}{seat:02d}"


def _decide(rng: random.Random, action: Action, rate: float, fds: list) -> bool:
    """True to draw. Optional cells are the player's free choice; a mandatory
    one is broken with probability `rate` (an injected false draw, counted in
    `fds`)."""
    if action == Action.OPTIONAL:
        return rng.random() < 0.5
    draw = action == Action.DRAW
    if rate and rng.random() < rate:
        fds.append(1)
        return not draw
    return draw


def _deal(
    rng: random.Random, cards: list[str], tableau: chemmy.Tableau, rate: float
) -> tuple[list[str], list[str], int]:
    """One coup popped from the end of `cards`, and its false draws."""
    fds: list = []
    p = [cards.pop(), None]
    b = [cards.pop(), None]
    p[1], b[1] = cards.pop(), cards.pop()
    pt, bt = chemmy.hand_total(p), chemmy.hand_total(b)
    if pt >= 8 or bt >= 8:
        return p, b, 0
    third = None
    if _decide(rng, chemmy.punter_action(pt), rate, fds):
        p.append(cards.pop())
        third = chemmy.point(p[2])
    if _decide(rng, tableau.banker_action(bt, third), rate, fds):
        b.append(cards.pop())
    return p, b, len(fds)


def deal_coup(
    rng: random.Random, cards: list[str], tableau: chemmy.Tableau, rate: float, report
) -> tuple[list[str], list[str]]:
    """Deal one coup from the end of `cards` (popped in dealing order)."""
    p, b, fds = _deal(rng, cards, tableau, rate)
    report.false_draws_injected += fds
    return p, b


@dataclass
class _Bank:
    """The simulator's own view of the banker turn: who holds the bank, and
    how much (it decides stakes, passes and fresh banks from it; shoe_play
    checks and settles everything again)."""

    seat: int
    bank: Decimal


def _stakes(rng: random.Random, table: Table, turn: _Bank, table_no: int) -> list:
    unit = table.rules.minimum_banco / 10
    others = [s for s in range(1, table.seats + 1) if s != turn.seat]
    if rng.random() < 0.08:  # someone goes banco
        seat = rng.choice(others)
        return [
            services.StakeInput(
                amount=turn.bank,
                seat=seat,
                announcement="banco_solo",
                player_card=player_card(table_no, seat),
            )
        ]
    seats = rng.sample(others, k=rng.randint(1, min(5, len(others))))
    return [
        services.StakeInput(
            amount=unit * rng.choice(STAKE_STEPS),
            seat=seat,
            player_card=player_card(table_no, seat),
        )
        for seat in seats
    ]


def _new_bank(rng: random.Random, table: Table) -> Decimal:
    return table.rules.minimum_banco * rng.choice((1, 1, 2, 3, 5))


def _settle(table: Table, tableau, turn: _Bank, punter, banker, stakes):
    """The coup's coverage and settlement by the pure engine, to play on
    from."""
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
    return coverage, chemmy.settle(verdict.outcome, coverage, **rules.settle_args())


def _staying(table: Table, coverage, settlement, table_no: int) -> list | None:
    """House rule tie_rule "stay": after a tie the covered stakes stay on the
    table for the next coup (coup_record refuses a coup without them)."""
    if settlement.outcome != chemmy.Outcome.TIE or table.rules.tie_rule != "stay":
        return None
    # as they were placed (at least what was covered, never below the minimum)
    return [
        services.StakeInput(
            amount=c.stake.amount, seat=c.stake.seat, standing=c.stake.standing,
            player_card=player_card(table_no, c.stake.seat)
            if c.stake.seat is not None else "",
        )
        for c in coverage.stakes
        if c.covered > 0
    ] or None


@dataclass(frozen=True)
class ShoePlan:
    """What one shoe plays with beyond the rules: its number among the
    tables, the false-draw rate of its croupier, the bias of the table (from
    its day on) and of the cheating banker (his card), a rank it is short of."""

    table_no: int = 1
    table_bias: tuple[str, float] | None = None
    cheat_card: str | None = None
    cheat_bias: tuple[str, float] | None = None
    short: tuple[str, int] | None = None


def simulate_shoe(
    *,
    session: TableSession,
    user,
    rng: random.Random,
    false_draw_rate: float,
    report: SimulationReport,
    device: str = "simulate",
    plan: ShoePlan | None = None,
) -> None:
    """Open a shoe, deal it down to the cut card, close it with the cards
    counted left. The whole shoe's coups, passes and new banks are recorded by
    one shoe_play call, with the same checks and log rows as coup_record and
    the turn services. `user` records it (the session's croupier)."""
    plan = plan or ShoePlan()
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
    missing = short_shoe(rng, cards, *plan.short) if plan.short else []
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
            plan=plan,
        )
        played = services.shoe_play(
            shoe_id=shoe.pk, user=user, events=events, device=device
        )
        for coup in played.coups:
            report.coups += 1
            report.findings += coup.finding_count
            report.commission += coup.commission
        # The croupier counts what is physically left: a short shoe shows.
        services.shoe_close(shoe=shoe, user=user, cards_left=len(cards), device=device)
    if missing:
        report.injected.setdefault("short_shoes", []).append(
            {"shoe": shoe.pk, "missing": missing}
        )
    report.shoe_findings += shoe.findings.count()
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
    plan: ShoePlan | None = None,
) -> list[services.ShoeEvent]:
    """Deal `cards` down to the cut card: the coups, passes and fresh banks,
    as shoe_play takes them. `last` is the session's latest banker turn (it
    plays on if still open)."""
    plan = plan or ShoePlan()
    n = plan.table_no
    events: list[services.ShoeEvent] = []
    staying = None  # the stakes a tie left on the table
    if last is not None and last.is_open:
        turn = _Bank(last.seat, last.bank)
        if last.tied_stakes:  # the last shoe ended on a tie
            unit = table.rules.minimum_banco / 10  # a covered part may be less
            staying = [
                services.StakeInput(
                    amount=max(Decimal(amount), unit), seat=seat,
                    standing=standing or None,
                    player_card=player_card(n, seat) if seat is not None else "",
                )
                for seat, standing, amount in last.tied_stakes
            ]
    else:
        seat = services.next_seat(last.seat, table.seats) if last else 1
        turn = _open(events, seat, _new_bank(rng, table), n)
    while len(cards) >= 7:
        bias = plan.table_bias
        if plan.cheat_card and player_card(n, turn.seat) == plan.cheat_card:
            bias = plan.cheat_bias

        def deal(c: list[str]) -> tuple[list[str], list[str], int]:
            return _deal(rng, c, tableau, false_draw_rate)

        punter, banker, fds = deal_biased(rng, cards, deal, tableau, bias)
        report.false_draws_injected += fds
        stakes = _stakes(rng, table, turn, n)  # drawn either way: same sequence
        if staying:
            stakes = staying
        events.append(services.CoupEvent(punter, banker, stakes))
        coverage, settlement = _settle(table, tableau, turn, punter, banker, stakes)
        staying = _staying(table, coverage, settlement, n)
        turn.bank = settlement.bank_after
        if settlement.turn_ends:  # bank lost: the next seat opens
            seat = services.next_seat(turn.seat, table.seats)
            turn = _open(events, seat, _new_bank(rng, table), n)
        elif settlement.outcome == chemmy.Outcome.BANKER and (
            rng.random() < 0.15 or turn.bank > 16 * table.rules.minimum_banco
        ):
            turn = _pass_bank(rng, table, turn, events, n)
    return events


def _open(events: list, seat: int, bank: Decimal, table_no: int = 1) -> _Bank:
    events.append(
        services.TurnOpen(seat=seat, bank=bank, player_card=player_card(table_no, seat))
    )
    return _Bank(seat, bank)


def _pass_bank(rng, table: Table, turn: _Bank, events: list, table_no: int) -> _Bank:
    """Suite: offered on at its standing amount; if nobody takes it, the next
    seat opens a fresh bank."""
    events.append(services.TurnPass())
    seat = services.next_seat(turn.seat, table.seats)
    bank = turn.bank if rng.random() < 0.5 else _new_bank(rng, table)
    return _open(events, seat, bank, table_no)


def _session_for(table: Table, user, croupier, day: date | None) -> TableSession:
    """The table's open session, or a new one; with past days, a session of
    another gaming day is closed first (the next day opens its own)."""
    session = TableSession.objects.filter(table=table, closed_at__isnull=True).first()
    if session is not None and day is not None and session.gaming_day != day:
        services.session_close(session=session, user=user, device="simulate")
        session = None
    return session or services.session_open(
        table=table, user=user, croupier=croupier, device="simulate"
    )


@dataclass
class _Floor:
    """One simulate() run: who deals, the floor's false-draw rate, and what
    is planted where (the cheat at table 1 seat 1, the table's pattern at the
    last table, the short shoe as table 1's first shoe)."""

    user: object
    croupiers: list
    inject: Injection
    floor_rate: float
    names: list[str]
    report: SimulationReport

    def rate(self, croupier) -> float:
        info = self.report.injected.get("croupier")
        return (
            info["rate"] if info and croupier == self.croupiers[0] else self.floor_rate
        )

    def plan(self, n: int, k: int, d: int, today: date) -> ShoePlan:
        inj = self.inject
        table_on = (
            inj.table_banker_share is not None
            and n == len(self.names)
            and (inj.table_from is None or today >= inj.table_from)
        )
        short = inj.short_rank and n == 1 and k == 0 and d == 0
        return ShoePlan(
            table_no=n,
            table_bias=bias_for(inj.table_banker_share) if table_on else None,
            cheat_card=None if inj.banker_win is None else player_card(1, 1),
            cheat_bias=bias_for(inj.banker_win),
            short=(inj.short_rank, inj.short_count) if short else None,
        )

    def table_day(self, rng, n: int, d: int, day: date | None, shoes: int) -> int:
        user, croupiers = self.user, self.croupiers
        name = self.names[n - 1]
        table = Table.objects.filter(name=name).first() or services.table_create(
            user=user, name=name, device="simulate"
        )
        session = _session_for(table, user, croupiers[(n - 1) % len(croupiers)], day)
        for k in range(shoes):
            croupier = croupiers[(n - 1 + k + d) % len(croupiers)]
            if session.croupier_id != croupier.pk:  # a relief, shoe by shoe
                session = services.session_croupier_change(
                    session=session,
                    croupier=croupier,
                    user=user,
                    reason="relief (simulated)",
                    device="simulate",
                )
            simulate_shoe(
                session=session,
                user=croupier,
                rng=rng,
                false_draw_rate=self.rate(croupier),
                report=self.report,
                plan=self.plan(n, k, d, day or timezone.localdate()),
            )
        return table.pk


def _injected(report, inject: Injection, croupiers, floor_rate, names) -> None:
    if inject.croupier_false_draw is not None:
        report.injected["croupier"] = {
            "user": croupiers[0].get_username(),
            "rate": min(1.0, floor_rate * inject.croupier_false_draw),
            "floor_rate": floor_rate,
        }
    if inject.banker_win is not None:
        report.injected["banker"] = {
            "player_card": player_card(1, 1),
            "win_share": inject.banker_win,
        }
    if inject.table_banker_share is not None:
        report.injected["table"] = {
            "name": names[-1],
            "banker_share": inject.table_banker_share,
            "from": inject.table_from.isoformat() if inject.table_from else None,
        }


def simulate(
    *,
    user,
    tables: int,
    shoes: int,
    seed: int,
    false_draw_rate: float = 0.0,
    table_prefix: str = "Sim",
    croupiers: Sequence | None = None,
    inject: Injection | None = None,
    days: int = 1,
    start: date | None = None,
) -> SimulationReport:
    """`tables` tables, each dealing `shoes` shoes a day for `days` gaming
    days from `start` (without either: today, in real time; with `days` alone,
    the days up to today). The `croupiers` (default: `user`) take the tables
    in turn, shoe by shoe; `user` opens the sessions. `inject`: what to plant
    (sim_patterns.Injection)."""
    if not 0 <= false_draw_rate <= 1:
        raise ValueError("false_draw_rate must be between 0 and 1")
    if days < 1:
        raise ValueError("days must be at least 1")
    inject = inject or Injection()
    croupiers = list(croupiers or [user])
    if inject.croupier_false_draw is not None and len(croupiers) < 2:
        raise ValueError("croupier-false-draw needs at least 2 croupiers")
    floor_rate = false_draw_rate
    if inject.croupier_false_draw is not None:
        floor_rate = false_draw_rate or FLOOR_FALSE_DRAW_RATE
    names = [f"{table_prefix} {seed}-{n}" for n in range(1, tables + 1)]
    report = SimulationReport()
    _injected(report, inject, croupiers, floor_rate, names)
    floor = _Floor(user, croupiers, inject, floor_rate, names, report)
    rng = random.Random(seed)
    if start is None and days > 1:
        start = timezone.localdate() - timedelta(days=days - 1)
    if start is not None and tables * shoes > SHOES_PER_DAY:
        # A past day's clock gives a shoe about 200 of its seconds, from noon:
        # more would run past the cut-off into the next gaming day.
        raise ValueError(f"at most {SHOES_PER_DAY} shoes a simulated day")
    for d in range(days):
        day = None if start is None else start + timedelta(days=d)
        with clock_at(day) if day is not None else nullcontext():
            for n in range(1, tables + 1):
                table_id = floor.table_day(rng, n, d, day, shoes)
                if d == 0:
                    report.tables += 1
                    report.table_ids.append(table_id)
    return report
