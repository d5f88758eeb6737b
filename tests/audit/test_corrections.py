"""Corrections: a new revision, the later coups re-settled, money shown first."""

from __future__ import annotations

from decimal import Decimal

import pytest

from casino.models import ChangeLog
from tables import services
from tables.errors import Conflict, Forbidden, Invalid
from tables.models import BankerTurn, Coup, Shoe
from tables.rollups import (
    current_coups,
    rollup_recompute,
    rollup_snapshot,
    rollups_hold,
)
from tables.selectors import turn_ledger_verify

from .conftest import BANKER_WINS, PUNTER_WINS, TIE, stake

D = Decimal


def correct(coup, user, cards, stakes, reason="mis-keyed at the table", **kw):
    punter, banker = cards
    return services.coup_correct(
        coup=coup, user=user, reason=reason, punter=punter, banker=banker,
        stakes=stakes, **kw,
    )


def current(shoe):
    return list(current_coups().filter(shoe=shoe).order_by("seq"))


def assert_books_balance(session):
    """The running state and the rollups follow the current revisions."""
    for turn in BankerTurn.objects.filter(session=session):
        check = turn_ledger_verify(turn)
        assert check.ok, check.problems
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells


def test_a_mis_keyed_card_is_corrected_and_the_original_stays(played, pitboss):
    fd = played[1]
    assert fd.findings.get().code == "false_draw"
    result = correct(fd, pitboss, (["2H", "2D", "6C"], ["3S", "2C", "4H"]),
                     [stake("200", seat=3)])
    new = result.revision
    assert (new.seq, new.revision, new.banker_total, new.finding_count) == (2, 2, 9, 0)
    assert (new.entered_by, new.corrected_by) == (fd.entered_by, pitboss)
    assert new.correction_reason == "mis-keyed at the table"
    assert new.created_at == fd.created_at  # when it was dealt
    # the original is still there, unchanged
    again = Coup.objects.get(pk=fd.pk)
    assert again.banker_cards == ["3S", "2C"] and again.findings.count() == 1
    # one more card dealt: every later coup of the shoe moves one card
    later = current(fd.shoe)[2:]
    assert [c.revision for c in later] == [2, 2]
    assert [c.cards_left_before for c in later] == [
        played[2].cards_left_before - 1, played[3].cards_left_before - 1,
    ]
    assert all(
        c.correction_reason == "re-settled after correction of coup 2 of shoe 1"
        for c in later
    )
    body = result.plan.to_dict()  # only the count of cards left moved for 3, 4
    assert [c["material"] for c in body["coups"]] == [True, False, False]
    shoe = Shoe.objects.get(pk=fd.shoe_id)
    assert shoe.dealt == sum(len(c.punter_cards) + len(c.banker_cards)
                             for c in current(shoe))
    assert shoe.card_counts["4H"] == 1
    assert_books_balance(fd.shoe.session)
    actions = list(ChangeLog.objects.filter(action__startswith="tables.coup.c")
                   .values_list("action", flat=True))
    assert actions == ["tables.coup.corrected", "tables.coup.correction_applied"]
    assert ChangeLog.objects.filter(action="tables.coup.resettled").count() == 2


def test_a_stake_correction_re_settles_the_bank_carried_forward(played, pitboss):
    first = played[0]  # bank 1,000, 300 covered: commission 15, bank 585
    plan = services.coup_correct_preview(
        coup=first, punter=BANKER_WINS[0], banker=BANKER_WINS[1],
        stakes=[stake("500")],
    )
    body = plan.to_dict()
    assert body["commission_delta"] == "10.00"  # 25 instead of 15
    assert body["payout_delta_by_seat"] == {"seat 2": "-200.00"}
    assert [c["seq"] for c in body["coups"]] == [1, 2]  # coup 2's bank moved
    c2 = body["coups"][1]
    assert (c2["old"]["bank_before"], c2["new"]["bank_before"]) == ("585.00", "975.00")
    assert Coup.objects.count() == 4  # a preview writes nothing
    result = correct(first, pitboss, BANKER_WINS, [stake("500")],
                     plan_digest=body["digest"])
    assert [r.seq for r in result.revisions] == [1, 2]
    turn = BankerTurn.objects.get(pk=first.turn_id)
    assert turn.commission_total == sum(c.commission for c in current(first.shoe))
    assert_books_balance(first.shoe.session)


