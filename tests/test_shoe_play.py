"""shoe_play: a shoe's events in one call write the ledger coup_record and the
turn services write one call at a time, and refuse what they refuse."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from casino.changelog import log_actions
from casino.models import ChangeLog
from casino.trail import trail_verify
from tables import chemmy, services
from tables.chemmy import CoupError
from tables.errors import Conflict, Forbidden, Invalid, NotFound
from tables.models import BankerTurn, Coup, DailyRollup, Finding, Shoe, Stake
from tables.rollups import GRAINS, rollup_recompute, rollup_snapshot, rollups_hold
from tables.selectors import turn_ledger_verify
from tables.services import CoupEvent, TurnOpen, TurnPass
from tables.simulation import SimulationReport, shoe_events

D = Decimal
BANKER_WINS = (["2H", "3D"], ["8C", "TS"])
PUNTER_WINS = (["9H", "KD"], ["5C", "2S"])
TIE = (["4H", "3D"], ["7C", "KS"])
FALSE_DRAW = (["2H", "2D", "6C"], ["3S", "2C"])  # banker 5 stands on a 6


def stake(amount, seat, announcement="none"):
    return services.StakeInput(amount=D(amount), seat=seat, announcement=announcement)


def coup(cards, *stakes, declared_bank=None):
    return CoupEvent(cards[0], cards[1], list(stakes), declared_bank=declared_bank)


# Every path through a turn: banco then suivi, a false draw, a declared bank
# that is wrong, a pass taken at its standing amount, a lost bank, a fresh one.
NIGHT = [
    TurnOpen(seat=1, bank=D("1000")),
    coup(BANKER_WINS, stake("1000", 3, "banco_solo")),  # bank 1950, suivi seat 3
    coup(TIE, stake("1950", 3, "suivi"), stake("1950", 2, "banco_solo")),
    coup(FALSE_DRAW, stake("1950", 3)),  # the tie's stake stays: bank 3802.50
    coup(BANKER_WINS, stake("100", 4), declared_bank=D("999")),  # bank 195
    TurnPass(),
    TurnOpen(seat=2, bank=D("195.00")),  # takes the passed bank
    coup(PUNTER_WINS, stake("100", 5)),  # lost: the turn closes
    TurnOpen(seat=3, bank=D("500")),
    coup(TIE, stake("200", 4), stake("50", 6)),
]


def _simulated(table, seed: int) -> list:
    rng = random.Random(seed)
    cards = [c for c in chemmy.ALL_CODES for _ in range(table.rules.decks)]
    rng.shuffle(cards)
    del cards[-5:]  # the shoe fixture burns 5
    return shoe_events(
        rng=rng,
        table=table,
        tableau=table.rules.tableau.as_engine(),
        cards=cards,
        last=None,
        false_draw_rate=0.15,
        report=SimulationReport(),
    )


def _floor(user, croupier, name):
    table = services.table_create(user=user, name=name)
    session = services.session_open(table=table, user=croupier)
    shoe = services.shoe_open(session=session, user=croupier, burned=5)
    return table, session, shoe


def one_by_one(session, shoe, user, events, device="tab"):
    """The same events through coup_record and the turn services."""
    for event in events:
        if isinstance(event, TurnOpen):
            services.banker_turn_open(
                session=session, user=user, seat=event.seat, bank=event.bank,
                player_card=event.player_card, device=device,
            )
        elif isinstance(event, TurnPass):
            turn = session.turns.get(closed_at__isnull=True)
            services.banker_turn_pass(turn=turn, user=user, device=device)
        else:
            services.coup_record(
                shoe_id=shoe.pk, user=user, punter=event.punter,
                banker=event.banker, stakes=event.stakes,
                declared_bank=event.declared_bank, device=device,
            )


def ledger(table, shoe) -> dict:
    """Everything the two paths must agree on, without ids and clock times."""
    coups = list(
        Coup.objects.filter(shoe=shoe).order_by("seq").prefetch_related(
            "stakes", "findings"
        )
    )
    turns = list(BankerTurn.objects.filter(session__table=table).order_by("number"))
    skip = {"id", "shoe", "turn", "rules", "created_at", "request_digest"}
    by_coup = {str(c.pk): ("coup", c.seq) for c in coups}
    by_turn = {str(t.pk): ("turn", t.number) for t in turns}
    log = []
    for row in ChangeLog.objects.filter(
        object_type__in=["tables.coup", "tables.bankerturn"]
    ).order_by("id"):
        key = (by_coup if row.object_type == "tables.coup" else by_turn).get(
            row.object_id
        )
        if key is not None:
            new = {k: v for k, v in row.new.items() if k != "shoe"}
            log.append((row.action, key, row.device, row.user_id, new))
    shoe.refresh_from_db()
    return {
        "coups": [
            (
                {f.attname: getattr(c, f.attname) for f in c._meta.concrete_fields
                 if f.name not in skip},
                c.turn.number,
                [(s.position, s.seat, s.standing, s.announcement, s.amount,
                  s.covered, s.declined, s.payout) for s in c.stakes.all()],
                [(f.code, f.severity, f.side, f.detail, f.message,
                  f.tableau_version) for f in c.findings.all()],
            )
            for c in coups
        ],
        "turns": [
            (t.number, t.seat, t.opening_bank, t.took_passed_bank, t.bank,
             t.coups, t.garage_total, t.commission_total, t.suivi_seat, t.end,
             t.closing_amount, t.closed_at is None)
            for t in turns
        ],
        "shoe": (shoe.next_seq, shoe.dealt, shoe.card_counts),
        "rollups": {
            key[1:]: cell for key, cell in rollup_snapshot(table=table).items()
        },
        "log": log,
    }


@pytest.mark.parametrize("source", ["night", "simulated"])
def test_one_call_writes_the_ledger_of_one_call_per_event(
    manager, croupier, source
):
    table_a, session_a, shoe_a = _floor(manager, croupier, "A")
    table_b, session_b, shoe_b = _floor(manager, croupier, "B")
    events = NIGHT if source == "night" else _simulated(table_a, seed=3)
    played = services.shoe_play(
        shoe_id=shoe_a.pk, user=croupier, events=events, device="tab"
    )
    one_by_one(session_b, shoe_b, croupier, events)

    a, b = ledger(table_a, shoe_a), ledger(table_b, shoe_b)
    assert a == b
    coups = sum(isinstance(e, CoupEvent) for e in events)
    assert len(a["coups"]) == len(played.coups) == coups
    assert [c.seq for c in played.coups] == list(range(1, coups + 1))
    assert {c["findings"].get("false_draw", 0) for c in a["rollups"].values()} != {0}
    ends = {t[9] for t in a["turns"]}
    assert {"passed", "lost"} <= ends
    if source == "night":
        assert [t[3] for t in a["turns"]] == [False, True, False]  # took passed
        assert a["coups"][1][0]["punter_seat"] == 3  # suivi first
        assert {f[0] for c in a["coups"] for f in c[3]} == {
            "false_draw", "bank_mismatch"
        }
        # passed with bank 195 and garage 3702.50
        assert a["turns"][0][10] == D("3897.50")
    for turn in BankerTurn.objects.all():
        check = turn_ledger_verify(turn)
        assert check.ok, check.problems
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells
    assert trail_verify().ok


def test_a_shoe_is_a_few_statements_not_a_few_per_coup(manager, croupier):
    table, session, shoe = _floor(manager, croupier, "A")
    events = _simulated(table, seed=8)
    with CaptureQueriesContext(connection) as queries:
        played = services.shoe_play(shoe_id=shoe.pk, user=croupier, events=events)
    assert len(played.coups) > 60
    # SQLite splits a long insert in a few; PostgreSQL sends one. Each rollup
    # grain is a locking read and a write (tables/rollups.py GRAINS).
    # + 3: the rows it builds on checked against their seals (two reads) and
    # the seals of what it wrote (one insert): casino/continuity.py. On SQLite
    # each read of the chain's head also asks whether the witnesses stopped the
    # trail (casino/trailstop.py; PostgreSQL's casino_chain_head does it in SQL).
    stop_checks = 2 if connection.vendor == "sqlite" else 0
    assert len(queries) <= 26 + 2 * len(GRAINS) + stop_checks, "\n".join(
        q["sql"][:100] for q in queries)


def test_a_batch_goes_on_from_the_open_turn_and_existing_cells(
    shoe, turn, croupier
):
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=BANKER_WINS[0],
        banker=BANKER_WINS[1], stakes=[stake("100", 2)],
    )  # bank 195 carried, a rollup cell for seat 1
    played = services.shoe_play(
        shoe_id=shoe.pk,
        user=croupier,
        events=[
            coup(BANKER_WINS, stake("100", 2)),
            # passed on a tie: its stake stays for the turn's next coup, not
            # for the next banker's
            coup(TIE, stake("195", 4, "banco_solo"), declared_bank=D("195.00")),
            TurnPass(),
            TurnOpen(seat=2, bank=D("195.00")),
            coup(FALSE_DRAW, stake("100", 5)),
            coup(PUNTER_WINS, stake("195", 3, "banco_solo")),
        ],
    )
    assert [c.seq for c in played.coups] == [2, 3, 4, 5]
    assert played.coups[1].finding_count == 0  # the declared bank was right
    turn.refresh_from_db()
    assert (turn.end, turn.coups, turn.closing_amount) == ("passed", 3, D("1190.00"))
    new = BankerTurn.objects.get(number=2)
    assert (new.took_passed_bank, new.end, new.bank) == (True, "lost", D("0"))
    assert played.turns == [turn, new]
    shoe.refresh_from_db()
    assert (shoe.next_seq, shoe.dealt) == (6, 21)
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells
    assert DailyRollup.objects.count() == 2
    for t in BankerTurn.objects.all():
        assert turn_ledger_verify(t).ok
    call_command("verify_trail")
    assert list(
        ChangeLog.objects.filter(action__startswith="tables.")
        .order_by("-id")
        .values_list("action", flat=True)[:7]
    )[::-1] == [
        "tables.coup.recorded",
        "tables.coup.recorded",
        "tables.coup.recorded",
        "tables.turn.passed",
        "tables.turn.opened",
        "tables.coup.recorded",
        "tables.coup.recorded",
    ]


def _state():
    return (
        Coup.objects.count(),
        Stake.objects.count(),
        Finding.objects.count(),
        BankerTurn.objects.count(),
        DailyRollup.objects.count(),
        ChangeLog.objects.count(),
        list(Shoe.objects.values_list("next_seq", "dealt", "card_counts")),
    )


GOOD = coup(BANKER_WINS, stake("100", 2))


@pytest.mark.parametrize(
    "events, index, error, field",
    [
        ([GOOD], 0, Conflict, "turn"),
        ([TurnOpen(1, D("99.99"))], 0, Invalid, "bank"),
        ([TurnOpen(1, D("100.001"))], 0, Invalid, "bank"),
        ([TurnOpen(10, D("100"))], 0, Invalid, "seat"),
        ([TurnOpen(1, D("100")), TurnOpen(2, D("100"))], 1, Conflict, "session"),
        ([TurnOpen(1, D("100")), TurnPass()], 1, Conflict, "turn"),
        ([TurnOpen(1, D("1000")), GOOD, coup(TIE)], 2, Invalid, "stakes"),
        (
            [TurnOpen(1, D("1000")), GOOD, coup(TIE, stake("5", 2))],
            2, CoupError, "stakes[0].amount",
        ),
        (
            [TurnOpen(1, D("1000")), coup((["2H", "ZZ"], ["8C", "TS"]), stake("9", 2))],
            1, CoupError, "punter[1]",
        ),
        (
            [TurnOpen(1, D("1000")), coup(TIE, stake("100", 2, "all_in"))],
            1, Invalid, "stakes[0].announcement",
        ),
        (  # the carried bank is 1950 now: a banco solo of 1000 is not the bank
            [TurnOpen(1, D("1000")), coup(BANKER_WINS, stake("1000", 3, "banco_solo")),
             coup(TIE, stake("1000", 4, "banco_solo"))],
            2, CoupError, "stakes[0].amount",
        ),
        (
            [TurnOpen(1, D("1000")), coup(PUNTER_WINS, stake("100", 2)), GOOD],
            2, Conflict, "turn",
        ),
        (
            [TurnOpen(1, D("1000")), coup(BANKER_WINS, stake("100", 1))],
            1, CoupError, "stakes[0].seat",
        ),
    ],
)
def test_a_refused_event_is_named_and_nothing_is_written(
    shoe, session, croupier, events, index, error, field
):
    before = _state()
    with pytest.raises(error) as batch:
        services.shoe_play(shoe_id=shoe.pk, user=croupier, events=events)
    assert batch.value.field == f"events[{index}].{field}"
    assert _state() == before
    # One call per event refuses the same event with the same error.
    with pytest.raises(error) as single, transaction.atomic():
        one_by_one(session, shoe, croupier, events)
    assert (single.value.field, single.value.message) == (field, batch.value.message)
    assert _state() == before


def test_refusals_about_the_whole_call(shoe, turn, croupier, croupier2):
    with pytest.raises(Invalid) as err:
        services.shoe_play(shoe_id=shoe.pk, user=croupier, events=[])
    assert err.value.field == "events"
    with pytest.raises(NotFound) as err:
        services.shoe_play(shoe_id=shoe.pk + 99, user=croupier, events=[GOOD])
    assert err.value.field == "shoe"
    with pytest.raises(Forbidden) as err:
        services.shoe_play(shoe_id=shoe.pk, user=croupier2, events=[GOOD])
    assert err.value.field == "session"
    services.shoe_close(shoe=shoe, user=croupier)
    with pytest.raises(Conflict) as err:
        services.shoe_play(shoe_id=shoe.pk, user=croupier, events=[GOOD])
    assert err.value.field == "shoe"
    assert Coup.objects.count() == 0


def test_log_actions_chains_rows_like_log_action(croupier):
    with transaction.atomic():
        assert log_actions([]) == []
        rows = log_actions(
            [
                {"action": "x.one", "user": croupier, "new": {"a": D("1.50")}},
                {"action": "x.two", "reason": "why", "old": [1], "new": None},
            ]
        )
    assert [r.action for r in rows] == ["x.one", "x.two"]
    assert rows[1].prev_hash == rows[0].hash and rows[0].new == {"a": "1.50"}
    assert trail_verify().ok
