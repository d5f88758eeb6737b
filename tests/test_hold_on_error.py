"""House rule "hold on error" (docs/rules.md, "House rules"): a coup with a
critical finding holds the shoe; the next coup is refused saying why until a
pit boss releases it with a reason."""

from __future__ import annotations

import pytest

from casino.models import ChangeLog
from tables.models import Coup, Shoe, ShoeRelease

pytestmark = pytest.mark.django_db

NATURAL = {"punter": ["2S", "3H"], "banker": ["9C", "KD"]}
STAKE = [{"seat": 2, "amount": "100.00"}]


def post(client, url, body):
    return client.post(url, body, format="json")


@pytest.fixture
def held_table(as_user, manager, croupier):
    def make(hold: bool):
        m = as_user(manager)
        table = post(m, "/api/v1/tables/", {"name": f"Hold {hold}"}).json()
        r = post(m, f"/api/v1/tables/{table['id']}/rules/",
                 {"reason": "stop at the mistake", "hold_on_error": hold})
        assert r.status_code == 201, r.json()
        c = as_user(croupier)
        session = post(c, f"/api/v1/tables/{table['id']}/sessions/", {}).json()
        shoe = post(c, f"/api/v1/sessions/{session['id']}/shoes/", {"burned": 3}).json()
        post(c, f"/api/v1/sessions/{session['id']}/turns/",
             {"seat": 1, "bank": "1000.00"})
        return c, shoe["id"]

    return make


def coup(client, shoe_id, **extra):
    return post(client, f"/api/v1/shoes/{shoe_id}/coups/",
                {**NATURAL, "stakes": STAKE, **extra})


def test_a_critical_finding_holds_the_shoe_until_a_pit_boss_releases_it(
    held_table, as_user, croupier, pitboss
):
    c, shoe_id = held_table(True)
    # the croupier declares a bank the ledger does not carry: critical
    r = coup(c, shoe_id, declared_bank="900.00")
    assert r.status_code == 201, r.json()
    assert [f["code"] for f in r.json()["findings"]] == ["bank_mismatch"]
    assert Shoe.objects.get(pk=shoe_id).held_by_seq == 1

    coups = Coup.objects.count()
    refused = coup(c, shoe_id)
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "shoe_held" and "shoe" in body
    assert body["detail"].startswith("shoe: held since coup 1")
    assert Coup.objects.count() == coups  # nothing written

    url = f"/api/v1/shoes/{shoe_id}/release/"
    assert post(as_user(croupier), url, {"reason": "mine"}).status_code == 403
    p = as_user(pitboss)
    assert post(p, url, {}).status_code == 400
    r = post(p, url, {"reason": "  "})
    assert r.status_code == 400 and "reason" in r.json()
    r = post(p, url, {"reason": "bank recounted with the banker: 1,000"})
    assert r.status_code == 200, r.json()
    assert r.json()["held_by_seq"] is None
    release = ShoeRelease.objects.get(shoe_id=shoe_id)
    assert (release.held_by_seq, release.released_by, release.reason) == (
        1, pitboss, "bank recounted with the banker: 1,000")
    log = ChangeLog.objects.filter(action="tables.shoe.released").get()
    assert log.reason == release.reason and log.old == {"held_by_seq": 1}
    assert post(p, url, {"reason": "again"}).status_code == 409  # not held now

    again = coup(as_user(croupier), shoe_id)
    assert again.status_code == 201, again.json()
    assert again.json()["seq"] == 2


def test_off_by_default_a_critical_finding_is_reported_and_play_goes_on(held_table):
    c, shoe_id = held_table(False)
    assert coup(c, shoe_id, declared_bank="900.00").status_code == 201
    assert Shoe.objects.get(pk=shoe_id).held_by_seq is None
    assert coup(c, shoe_id).status_code == 201


def test_a_warning_never_holds(held_table):
    c, shoe_id = held_table(True)
    # the banker draws on 7 (and wins): a false draw, a warning
    r = coup(c, shoe_id, punter=["3S", "3H"], banker=["7C", "KD", "AD"])
    assert [f["severity"] for f in r.json()["findings"]] == ["warning"]
    assert Shoe.objects.get(pk=shoe_id).held_by_seq is None
    assert coup(c, shoe_id).status_code == 201


def test_the_held_shoe_refuses_through_the_service_too(held_table, croupier):
    from decimal import Decimal

    from tables.errors import Conflict
    from tables.services import StakeInput, coup_record

    c, shoe_id = held_table(True)
    coup(c, shoe_id, declared_bank="900.00")
    with pytest.raises(Conflict) as err:
        coup_record(shoe_id=shoe_id, user=croupier,
                    punter=["2S", "3H"], banker=["9C", "KD"],
                    stakes=[StakeInput(amount=Decimal("100.00"), seat=2)])
    assert err.value.code == "shoe_held" and err.value.field == "shoe"


def test_release_is_a_pit_bosss_alone_on_every_path(held_table, as_user, manager,
                                                   auditor, croupier):
    c, shoe_id = held_table(True)
    coup(c, shoe_id, declared_bank="900.00")
    for user in (manager, auditor, croupier):
        r = post(as_user(user), f"/api/v1/shoes/{shoe_id}/release/", {"reason": "x"})
        assert r.status_code == 403
    from tables.errors import Forbidden
    from tables.services.holds import shoe_release

    with pytest.raises(Forbidden):
        shoe_release(shoe=shoe_id, user=manager, reason="from a script")
    assert Shoe.objects.get(pk=shoe_id).held_by_seq == 1
