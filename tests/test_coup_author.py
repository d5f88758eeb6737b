"""A coup keeps the croupier who entered it (issue 11, finding 12).

A tablet queues coups while the Wi-Fi is down; after a Lock and a relief
croupier's unlock, the queue must not land under the relief. The server holds
that too: a coup that says another croupier entered it is refused from anyone
but a pit boss, who accepts it on the croupier's behalf with a reason.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from casino.models import ChangeLog
from tables.models import Coup, DailyRollup

BODY = {
    "punter": ["2H", "3D"],
    "banker": ["8C", "TS"],
    "stakes": [{"seat": 2, "amount": "300.00"}],
    "expected_seq": 1,
}
REASON = "croupier1 relieved before the Wi-Fi came back"


def written() -> tuple[int, int]:
    return Coup.objects.count(), ChangeLog.objects.count()


@pytest.fixture
def relieved(session, shoe, turn, croupier, croupier2):
    """croupier1 ran the table and was relieved by croupier2 (logged)."""
    from tables.services import session_croupier_change

    session_croupier_change(
        session=session, croupier=croupier2, user=croupier2, reason="relief"
    )
    return shoe


def record(client, shoe, body, key="k-1"):
    return client.post(
        f"/api/v1/shoes/{shoe.pk}/coups/",
        body,
        format="json",
        headers={"Idempotency-Key": key},
    )


def accept(client, shoe, body, key="k-1"):
    return client.post(
        f"/api/v1/shoes/{shoe.pk}/coups/accept/",
        body,
        format="json",
        headers={"Idempotency-Key": key},
    )


def test_a_relief_cannot_send_a_coup_another_croupier_entered(
    as_user, relieved, croupier, croupier2
):
    before = written()
    r = record(as_user(croupier2), relieved, {**BODY, "entered_by": croupier.pk})
    assert r.status_code == 403, r.json()
    assert "entered_by" in r.json()
    assert "croupier1" in r.json()["detail"]
    assert written() == before  # nothing written, not even a log row
    relieved.refresh_from_db()
    assert relieved.next_seq == 1


def test_his_own_coup_is_his(as_user, relieved, croupier2):
    r = record(
        as_user(croupier2),
        relieved,
        {**BODY, "entered_by": croupier2.pk, "entered_at": "2026-01-05T21:14:03Z"},
    )
    assert r.status_code == 201, r.json()
    coup = Coup.objects.get()
    assert coup.entered_by == croupier2 and coup.accepted_by is None
    assert r.json()["entered_by"] == "croupier2" and r.json()["accepted_by"] is None
    row = ChangeLog.objects.get(action="tables.coup.recorded")
    entered_at = datetime.fromisoformat(row.new["entered_at"])
    assert entered_at == datetime(2026, 1, 5, 21, 14, 3, tzinfo=UTC)


def test_a_pit_boss_accepts_it_on_the_croupiers_behalf(
    as_user, relieved, croupier, pitboss
):
    body = {
        **BODY,
        "entered_by": croupier.pk,
        "reason": REASON,
        "entered_at": "2026-01-05T21:14:03+01:00",
    }
    r = accept(as_user(pitboss), relieved, body)
    assert r.status_code == 201, r.json()
    coup = Coup.objects.get()
    assert coup.entered_by == croupier  # the croupier's coup, still
    assert coup.accepted_by == pitboss and coup.accepted_reason == REASON
    assert r.json()["entered_by"] == "croupier1"
    assert r.json()["accepted_by"] == "pitboss1"
    assert r.json()["accepted_reason"] == REASON
    row = ChangeLog.objects.get(action="tables.coup.recorded")
    assert row.user == pitboss and row.reason == REASON
    assert row.object_id == str(coup.pk)
    assert row.new["entered_by"] == croupier.pk
    assert row.new["accepted_by"] == pitboss.pk
    # The day's figures are the croupier's.
    assert DailyRollup.objects.get().croupier_id == croupier.pk
    # The same key again (an answer lost): the same coup, nothing more.
    again = accept(as_user(pitboss), relieved, body)
    assert again.status_code == 200 and again.json()["id"] == coup.pk
    assert Coup.objects.count() == 1


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_acceptance_needs_a_reason(as_user, relieved, croupier, pitboss, reason):
    body = {**BODY, "entered_by": croupier.pk}
    if reason is not None:
        body["reason"] = reason
    before = written()
    r = accept(as_user(pitboss), relieved, body)
    assert r.status_code == 400, r.json()
    assert "reason" in r.json() and r.json()["detail"].startswith("reason")
    assert written() == before


def test_acceptance_is_a_pit_boss_s_for_a_croupier_s_coup(
    as_user, relieved, croupier, croupier2, pitboss, manager
):
    before = written()
    body = {**BODY, "entered_by": croupier.pk, "reason": REASON}
    assert accept(as_user(croupier2), relieved, body).status_code == 403
    assert accept(as_user(manager), relieved, body).status_code == 403
    r = accept(as_user(pitboss), relieved, {**body, "entered_by": manager.pk})
    assert r.status_code == 400 and "entered_by" in r.json()
    r = accept(as_user(pitboss), relieved, {**body, "entered_by": pitboss.pk})
    assert r.status_code == 403 and "entered_by" in r.json()
    r = accept(as_user(pitboss), relieved, {**body, "entered_by": 987654321})
    assert r.status_code == 400 and "entered_by" in r.json()
    assert written() == before


def test_the_services_hold_it_too(relieved, croupier, croupier2, pitboss):
    from tables.errors import Forbidden, Invalid
    from tables.services import StakeInput, coup_accept, coup_record

    args = {
        "shoe_id": relieved.pk,
        "punter": ["2H", "3D"],
        "banker": ["8C", "TS"],
        "stakes": [StakeInput(amount=300, seat=2)],
    }
    with pytest.raises(Forbidden) as err:
        coup_record(user=croupier2, entered_by=croupier.pk, **args)
    assert err.value.field == "entered_by"
    with pytest.raises(Invalid) as err:
        coup_accept(user=pitboss, entered_by=croupier.pk, reason=" ", **args)
    assert err.value.field == "reason"
    with pytest.raises(Forbidden):
        coup_accept(user=croupier2, entered_by=croupier.pk, reason=REASON, **args)
    assert Coup.objects.count() == 0


# ---- the tablet: the pit boss signs the acceptance on the relief's tablet ----


def queued(shoe, croupier, seq, key, punter=("2H", "3D")):
    return {
        "shoe": shoe.pk,
        "key": key,
        "body": {
            **BODY,
            "punter": list(punter),
            "expected_seq": seq,
            "entered_by": croupier.pk,
            "entered_at": "2026-01-05T21:14:03.120Z",
        },
    }


@pytest.fixture
def relief_tablet(client, relieved, croupier2):
    client.force_login(croupier2)
    return client


def tablet_accept(client, body):
    return client.post("/tablet/accept/", body, content_type="application/json")


def test_the_tablet_stores_the_held_coups_under_their_croupier(
    relief_tablet, relieved, croupier, pitboss
):
    r = tablet_accept(
        relief_tablet,
        {
            "username": "pitboss1",
            "password": "pw-pitboss1",
            "reason": REASON,
            "entered_by": croupier.pk,
            "coups": [
                queued(relieved, croupier, 1, "q-1"),
                queued(relieved, croupier, 2, "q-2", punter=("9H", "KD")),
            ],
        },
    )
    assert r.status_code == 200, r.json()
    assert r.json()["accepted_by"] == "pitboss1"
    assert [s["key"] for s in r.json()["stored"]] == ["q-1", "q-2"]
    coups = list(Coup.objects.order_by("seq"))
    assert [c.seq for c in coups] == [1, 2]
    assert {(c.entered_by_id, c.accepted_by_id, c.accepted_reason) for c in coups} == {
        (croupier.pk, pitboss.pk, REASON)
    }
    rows = ChangeLog.objects.filter(action="tables.coup.recorded")
    assert {(row.user_id, row.reason) for row in rows} == {(pitboss.pk, REASON)}


def test_the_tablet_refuses_a_wrong_password_or_a_croupier(
    relief_tablet, relieved, croupier, croupier2
):
    before = written()
    body = {
        "username": "pitboss1",
        "password": "wrong",
        "reason": REASON,
        "entered_by": croupier.pk,
        "coups": [queued(relieved, croupier, 1, "q")],
    }
    r = tablet_accept(relief_tablet, body)
    assert r.status_code == 400 and "password" in r.json()
    r = tablet_accept(
        relief_tablet, {**body, "username": "croupier2", "password": "pw-croupier2"}
    )
    assert r.status_code == 403 and "username" in r.json()
    r = tablet_accept(
        relief_tablet, {**body, "username": "croupier1", "password": "pw-croupier1"}
    )
    assert r.status_code == 403 and "your own coups" in r.json()["detail"]
    r = tablet_accept(relief_tablet, {**body, "password": "pw-pitboss1", "reason": ""})
    assert r.status_code == 400 and "reason" in r.json()
    assert written() == before


def test_the_tablet_accepts_all_the_coups_or_none(
    relief_tablet, relieved, croupier, pitboss
):
    before = written()
    r = tablet_accept(
        relief_tablet,
        {
            "username": "pitboss1",
            "password": "pw-pitboss1",
            "reason": REASON,
            "entered_by": croupier.pk,
            "coups": [
                queued(relieved, croupier, 1, "q-1"),
                queued(relieved, croupier, 5, "q-2"),
            ],  # the shoe is at 2
        },
    )
    assert r.status_code == 409, r.json()
    assert "coups[1].expected_seq" in r.json()
    assert r.json()["index"] == 1 and r.json()["key"] == "q-2"
    assert written() == before  # the first coup is not left behind alone


def test_a_signed_out_tablet_cannot_ask(client, relieved, croupier):
    r = tablet_accept(
        client,
        {
            "username": "pitboss1",
            "password": "pw-pitboss1",
            "reason": REASON,
            "entered_by": croupier.pk,
            "coups": [queued(relieved, croupier, 1, "q")],
        },
    )
    assert r.status_code in (401, 403)
    assert Coup.objects.count() == 0


def test_the_record_keeps_the_acceptance(client, relieved, croupier, pitboss):
    """The floor's coup page says who accepted it and why; a correction's
    revision keeps it (the croupier's coup, the same acceptance)."""
    from django.contrib.auth.models import Group

    from tables.services import StakeInput, coup_accept, coup_correct
    from tests.conftest import make_user

    coup = coup_accept(
        shoe_id=relieved.pk,
        user=pitboss,
        entered_by=croupier.pk,
        reason=REASON,
        punter=["2H", "3D"],
        banker=["8C", "TS"],
        stakes=[StakeInput(amount=300, seat=2)],
    ).coup
    client.force_login(pitboss)
    page = client.get(f"/floor/coups/{coup.pk}/").content.decode()
    assert "accepted on the croupier's behalf by" in page
    assert "<strong>pitboss1</strong>" in page and REASON in page

    other = make_user("pitboss2", None)
    other.groups.add(Group.objects.get(name="pitboss"))
    revision = coup_correct(
        coup=coup,
        user=other,
        reason="the banker's second card was a 9",
        punter=["2H", "3D"],
        banker=["8C", "9S"],
        stakes=[StakeInput(amount=300, seat=2)],
    ).revision
    assert revision.revision == 2 and revision.entered_by == croupier
    assert revision.accepted_by == pitboss and revision.accepted_reason == REASON


@pytest.mark.parametrize("at", [
    "0001-01-01T00:00:00Z", "1999-12-31T23:59:59Z",
    "9999-12-31T23:59:59Z", "in an hour",
])
def test_a_clock_out_of_bounds_is_refused_naming_entered_at(
    as_user, relieved, croupier2, pitboss, croupier, at
):
    """entered_at: from 2000 to five minutes ahead of the server's clock
    (casino/bounds.py), on the croupier's path and the pit boss's."""
    from datetime import timedelta

    from django.utils import timezone

    if at == "in an hour":
        at = (timezone.now() + timedelta(hours=1)).isoformat()
    before = written()
    r = record(as_user(croupier2), relieved,
               {**BODY, "entered_by": croupier2.pk, "entered_at": at})
    assert r.status_code == 400 and "entered_at" in r.json(), r.json()
    r = accept(as_user(pitboss), relieved, {
        **BODY, "entered_by": croupier.pk, "reason": REASON, "entered_at": at})
    assert r.status_code == 400 and "entered_at" in r.json(), r.json()
    assert written() == before


def test_a_fast_clock_within_five_minutes_is_kept(as_user, relieved, croupier2):
    from datetime import timedelta

    from django.utils import timezone

    at = timezone.now() + timedelta(minutes=3)
    r = record(as_user(croupier2), relieved,
               {**BODY, "entered_by": croupier2.pk, "entered_at": at.isoformat()})
    assert r.status_code == 201, r.json()
