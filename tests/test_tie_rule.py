"""The tie rule on the server (issue 23, item 6; docs/rules.md, "House
rules"): with tie_rule "stay" the covered stakes of a tie stay on the table,
so the turn's next coup must carry each of them, raised or as it was; the
coup API refuses it otherwise (400 naming the seat), as the tablet does, on
the ORM path (SQLite, any database) and on PostgreSQL's batch alike. What
stays is the banker turn's `tied_stakes`, written with the turn's running
state in the same statement, re-computed by corrections and verify_ledger."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection

from audit.ledger_check import ledger_verify
from audit.services import coup_correct_reviewed
from casino.trail import trail_verify
from tables import services
from tables.models import BankerTurn
from tables.services import ledger_pg
from tests.conftest import _missing

pytestmark = pytest.mark.django_db
D = Decimal

TIE = (["8S", "KH"], ["8C", "KD"])  # naturals, 8 against 8
BANKER = (["2S", "3H"], ["9C", "KD"])  # banker natural 9
PUNTER = (["9S", "KH"], ["2C", "3D"])  # punter natural 9


@pytest.fixture(params=["orm", "postgresql"])
def path(request, monkeypatch):
    """Each test on the ORM's path and on PostgreSQL's batch (ledger_pg)."""
    if request.param == "postgresql":
        if connection.vendor != "postgresql":
            _missing("PostgreSQL", "the coup's PostgreSQL path: set "
                     "DATABASE_URL=postgres://... to run this test")
    else:
        monkeypatch.setattr(ledger_pg, "supported", lambda: False)
    return request.param


@pytest.fixture
def house(manager, croupier, as_user):
    """house(tie_rule) -> (croupier's API client, shoe id, session id): a
    table playing that tie rule, a bank of 1,000 at seat 1."""

    def open_house(tie_rule="stay", name="Tie"):
        m = as_user(manager)
        table = m.post("/api/v1/tables/", {"name": name}, format="json").json()
        r = m.post(f"/api/v1/tables/{table['id']}/rules/",
                   {"reason": "house variant", "tie_rule": tie_rule}, format="json")
        assert r.status_code == 201, r.json()
        c = as_user(croupier)
        session = c.post(f"/api/v1/tables/{table['id']}/sessions/", {},
                         format="json").json()
        shoe = c.post(f"/api/v1/sessions/{session['id']}/shoes/", {"burned": 3},
                      format="json").json()
        r = c.post(f"/api/v1/sessions/{session['id']}/turns/",
                   {"seat": 1, "bank": "1000.00"}, format="json")
        assert r.status_code == 201, r.json()
        return c, shoe["id"], session["id"]

    return open_house


def coup(client, shoe_id, cards, *stakes, key=None):
    body = {"punter": cards[0], "banker": cards[1], "stakes": [
        {"seat": s, "amount": a} if isinstance(s, int) else
        {"standing": s, "amount": a} for s, a in stakes]}
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    return client.post(f"/api/v1/shoes/{shoe_id}/coups/", body, format="json",
                       **extra)


def open_turn(session_id) -> BankerTurn:
    return BankerTurn.objects.get(session_id=session_id, closed_at__isnull=True)


def assert_refused(r, field, *words):
    assert r.status_code == 400, (r.status_code, r.json())
    body = r.json()
    assert field in body, body
    message = body[field][0]
    for word in words:
        assert word in message, message
    return message


def test_the_coup_after_a_tie_carries_the_tied_stakes(path, house):
    c, shoe, session = house()
    r = coup(c, shoe, TIE, (3, "200.00"), (5, "100.00"))
    assert r.status_code == 201 and r.json()["outcome"] == "tie"
    assert open_turn(session).tied_stakes == [[3, "", "200.00"], [5, "", "100.00"]]
    # seat 3's stake taken away: refused, naming seat 3, nothing written
    r = coup(c, shoe, BANKER, (5, "100.00"))
    message = assert_refused(r, "stakes", "seat 3", "200.00", "stays on the table")
    assert r.json()["detail"] == f"stakes: {message}"
    # seat 5's lowered: refused naming that stake and the seat
    r = coup(c, shoe, BANKER, (3, "200.00"), (5, "60.00"))
    assert_refused(r, "stakes[1].amount", "seat 5", "100.00", "not taken back")
    assert open_turn(session).coups == 1
    # raised, another punter joins: taken
    r = coup(c, shoe, BANKER, (5, "150.00"), (3, "200.00"), (7, "100.00"))
    assert r.status_code == 201, r.json()
    assert open_turn(session).tied_stakes is None
    # no tie before it: the stakes are free again
    r = coup(c, shoe, BANKER, (4, "100.00"))
    assert r.status_code == 201, r.json()
    assert trail_verify(anchors=False).ok
    assert ledger_verify().ok, ledger_verify().differences


def test_returned_stakes_leave_the_next_coup_free(path, house):
    c, shoe, session = house("returned")
    r = coup(c, shoe, TIE, (3, "200.00"))
    assert r.status_code == 201 and r.json()["outcome"] == "tie"
    assert open_turn(session).tied_stakes is None
    r = coup(c, shoe, BANKER, (4, "100.00"))
    assert r.status_code == 201, r.json()


def test_what_stays_is_the_covered_part_and_a_standing_players_stake(path, house):
    """A stake declined in part after the bank was covered: only its covered
    part was on the table, and only that must stay."""
    c, shoe, session = house()
    r = coup(c, shoe, TIE, (3, "800.00"), ("Mme R.", "500.00"))
    assert [s["covered"] for s in r.json()["stakes"]] == ["800.00", "200.00"]
    assert open_turn(session).tied_stakes == [
        [3, "", "800.00"], [None, "Mme R.", "200.00"]]
    r = coup(c, shoe, BANKER, (3, "800.00"))
    assert_refused(r, "stakes", "Mme R.'s stake of 200.00")
    r = coup(c, shoe, BANKER, (3, "800.00"), ("Mme R.", "200.00"))
    assert r.status_code == 201, r.json()
    assert ledger_verify().ok


def test_two_ties_in_a_row_and_a_new_shoe(path, house, croupier):
    """The stakes stay for the turn's next coup wherever it is dealt: after a
    second tie, and in the next shoe when the shoe ended on the tie."""
    c, shoe, session = house()
    assert coup(c, shoe, TIE, (3, "200.00")).status_code == 201
    # raised to 300 against a bank of 200 (the tie carried the covered 200
    # forward): 200 covered, what stays again
    r = coup(c, shoe, TIE, (3, "300.00"))
    assert r.status_code == 201, r.json()
    assert r.json()["stakes"][0]["declined"] == "100.00"
    assert open_turn(session).tied_stakes == [[3, "", "200.00"]]
    assert c.post(f"/api/v1/shoes/{shoe}/close/", {}, format="json").status_code == 200
    shoe2 = c.post(f"/api/v1/sessions/{session}/shoes/", {"burned": 3},
                   format="json").json()["id"]
    assert_refused(coup(c, shoe2, BANKER, (3, "150.00")), "stakes[0].amount",
                   "seat 3", "200.00")
    assert coup(c, shoe2, BANKER, (3, "200.00")).status_code == 201


def test_a_replay_of_the_tie_is_still_the_tie(path, house):
    """A retry of the acknowledged tie (same key, same body) answers it again;
    it does not count as the next coup."""
    c, shoe, session = house()
    assert coup(c, shoe, TIE, (3, "200.00"), key="t-1").status_code == 201
    r = coup(c, shoe, TIE, (3, "200.00"), key="t-1")
    assert r.status_code == 200 and open_turn(session).coups == 1


def test_corrections_follow_the_tie(path, house, pitboss):
    """A tie corrected into a banker win frees the next coup's stakes; a win
    corrected into a tie makes its stakes stay (the turn's tied_stakes is
    re-computed with the re-settle, and verify_ledger agrees)."""
    from tables.models import Coup

    c, shoe, session = house()
    assert coup(c, shoe, TIE, (3, "200.00")).status_code == 201
    tie = Coup.objects.get(shoe_id=shoe, seq=1)
    coup_correct_reviewed(
        coup=tie, user=pitboss, reason="the banker had a 9", punter=BANKER[0],
        banker=BANKER[1], stakes=[services.StakeInput(amount=D("200"), seat=3)])
    assert open_turn(session).tied_stakes is None
    assert ledger_verify().ok
    assert coup(c, shoe, BANKER, (4, "100.00")).status_code == 201
    last = Coup.objects.get(shoe_id=shoe, seq=2)
    coup_correct_reviewed(
        coup=last, user=pitboss, reason="8 against 8", punter=TIE[0],
        banker=TIE[1], stakes=[services.StakeInput(amount=D("100"), seat=4)])
    assert open_turn(session).tied_stakes == [[4, "", "100.00"]]
    assert ledger_verify().ok
    assert_refused(coup(c, shoe, BANKER, (3, "100.00")), "stakes", "seat 4")
    assert trail_verify(anchors=False).ok


def test_the_refusal_names_the_seat_on_the_pit_bosss_acceptance_too(
    path, house, croupier, pitboss, as_user
):
    """A relieved croupier's queued coup, accepted by a pit boss: the same
    rule, the same refusal."""
    c, shoe, session = house()
    assert coup(c, shoe, TIE, (3, "200.00")).status_code == 201
    with pytest.raises(Exception) as err:
        services.coup_accept(
            shoe_id=shoe, user=pitboss, entered_by=croupier.pk, reason="relieved",
            punter=BANKER[0], banker=BANKER[1],
            stakes=[services.StakeInput(amount=D("100"), seat=4)])
    assert getattr(err.value, "field", None) == "stakes"
    assert "seat 3" in str(err.value.message)


def test_a_lost_bank_after_a_tie_ends_what_stays(path, house):
    c, shoe, session = house()
    assert coup(c, shoe, TIE, (3, "200.00")).status_code == 201
    r = coup(c, shoe, PUNTER, (3, "200.00"))
    assert r.status_code == 201 and r.json()["next_banker_seat"] == 2
    turn = BankerTurn.objects.filter(session_id=session).get()
    assert turn.closed_at is not None and turn.tied_stakes is None
