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
    def make(hold: bool, **rules):
        m = as_user(manager)
        table = post(m, "/api/v1/tables/", {"name": f"Hold {hold} {rules}"}).json()
        r = post(m, f"/api/v1/tables/{table['id']}/rules/",
                 {"reason": "stop at the mistake", "hold_on_error": hold, **rules})
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


FALSE_DRAW = {"punter": ["3S", "3H"], "banker": ["7C", "KD", "AD"]}  # banker draws on 7


def test_the_house_chooses_the_warnings_that_stop_play_too(held_table):
    """Issue 24, item 2: hold on error with false draws named: a false draw
    holds the shoe as a critical finding does, and the API says so."""
    c, shoe_id = held_table(True, hold_warnings=["false_draw"])
    r = coup(c, shoe_id, **FALSE_DRAW)
    assert r.status_code == 201, r.json()
    assert [f["code"] for f in r.json()["findings"]] == ["false_draw"]
    assert Shoe.objects.get(pk=shoe_id).held_by_seq == 1
    refused = coup(c, shoe_id)
    assert refused.status_code == 409 and refused.json()["code"] == "shoe_held"
    # a warning the house did not name does not hold: a house choice here
    c, shoe_id = held_table(True, hold_warnings=["house_choice"])
    assert coup(c, shoe_id, **FALSE_DRAW).status_code == 201
    assert Shoe.objects.get(pk=shoe_id).held_by_seq is None


def test_the_named_warnings_wait_for_hold_on_error(held_table):
    c, shoe_id = held_table(False, hold_warnings=["false_draw"])
    assert coup(c, shoe_id, **FALSE_DRAW).status_code == 201
    assert Shoe.objects.get(pk=shoe_id).held_by_seq is None


def test_hold_warnings_are_a_version_of_the_rules(as_user, manager, table):
    """Written sorted, shown by the API, kept by a later version that does
    not name them, cleared by an empty list; the versions written before
    the field hold on critical findings alone."""
    m = as_user(manager)
    url = f"/api/v1/tables/{table.pk}/rules/"
    assert table.rules.hold_warnings is None
    r = post(m, url, {"reason": "stop on draws", "hold_on_error": True,
                      "hold_warnings": ["house_choice", "false_draw"]})
    assert r.status_code == 201, r.json()
    assert r.json()["hold_warnings"] == ["false_draw", "house_choice"]
    r = post(m, url, {"reason": "decks", "decks": 8})
    assert r.json()["hold_warnings"] == ["false_draw", "house_choice"]
    r = post(m, url, {"reason": "criticals only", "hold_warnings": []})
    assert r.json()["hold_warnings"] == []
    from tables.models import HouseRules

    versions = HouseRules.objects.filter(table=table).order_by("version")
    assert [v.hold_warnings for v in versions] == [
        None, ["false_draw", "house_choice"], ["false_draw", "house_choice"], None]
