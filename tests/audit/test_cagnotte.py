"""Closing: the counted cagnotte, its variance, the attestation and the lock."""

from __future__ import annotations

from decimal import Decimal

import pytest

from audit.models import CagnotteCount, Flag
from audit.services import (
    cagnotte_attest,
    cagnotte_count,
    coup_correct_reviewed,
    flag_dismiss,
    session_commission,
    session_locked,
)
from casino.models import ChangeLog
from tables import services
from tables.errors import Conflict, Forbidden, Invalid

from .conftest import BANKER_WINS, stake

D = Decimal


@pytest.fixture
def closed(played, session, pitboss):
    services.session_close(session=session, user=pitboss)
    return session


def test_the_count_is_taken_after_closing(played, session, pitboss):
    with pytest.raises(Conflict) as err:
        cagnotte_count(session=session, counted=D("40"), user=pitboss)
    assert err.value.field == "session"


def test_a_matching_count_raises_nothing(closed, pitboss):
    computed = session_commission(closed)
    assert computed == D("15.00") + D("10.00") + D("5.00")  # 300, 200, 100 won
    count = cagnotte_count(session=closed, counted=D("30.00"), user=pitboss)
    assert (count.computed, count.variance) == (D("30.00"), D("0.00"))
    assert not Flag.objects.filter(kind="cagnotte").exists()
    row = ChangeLog.objects.get(action="audit.cagnotte.counted")
    assert row.new["variance"] == "0.00"


def test_a_variance_is_flagged_then_a_recount_resolves_it(closed, pitboss,
                                                          pitboss2):
    count = cagnotte_count(session=closed, counted=D("29.90"), user=pitboss)
    flag = Flag.objects.get(kind="cagnotte")
    assert (flag.code, flag.severity, flag.count) == ("cagnotte_variance",
                                                      "critical", count)
    assert "29.90" in flag.message and flag.author == pitboss
    with pytest.raises(Conflict):  # the box still differs: no dismissal
        flag_dismiss(flag=flag, user=pitboss2, reason="miscounted")
    with pytest.raises(Invalid) as err:
        cagnotte_count(session=closed, counted=D("30.00"), user=pitboss)
    assert err.value.field == "reason"
    cagnotte_count(session=closed, counted=D("30.00"), user=pitboss2,
                   reason="a 10-cent chip under the box")
    flag.refresh_from_db()
    assert (flag.status, flag.live) == ("resolved", False)
    assert CagnotteCount.objects.filter(session=closed).count() == 2


def test_refused_amounts(closed, pitboss):
    for bad in (D("-1"), D("1.005"), 1.5, "12", D("NaN")):
        with pytest.raises(Invalid) as err:
            cagnotte_count(session=closed, counted=bad, user=pitboss)
        assert err.value.field == "counted"
    assert not CagnotteCount.objects.exists()


def test_a_manager_attests_and_the_session_locks(closed, pitboss, manager,
                                                 pitboss2, played):
    first = cagnotte_count(session=closed, counted=D("29.90"), user=pitboss)
    # a second pit boss recounts (his own matching recount would leave the
    # variance flag open, four eyes: tests/insider/test_recount_four_eyes.py)
    second = cagnotte_count(session=closed, counted=D("30.00"), user=pitboss2,
                            reason="recount")
    with pytest.raises(Conflict):
        cagnotte_attest(count=first, user=manager)  # not the latest
    att = cagnotte_attest(count=second, user=manager)
    assert (att.statement, att.attested_by) == ("certifié exact", manager)
    assert session_locked(closed)
    with pytest.raises(Conflict):
        cagnotte_count(session=closed, counted=D("31"), user=pitboss, reason="x")
    with pytest.raises(Conflict):
        cagnotte_attest(count=second, user=manager)
    # locked: changes only through corrections, and the variance is re-checked
    coup_correct_reviewed(coup=played[0], user=pitboss2, reason="stake was 500",
                          punter=BANKER_WINS[0], banker=BANKER_WINS[1],
                          stakes=[stake("500")])
    flag = Flag.objects.get(kind="cagnotte")
    assert flag.is_open and "40.00" in flag.message  # 25 + 10 + 5
    assert flag.events.last().reason == "after correction of coup 1 of shoe 1"


def test_nobody_attests_his_own_count(closed, pitboss):
    count = cagnotte_count(session=closed, counted=D("30"), user=pitboss)
    with pytest.raises(Forbidden):
        cagnotte_attest(count=count, user=pitboss)
