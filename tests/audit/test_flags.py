"""Flags from findings, decisions with reasons, four eyes, corrections."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit.models import Flag, FlagEvent
from audit.services import (
    coup_correct_reviewed,
    flag_confirm,
    flag_dismiss,
    flags_sync,
)
from casino.models import ChangeLog
from tables import services
from tables.errors import Conflict, Forbidden, Invalid

from .conftest import BANKER_WINS, FALSE_DRAW, PUNTER_WINS, TIE, stake

D = Decimal
FIXED = (["2H", "2D", "6C"], ["3S", "2C", "4H"])  # the banker drew after all


def the_flag(**filters) -> Flag:
    flags_sync()
    return Flag.objects.get(**filters)


def test_a_finding_raises_one_flag_and_sync_is_idempotent(played, croupier):
    # raised with its coup (audit/services/flag_raise.py): nothing left to sync
    assert flags_sync() == 0
    flag = Flag.objects.get()
    fd = played[1]
    assert (flag.code, flag.severity, flag.side, flag.status) == (
        "false_draw", "warning", "banker", "open",
    )
    assert (flag.coup, flag.finding, flag.seq, flag.croupier) == (
        fd, fd.findings.get(), 2, croupier,
    )
    assert flag.ident == f"f:{fd.shoe_id}:2:false_draw:banker:"
    assert list(flag.events.values_list("action", flat=True)) == ["raised"]


def test_confirm_records_the_reason_and_the_house_sanction(played, pitboss):
    flag = the_flag()
    with pytest.raises(Invalid) as err:
        flag_confirm(flag=flag, user=pitboss, reason="  ")
    assert err.value.field == "reason"
    with pytest.raises(Invalid) as err:  # French rules: no fine by default
        flag_confirm(flag=flag, user=pitboss, reason="seen", fine_amount=D("50"))
    assert err.value.field == "fine_amount"
    flag = flag_confirm(flag=flag, user=pitboss, reason="seen on camera 3",
                        device="desk")
    assert (flag.status, flag.decided_by) == ("confirmed", pitboss)
    event = flag.events.get(action="confirmed")
    assert event.detail == {"sanction": "none", "player_seat": 1}
    row = ChangeLog.objects.get(action="audit.flag.confirmed")
    assert (row.reason, row.user, row.device) == ("seen on camera 3", pitboss, "desk")
    with pytest.raises(Conflict):
        flag_confirm(flag=flag, user=pitboss, reason="again")


def test_a_fine_where_the_house_rules_allow_it(table, manager, deal, pitboss,
                                               request):
    # in force from the next session: the change comes before it opens
    services.house_rules_change(table=table, user=manager, reason="club rules",
                                false_draw_sanction="fine")
    request.getfixturevalue("turn")
    shoe = request.getfixturevalue("shoe")
    deal(shoe, FALSE_DRAW)
    flag = the_flag()
    with pytest.raises(Invalid) as err:
        flag_confirm(flag=flag, user=pitboss, reason="seen")
    assert err.value.field == "fine_amount"
    flag_confirm(flag=flag, user=pitboss, reason="seen", fine_amount=D("50.00"))
    assert flag.events.get(action="confirmed").detail == {
        "sanction": "fine", "player_seat": 1, "fine_amount": "50.00",
    }


def test_four_eyes_nobody_reviews_his_own_entry(shoe, turn, deal, pitboss,
                                                pitboss2):
    deal(shoe, FALSE_DRAW, user=pitboss)  # the pit boss dealt this one himself
    flag = the_flag()
    with pytest.raises(Forbidden):
        flag_confirm(flag=flag, user=pitboss, reason="it happened")
    with pytest.raises(Forbidden):
        flag_dismiss(flag=flag, user=pitboss, reason="mis-key")
    flag_confirm(flag=flag, user=pitboss2, reason="it happened")


def test_dismiss_needs_the_record_corrected(played, pitboss, pitboss2):
    flag = the_flag()
    with pytest.raises(Conflict) as err:
        flag_dismiss(flag=flag, user=pitboss, reason="mis-key")
    assert err.value.field == "correction"
    assert Flag.objects.get().status == "open"
    flag = flag_dismiss(
        flag=flag, user=pitboss, reason="mis-keyed 4H",
        correction={"punter": FIXED[0], "banker": FIXED[1],
                    "stakes": [stake("200", seat=3)]},
    )
    # Four eyes: his correction closes nothing by itself
    assert (flag.status, flag.live, flag.to_review) == ("open", False, True)
    assert flag.coup.revision == 2 and flag.coup.finding_count == 0
    actions = list(flag.events.values_list("action", flat=True))
    assert actions == ["raised", "resolved"]
    event = flag.events.get(action="resolved")
    assert (event.user, event.reason) == (pitboss, "mis-keyed 4H")
    assert event.detail == {"revision": 2, "to_review": True}
    with pytest.raises(Forbidden):
        flag_dismiss(flag=flag, user=pitboss, reason="my correction was right")
    flag = flag_dismiss(flag=flag, user=pitboss2, reason="4H was on camera")
    assert (flag.status, flag.decided_by, flag.to_review) == (
        "dismissed", pitboss2, False)


def test_dismiss_with_a_correction_that_still_shows_it_writes_nothing(
    played, pitboss
):
    flag = the_flag()
    with pytest.raises(Conflict):
        flag_dismiss(
            flag=flag, user=pitboss, reason="mis-key",
            correction={"punter": FALSE_DRAW[0], "banker": FALSE_DRAW[1],
                        "stakes": [stake("300", seat=3)]},
        )
    assert not played[1].shoe.coups.filter(revision=2).exists()
    assert Flag.objects.get().status == "open"


def test_a_correction_moves_or_resolves_the_flags(played, pitboss):
    flag = the_flag()
    # a stake correction keeps the false draw: the flag follows revision 2
    result = coup_correct_reviewed(
        coup=played[1], user=pitboss, reason="stake was 250",
        punter=FALSE_DRAW[0], banker=FALSE_DRAW[1], stakes=[stake("250", seat=3)],
        flag=flag,
    )
    flag.refresh_from_db()
    assert (flag.status, flag.live, flag.coup) == ("open", True, result.revision)
    assert flag.finding.coup == result.revision
    # the cards corrected: the false draw is gone; resolved by the correction,
    # to review: the flag stays open for another pit boss (four eyes)
    coup_correct_reviewed(
        coup=result.revision, user=pitboss, reason="4H was dealt",
        punter=FIXED[0], banker=FIXED[1], stakes=[stake("250", seat=3)],
    )
    flag.refresh_from_db()
    assert (flag.status, flag.live, flag.decided_by) == ("open", False, None)
    assert flag.to_review
    assert list(flag.events.values_list("action", flat=True)) == [
        "raised", "moved", "corrected", "resolved",
    ]
    assert flag.events.get(action="resolved").detail["to_review"] is True
    assert Flag.objects.count() == 1
    assert flags_sync() == 0  # nothing more to do: it waits for a decision


def test_a_card_count_flag_per_card(shoe, turn, deal):
    for _ in range(3):  # 6 decks: the seventh ace of spades is one too many
        deal(shoe, (["AS", "AS"], ["8C", "TS"]))
    deal(shoe, (["AS", "2H"], ["8C", "TD"]))
    flags_sync()
    flag = Flag.objects.get(code="card_count_exceeded")
    assert flag.ident.endswith("card_count_exceeded:-:AS")
    assert flag.severity == "critical"


def test_a_correction_that_changes_who_won_raises_a_structure_flag(
    played, pitboss, pitboss2
):
    coup_correct_reviewed(
        coup=played[0], user=pitboss, reason="the punter had a 9",
        punter=PUNTER_WINS[0], banker=PUNTER_WINS[1], stakes=[stake("300")],
    )
    flag = Flag.objects.get(code="turn_structure")
    assert (flag.kind, flag.severity, flag.author) == ("structure", "critical",
                                                       pitboss)
    assert "went on" in flag.message
    with pytest.raises(Forbidden):  # four eyes on the corrector's own work
        flag_confirm(flag=flag, user=pitboss, reason="checked")
    flag_confirm(flag=flag, user=pitboss2, reason="checked with the banker")
    # a structure issue may be dismissed without a correction, with a reason
    assert FlagEvent.objects.filter(flag=flag, action="confirmed").exists()


def test_tie_and_nothing_else_raises_nothing(shoe, turn, deal):
    deal(shoe, TIE)
    deal(shoe, BANKER_WINS)
    assert flags_sync() == 0 and not Flag.objects.exists()