def test_the_preview_must_still_hold_when_confirmed(played, pitboss, deal, shoe):
    plan = services.coup_correct_preview(
        coup=played[0], punter=BANKER_WINS[0], banker=BANKER_WINS[1],
        stakes=[stake("500")],
    )
    deal(shoe, BANKER_WINS, [stake("100")])  # the table moved on
    with pytest.raises(Conflict) as err:
        correct(played[0], pitboss, BANKER_WINS, [stake("500")],
                plan_digest=plan.digest)
    assert err.value.field == "plan_digest"
    assert not Coup.objects.filter(revision=2).exists()


def test_a_correction_that_makes_the_punter_win_mid_turn(played, pitboss):
    """Who won changes: the bank was lost at coup 1, yet the banker dealt on.
    The recorded turn stands; later coups keep the banks played at the table;
    the plan names the inconsistency."""
    plan = services.coup_correct_preview(
        coup=played[0], punter=PUNTER_WINS[0], banker=PUNTER_WINS[1],
        stakes=[stake("300")],
    )
    kinds = [i["kind"] for i in plan.issues]
    assert kinds == ["bank_lost_mid_turn"]
    result = correct(played[0], pitboss, PUNTER_WINS, [stake("300")],
                     plan_digest=plan.digest)
    first = result.revision
    assert (first.outcome, first.bank_after, first.next_banker_seat) == (
        "punter", D("0.00"), 2,
    )
    # coup 2 is settled on the 585 the table played with
    assert current(played[0].shoe)[1].bank_before == D("585.00")
    check = turn_ledger_verify(BankerTurn.objects.get(pk=first.turn_id))
    assert not check.ok  # the ledger says so too: a bank after a lost bank
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells


def test_a_correction_that_keeps_the_bank_of_a_lost_turn(shoe, turn, deal, pitboss,
                                                         croupier, session):
    lost = deal(shoe, PUNTER_WINS, [stake("1000", announcement="banco_solo")])
    assert BankerTurn.objects.get(pk=turn.pk).end == "lost"
    nxt = services.banker_turn_open(session=session, user=croupier, seat=2,
                                    bank=D("500"))
    deal(shoe, TIE, [stake("100", seat=3)])
    plan = services.coup_correct_preview(
        coup=lost, punter=BANKER_WINS[0], banker=BANKER_WINS[1],
        stakes=[stake("1000", announcement="banco_solo")],
    )
    assert [i["kind"] for i in plan.issues] == ["bank_kept_turn_ended"]
    correct(lost, pitboss, BANKER_WINS,
            [stake("1000", announcement="banco_solo")])
    t = BankerTurn.objects.get(pk=turn.pk)
    # banker won 1,000 less 50 commission; he left with bank + garage
    assert (t.bank, t.commission_total, t.closing_amount) == (
        D("1950.00"), D("50.00"), D("1950.00"),
    )
    assert t.end == "lost"  # how it ended at the table stays recorded
    assert BankerTurn.objects.get(pk=nxt.pk).opening_bank == D("500.00")
    assert_books_balance(session)


def test_a_passed_bank_follows_the_correction(shoe, session, croupier, deal,
                                              pitboss):
    t1 = services.banker_turn_open(session=session, user=croupier, seat=1,
                                   bank=D("1000"))
    c1 = deal(shoe, BANKER_WINS, [stake("1000", announcement="banco_solo")])
    services.banker_turn_pass(turn=t1, user=croupier)  # bank 1,950 offered
    t2 = services.banker_turn_open(session=session, user=croupier, seat=2,
                                   bank=D("1950"))
    assert t2.took_passed_bank
    deal(shoe, TIE, [stake("100", seat=3)])
    # the stake was really 800 (a plain stake): the passed bank was 1,560
    correct(c1, pitboss, BANKER_WINS, [stake("800")])
    t2 = BankerTurn.objects.get(pk=t2.pk)
    # a tie carries the covered 100 forward; the garage is withdrawn
    assert (t2.opening_bank, t2.bank) == (D("1560.00"), D("100.00"))
    assert current(shoe)[1].bank_before == D("1560.00")
    assert BankerTurn.objects.get(pk=t1.pk).closing_amount == D("1760.00")
    assert_books_balance(session)


