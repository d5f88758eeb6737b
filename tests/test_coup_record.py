"""coup_record: the ledger, money, findings and the no-half-write guarantee."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from casino.models import ChangeLog
from tables import services
from tables.chemmy import CoupError
from tables.errors import Conflict, Forbidden, Invalid
from tables.models import BankerTurn, Coup, Finding, Shoe, Stake

D = Decimal
# Banker 1 of 9 holds 1,000. Punter 9H KD (9, natural) beats banker 5C 2S.
PUNTER_WINS = (["9H", "KD"], ["5C", "2S"])
# Punter 2H 3D = 5, stands; banker 8C TS natural 8 wins.
BANKER_WINS = (["2H", "3D"], ["8C", "TS"])
TIE = (["4H", "3D"], ["7C", "KS"])


def stake(amount, seat=None, standing=None, announcement="none"):
    return services.StakeInput(
        amount=D(amount), seat=seat, standing=standing, announcement=announcement
    )


def record(shoe, user, cards, stakes, **kw):
    punter, banker = cards
    return services.coup_record(
        shoe_id=shoe.pk, user=user, punter=punter, banker=banker, stakes=stakes, **kw
    )


def test_banker_win_takes_commission_and_carries_forward(shoe, turn, croupier):
    result = record(
        shoe, croupier, BANKER_WINS, [stake("300", seat=2), stake("200", 5)]
    )
    coup = result.coup
    assert result.created
    assert (coup.seq, coup.outcome, coup.covered, coup.garage) == (
        1,
        "banker",
        D("500.00"),
        D("500.00"),
    )
    assert coup.commission == D("25.00")
    assert coup.bank_before == D("1000.00")
    assert coup.bank_after == D("975.00")  # 500 + 500 - 25
    assert coup.punter_seat == 2  # highest covered stake holds the hand
    turn.refresh_from_db()
    assert turn.bank == D("975.00")
    assert turn.garage_total == D("500.00")
    assert turn.commission_total == D("25.00")
    assert turn.is_open
    payouts = list(Stake.objects.filter(coup=coup).values_list("payout", flat=True))
    assert payouts == [D("-300.00"), D("-200.00")]


def test_commission_rounds_half_up_to_ten_cents(shoe, turn, croupier):
    # 5 % of 101.00 = 5.05 -> 5.10 (ROUND_HALF_UP at the 0.10 unit)
    coup = record(shoe, croupier, BANKER_WINS, [stake("101.00", seat=3)]).coup
    assert coup.commission == D("5.10")
    assert coup.bank_after == D("196.90")


def test_next_coup_uses_carried_forward_bank(shoe, turn, croupier):
    record(
        shoe, croupier, BANKER_WINS, [stake("1000", seat=2, announcement="banco_solo")]
    )
    # bank is now 1000 + 1000 - 50 = 1950: a banco solo must be that amount
    with pytest.raises(CoupError) as err:
        record(
            shoe,
            croupier,
            BANKER_WINS,
            [stake("1000", seat=3, announcement="banco_solo")],
        )
    assert err.value.field.startswith("stakes[0]")
    coup = record(
        shoe, croupier, BANKER_WINS, [stake("1950", seat=3, announcement="banco_solo")]
    ).coup
    assert (coup.seq, coup.bank_before, coup.commission, coup.bank_after) == (
        2,
        D("1950.00"),
        D("97.50"),
        D("3802.50"),
    )


def test_punter_win_loses_the_bank_and_names_next_banker(shoe, turn, croupier):
    coup = record(shoe, croupier, PUNTER_WINS, [stake("400", seat=4)]).coup
    assert (coup.outcome, coup.bank_after, coup.commission) == (
        "punter",
        D("0"),
        D("0"),
    )
    assert coup.garage == D("600.00")
    assert coup.next_banker_seat == 2
    turn.refresh_from_db()
    assert not turn.is_open
    assert turn.end == BankerTurn.End.LOST
    assert turn.closing_amount == D("600.00")  # he keeps only his garage
    with pytest.raises(Conflict) as err:
        record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)])
    assert err.value.field == "turn"


def test_tie_moves_no_money(shoe, turn, croupier):
    coup = record(shoe, croupier, TIE, [stake("250", seat=2)]).coup
    assert (coup.outcome, coup.commission, coup.bank_after) == (
        "tie",
        D("0"),
        D("250.00"),
    )
    assert list(coup.stakes.values_list("payout", flat=True)) == [D("0.00")]


def test_false_draw_is_recorded_not_refused(shoe, turn, croupier):
    # banker 5 stands against the punter's third card 6: the tableau says draw
    coup = record(
        shoe, croupier, (["2H", "2D", "6C"], ["3S", "2C"]), [stake("100", seat=2)]
    ).coup
    finding = Finding.objects.get(coup=coup)
    assert (finding.code, finding.side, finding.severity) == (
        "false_draw",
        "banker",
        "warning",
    )
    assert finding.detail["required"] == "draw"
    assert finding.detail["actual"] == "stand"
    assert finding.tableau_version == "chemmy-standard-1"
    assert coup.finding_count == 1


def test_bank_mismatch_is_critical(shoe, turn, croupier):
    coup = record(
        shoe, croupier, BANKER_WINS, [stake("100", seat=2)], declared_bank=D("1200.00")
    ).coup
    f = Finding.objects.get(coup=coup)
    assert (f.code, f.severity) == ("bank_mismatch", "critical")
    ok = record(
        shoe, croupier, BANKER_WINS, [stake("100", seat=2)], declared_bank=D("195.00")
    ).coup  # 1000 - 900 garage + 100 - 5
    assert ok.finding_count == 0


def test_card_count_exceeded_and_deal_below_seven(db, session, croupier):
    small = services.shoe_open(session=session, user=croupier, decks=1, burned=40)
    services.banker_turn_open(session=session, user=croupier, seat=1, bank=D("1000"))
    first = record(small, croupier, (["4S", "4S"], ["9D", "QD"]), [stake("10", seat=2)])
    f = Finding.objects.get(coup=first.coup)
    assert (f.code, f.severity, f.detail["card"]) == (
        "card_count_exceeded",
        "critical",
        "4S",
    )
    # 52 - 40 - 4 = 8 left: fine; then 4 left: below seven
    second = record(
        small, croupier, (["2H", "5D"], ["3C", "4C"]), [stake("10", seat=2)]
    )
    assert second.coup.finding_count == 0
    third = record(small, croupier, (["6H", "KD"], ["7C", "2C"]), [stake("10", seat=2)])
    codes = set(third.coup.findings.values_list("code", flat=True))
    assert codes == {"deal_below_seven"}
    with pytest.raises(Conflict):  # 0 cards left: physically impossible
        record(small, croupier, (["8H", "9D"], ["JC", "QC"]), [stake("10", seat=2)])


def test_idempotent_retry_returns_the_same_coup(shoe, turn, croupier):
    args = (shoe, croupier, BANKER_WINS, [stake("300", seat=2)])
    first = record(*args, idempotency_key="tab-1-0001")
    again = record(*args, idempotency_key="tab-1-0001")
    assert first.created and not again.created
    assert again.coup.pk == first.coup.pk
    assert Coup.objects.count() == 1
    with pytest.raises(Conflict) as err:
        record(
            shoe,
            croupier,
            BANKER_WINS,
            [stake("301", seat=2)],
            idempotency_key="tab-1-0001",
        )
    assert err.value.field == "Idempotency-Key"
    assert Coup.objects.count() == 1


def test_lower_case_retry_is_the_same_body(shoe, turn, croupier):
    record(shoe, croupier, BANKER_WINS, [stake("300", seat=2)], idempotency_key="k")
    again = record(
        shoe,
        croupier,
        (["2h", "3d"], ["8c", "10s"]),
        [stake("300.00", 2)],
        idempotency_key="k",
    )
    assert not again.created


def test_expected_seq_stops_a_fork(shoe, turn, croupier):
    # two tablets at one table, both a step behind: the second must not fork
    record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)], expected_seq=1,
           device="tablet-a")
    with pytest.raises(Conflict) as err:
        record(shoe, croupier, TIE, [stake("100", seat=2)], expected_seq=1,
               device="tablet-b")
    assert err.value.field == "expected_seq"
    assert "moved on" in err.value.message
    assert Coup.objects.count() == 1


@pytest.mark.parametrize(
    "cards, stakes, field",
    [
        ((["9H"], ["5C", "2S"]), [stake("100", 2)], "punter"),
        ((["9H", "KD", "2C", "3C"], ["5C", "2S"]), [stake("100", 2)], "punter"),
        ((["9H", "ZZ"], ["5C", "2S"]), [stake("100", 2)], "punter[1]"),
        ((["9H", "KD"], ["5C", "2S"]), [stake("5", 2)], "stakes[0].amount"),
        ((["9H", "KD"], ["5C", "2S"]), [stake("100", 1)], "stakes[0].seat"),
    ],
)
def test_refusals_write_nothing(shoe, turn, croupier, cards, stakes, field):
    before = (Coup.objects.count(), Stake.objects.count(), ChangeLog.objects.count())
    with pytest.raises((CoupError, Invalid)) as err:
        record(shoe, croupier, cards, stakes)
    assert err.value.field == field
    after = (Coup.objects.count(), Stake.objects.count(), ChangeLog.objects.count())
    assert after == before
    shoe.refresh_from_db()
    assert (shoe.next_seq, shoe.dealt) == (1, 0)


def test_closed_shoe_refuses(shoe, turn, croupier):
    services.shoe_close(shoe=shoe, user=croupier)
    with pytest.raises(Conflict) as err:
        record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)])
    assert err.value.field == "shoe"


def test_change_log_row_for_each_coup(shoe, turn, croupier):
    coup = record(
        shoe, croupier, BANKER_WINS, [stake("100", seat=2)], device="tablet-7"
    ).coup
    row = ChangeLog.objects.get(action="tables.coup.recorded")
    assert (row.user, row.device, row.object_id) == (croupier, "tablet-7", str(coup.pk))
    assert row.new["commission"] == "5.00"
    assert row.new["banker"] == ["8C", "TS"]


def test_shoe_counters_follow_the_coups(shoe, turn, croupier):
    record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)])
    record(shoe, croupier, (["2H", "2D", "6C"], ["3S", "2C", "4H"]), [stake("100", 2)])
    shoe = Shoe.objects.get(pk=shoe.pk)
    assert (shoe.next_seq, shoe.dealt) == (3, 10)
    assert shoe.cards_left == 312 - 5 - 10
    assert shoe.card_counts["2C"] == 1 and shoe.card_counts["2H"] == 2


def test_suivi_only_for_the_banco_who_lost(shoe, turn, croupier):
    with pytest.raises(CoupError):
        record(shoe, croupier, BANKER_WINS, [stake("1000", 3, announcement="suivi")])
    record(shoe, croupier, BANKER_WINS, [stake("1000", 3, announcement="banco_solo")])
    coup = record(
        shoe,
        croupier,
        TIE,
        [
            stake("1950", 3, announcement="suivi"),
            stake("1950", 2, announcement="banco_solo"),
        ],
    ).coup
    assert coup.punter_seat == 3  # suivi has priority over a banco solo


def test_gaming_day_follows_the_cut_off(shoe, turn, croupier, monkeypatch):
    paris = ZoneInfo("Europe/Paris")
    late = datetime(2026, 3, 14, 3, 30, tzinfo=paris)  # before the 06:00 cut-off
    monkeypatch.setattr("django.utils.timezone.now", lambda: late)
    coup = record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)]).coup
    assert str(coup.gaming_day) == "2026-03-13"
    assert (
        services.gaming_day_for(datetime(2026, 3, 14, 6, 0, tzinfo=paris), 6).day == 14
    )


def test_coups_are_append_only(shoe, turn, croupier):
    from casino.models import AppendOnlyError

    coup = record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)]).coup
    coup.commission = D("0")
    with pytest.raises(AppendOnlyError):
        coup.save()
    with pytest.raises(AppendOnlyError):
        Coup.objects.filter(pk=coup.pk).update(commission=D("0"))
    with pytest.raises(AppendOnlyError):
        coup.delete()


def test_only_the_sessions_croupier_records(shoe, turn, croupier2):
    with pytest.raises(Forbidden) as err:
        record(shoe, croupier2, BANKER_WINS, [stake("100", seat=2)])
    assert err.value.field == "session"
    assert Coup.objects.count() == 0


def test_a_replay_after_the_shoe_closed_is_still_the_same_coup(shoe, turn, croupier):
    first = record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)],
                   idempotency_key="late")
    services.shoe_close(shoe=shoe, user=croupier)
    again = record(shoe, croupier, BANKER_WINS, [stake("100", seat=2)],
                   idempotency_key="late")
    assert (again.created, again.coup.pk) == (False, first.coup.pk)
