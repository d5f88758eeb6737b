"""Four eyes on a recount (issue 33, item 8; attack 11).

The pit boss whose count differs from the computed commission recounts to
the computed amount: his own critical `cagnotte_variance` flag must not close
on his word. It stays open, "to review", for a pit boss whose work it is not
about; that one's recount or decision closes it. On the API
(`POST /api/v1/sessions/{id}/cagnotte/`) and the page
(`POST /floor/sessions/{id}/count/`) alike, both through the service."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from rest_framework.test import APIClient

from audit.models import Flag
from audit.services.integrity import flags_state_problems
from tables import services
from tests.conftest import make_user
from tests.insider.test_four_eyes import BANKER_WINS, assert_barred, deal

PATHS = ("api", "page")
WHY = "counted again, a chip was under the tray"


@pytest.fixture
def pitboss2(db):
    return make_user("pitboss2", "pitboss")


@pytest.fixture
def pitboss3(db):
    return make_user("pitboss3", "pitboss")


@pytest.fixture
def closed(session, shoe, turn, croupier, pitboss):
    """A closed session whose computed commission is 20.00."""
    deal(shoe, croupier, BANKER_WINS)  # 15.00 on 300
    deal(shoe, croupier, BANKER_WINS, amount="100")  # 5.00
    services.session_close(session=session, user=pitboss)
    return session


def count(path: str, user, session, counted: str, reason: str = "") -> None:
    """A count (or recount) as the pit boss enters it on one path."""
    if path == "api":
        client = APIClient()
        client.force_authenticate(user=user)
        r = client.post(f"/api/v1/sessions/{session.pk}/cagnotte/",
                        {"counted": counted, "reason": reason}, format="json")
        assert r.status_code == 201, r.content
    else:
        client = Client()
        client.force_login(user)
        r = client.post(f"/floor/sessions/{session.pk}/count/",
                        {"counted": counted, "reason": reason})
        assert r.status_code == 302, r.content


def variance_flag(session) -> Flag:
    return Flag.objects.get(kind="cagnotte", session=session)


def assert_left_to_review(flag: Flag, recounter) -> None:
    flag.refresh_from_db()
    assert (flag.status, flag.live, flag.to_review) == ("open", False, True)
    assert (flag.decided_by, flag.decided_at) == (None, None)
    event = flag.events.order_by("id").last()
    assert (event.action, event.user) == ("resolved", recounter)
    assert event.detail["to_review"] is True and event.detail["recount"] is True
    assert flags_state_problems() == []  # verify_trail replays it the same


def assert_shown_to_review(flag: Flag, user) -> None:
    """The queue and the flag's page say the box matches now and the flag
    waits for review; its history names the recount."""
    page = Client()
    page.force_login(user)
    html = page.get("/floor/queue/").content.decode()
    assert f"/floor/flags/{flag.pk}/" in html
    assert "the box matches now, to review" in html
    html = page.get(f"/floor/flags/{flag.pk}/").content.decode()
    assert "the box matches now, to review" in html
    assert "resolved by his own recount, to review" in html


def attest(manager, session) -> int:
    """The manager's "certifié exact" on the session's latest count."""
    latest = session.cagnotte_counts.order_by("-counted_at", "-pk").first()
    client = APIClient()
    client.force_authenticate(user=manager)
    return client.post(f"/api/v1/cagnotte/{latest.pk}/attest/", {},
                       format="json").status_code


@pytest.mark.parametrize("path", PATHS)
def test_his_own_matching_recount_leaves_his_flag_open(
    path, closed, pitboss, pitboss2, manager
):
    count(path, pitboss, closed, "19.00")  # the computed commission is 20.00
    flag = variance_flag(closed)
    assert (flag.severity, flag.status, flag.author) == ("critical", "open", pitboss)
    count(path, pitboss, closed, "20.00", WHY)
    assert_left_to_review(flag, pitboss)
    assert_shown_to_review(flag, pitboss2)
    assert_barred(APIClient(), flag, pitboss)
    assert attest(manager, closed) == 409  # not certified over an open flag
    client = APIClient()
    client.force_authenticate(user=pitboss2)
    r = client.post(f"/api/v1/flags/{flag.pk}/dismiss/",
                    {"reason": "recounted under the camera: 20.00"}, format="json")
    assert r.status_code == 200, r.content
    flag.refresh_from_db()
    assert (flag.status, flag.decided_by) == ("dismissed", pitboss2)
    assert attest(manager, closed) == 200


@pytest.mark.parametrize("path", PATHS)
def test_a_second_pit_boss_matching_recount_closes_it(
    path, closed, pitboss, pitboss2
):
    count(path, pitboss, closed, "19.00")
    count(path, pitboss, closed, "20.00", WHY)
    flag = variance_flag(closed)
    assert_left_to_review(flag, pitboss)
    count(path, pitboss2, closed, "20.00", "second count, four eyes")
    flag.refresh_from_db()
    assert (flag.status, flag.decided_by, flag.live) == ("resolved", pitboss2, False)
    assert flags_state_problems() == []


def test_a_recount_by_anyone_whose_count_raised_or_moved_it_closes_nothing(
    closed, pitboss, pitboss2, pitboss3
):
    """pitboss counted the first difference, pitboss2 a second one (the flag
    is now about his count): neither one's matching recount closes it, even
    the one whose count the flag no longer points at; a third pit boss's
    recount does."""
    count("api", pitboss, closed, "19.00")
    count("api", pitboss2, closed, "18.00", "counted again")
    flag = variance_flag(closed)
    assert flag.count.counted_by == pitboss2
    count("api", pitboss, closed, "20.00", WHY)
    assert_left_to_review(flag, pitboss)
    count("page", pitboss2, closed, "20.00", "and again")
    assert_left_to_review(flag, pitboss)  # his recount changes nothing
    count("page", pitboss3, closed, Decimal("20.00"), "third pair of eyes")
    flag.refresh_from_db()
    assert (flag.status, flag.decided_by) == ("resolved", pitboss3)