def test_an_announcement_that_no_longer_fits_is_covered_plainly(
    shoe, turn, deal, pitboss
):
    c1 = deal(shoe, BANKER_WINS, [stake("300")])  # bank 585 after
    deal(shoe, PUNTER_WINS, [stake("585", announcement="banco_solo", seat=5)])
    plan = services.coup_correct_preview(
        coup=c1, punter=BANKER_WINS[0], banker=BANKER_WINS[1], stakes=[stake("200")],
    )
    assert [i["kind"] for i in plan.issues] == ["announcement"]
    result = correct(c1, pitboss, BANKER_WINS, [stake("200")])
    second = result.revisions[1]
    # 2 x 200 - 10: the banco solo of 585 meets a bank of 390
    assert (second.bank_before, second.covered, second.garage) == (
        D("390.00"), D("390.00"), D("0.00"),
    )


def test_refusals(played, pitboss, croupier):
    with pytest.raises(Invalid) as err:
        correct(played[0], pitboss, BANKER_WINS, [stake("300")], reason=" ")
    assert err.value.field == "reason"
    with pytest.raises(Invalid) as err:
        correct(played[0], pitboss, BANKER_WINS, [stake("300")])
    assert "changes nothing" in err.value.message
    with pytest.raises(Forbidden):  # four eyes: not his own entry
        correct(played[0], croupier, BANKER_WINS, [stake("500")])
    correct(played[0], pitboss, BANKER_WINS, [stake("500")])
    with pytest.raises(Conflict) as err:  # revision 1 is history now
        correct(played[0], pitboss, BANKER_WINS, [stake("400")])
    assert err.value.field == "coup"
    from tables.chemmy import CoupError

    latest = current(played[0].shoe)[0]
    with pytest.raises(CoupError) as err:
        correct(latest, pitboss, (["2H", "ZZ"], ["8C", "TS"]), [stake("500")])
    assert err.value.field == "punter[1]"
    assert Coup.objects.filter(revision=3).count() == 0


def test_corrections_of_a_simulated_night_keep_the_books(croupier, pitboss):
    """Correct several coups of a simulated shoe (stakes, cards); turns,
    shoes and rollups must equal a re-computation from the current revisions."""
    import random

    from tables.simulation import simulate

    report = simulate(user=croupier, tables=1, shoes=1, seed=11,
                      false_draw_rate=0.05)
    session = services.session_open  # noqa: F841 - keep the name for clarity
    rng = random.Random(3)
    shoe = Shoe.objects.get(session__table_id=report.table_ids[0])
    for _ in range(4):
        coups = current(shoe)
        coup = rng.choice(coups)
        stakes = [
            stake(s.amount, seat=s.seat, standing=s.standing or None)
            for s in coup.stakes.all()
        ]
        first = stakes[0]
        stakes[0] = stake(first.amount + D("10"), seat=first.seat,
                          standing=first.standing)
        try:
            correct(coup, pitboss, (coup.punter_cards, coup.banker_cards), stakes)
        except Exception as exc:  # a stake above a banco solo bank: refused
            assert getattr(exc, "field", "").startswith("stakes"), exc
    assert rollup_snapshot() == rollup_recompute()
    assert rollups_hold() == []  # every grain, not only the cells
    for turn in BankerTurn.objects.filter(session=shoe.session):
        check = turn_ledger_verify(turn)
        lost_mid = [p for p in check.problems if "bank before" in p]
        assert check.ok or lost_mid, check.problems


def test_the_open_turn_ends_when_its_last_coup_now_loses(played, pitboss):
    last = played[3]
    plan = services.coup_correct_preview(
        coup=last, punter=PUNTER_WINS[0], banker=PUNTER_WINS[1],
        stakes=[stake("100", seat=4)],
    )
    assert [i["kind"] for i in plan.issues] == ["turn_closed"]
    correct(last, pitboss, PUNTER_WINS, [stake("100", seat=4)])
    turn = BankerTurn.objects.get(pk=last.turn_id)
    assert (turn.is_open, turn.end, turn.bank) == (False, "lost", D("0.00"))
    assert turn.closing_amount == turn.garage_total
    assert_books_balance(last.shoe.session)
