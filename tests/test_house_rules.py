"""House rules as versions over the API (docs/rules.md, "House rules"): every
variant end to end against the rule book's worked examples, in force from the
next session and never retroactive, bad rules refused naming the field with
nothing written, a manager's alone to change."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from casino.models import ChangeLog
from tables.models import Coup, HouseRules
from tables.services import gaming_day_for
from tables.services.house import rules_in_force

from .test_rule_book import examples

pytestmark = pytest.mark.django_db
D = Decimal

# Cards that end a coup at once (naturals), so that no draw is judged.
CARDS = {
    "banker": (["2S", "3H"], ["9C", "KD"]),
    "punter": (["9S", "KH"], ["2C", "3D"]),
    "tie": (["8S", "KH"], ["8C", "KD"]),
}
RULE_KEYS = {
    "rate": "commission_rate",
    "unit": "commission_unit",
    "rounding": "commission_rounding",
    "cover": "cover_rule",
    "tie": "tie_rule",
    "maximum_bank": "maximum_bank",
    "minimum_banco": "minimum_banco",
}


def post(client, url, body):
    return client.post(url, body, format="json")


def api_rules(house: str) -> dict:
    """The example's `house:` line as the API's body."""
    body = {}
    for kv in house.split():
        k, v = kv.split("=")
        v = f"{D(v):.4f}" if k == "rate" else (f"{D(v):.2f}" if k in (
            "unit", "maximum_bank", "minimum_banco") else v)
        body[RULE_KEYS[k]] = v
    return body


@pytest.fixture
def floor_api(as_user, manager, croupier):
    """A table made and ruled by the manager, played by the croupier."""

    def open_table(name: str, rules: dict):
        m = as_user(manager)
        table = post(m, "/api/v1/tables/", {"name": name}).json()
        r = post(m, f"/api/v1/tables/{table['id']}/rules/",
                 {"reason": "house variant", **rules})
        assert r.status_code == 201, r.json()
        c = as_user(croupier)
        session = post(c, f"/api/v1/tables/{table['id']}/sessions/", {}).json()
        shoe = post(c, f"/api/v1/sessions/{session['id']}/shoes/", {"burned": 3}).json()
        return c, table, session, shoe

    return open_table


@pytest.mark.parametrize("ex", examples(), ids=lambda ex: ex["name"])
def test_every_worked_example_through_the_api(floor_api, ex):
    c, table, session, shoe = floor_api(f"T {ex['name']}", api_rules(ex["house"]))
    turn = post(c, f"/api/v1/sessions/{session['id']}/turns/",
                {"seat": int(ex["banker_seat"]), "bank": ex["bank"]})
    assert turn.status_code == 201, turn.json()
    punter, banker = CARDS[ex["outcome"]]
    # "5=2000.00/banco_solo": seat, amount and (optional) announcement
    stakes = [{"seat": int(s), "amount": a.partition("/")[0],
               "announcement": a.partition("/")[2] or "none"}
              for s, a in (kv.split("=") for kv in ex["stakes"].split())]
    r = post(c, f"/api/v1/shoes/{shoe['id']}/coups/",
             {"punter": punter, "banker": banker, "stakes": stakes})
    assert r.status_code == 201, r.json()
    coup = r.json()
    assert coup["outcome"] == ex["outcome"] and coup["findings"] == []
    assert (coup["covered"], coup["garage"], coup["commission"], coup["bank_after"]) \
        == (ex["covered"], ex["garage"], ex["commission"], ex["carried"])
    assert [s["covered"] for s in coup["stakes"]] == ex["covered_each"].split()
    assert [s["payout"] for s in coup["stakes"]] == [
        f"{D(p):.2f}" for p in ex["payouts"].split()]
    stored = Coup.objects.get(pk=coup["id"])
    assert stored.rules.version == 2  # the table's first version is its creation's


def test_a_new_version_keeps_the_old_and_logs_the_reason(as_user, manager, table):
    m = as_user(manager)
    r = post(m, f"/api/v1/tables/{table.pk}/rules/", {
        "reason": "licence of 2027", "commission_rounding": "half_even",
        "cover_rule": "all_or_nothing", "tie_rule": "returned",
        "maximum_bank": "50000.00", "punter_five": "draw",
        "banker_prescriptions": {"3/9": "stand", "5/4": "free"},
        "hold_on_error": True, "decks": 8,
    })
    assert r.status_code == 201, r.json()
    body = r.json()
    assert body["version"] == 2
    assert body["banker_prescriptions"] == {"3/9": "stand"}  # free is not stored
    assert (body["maximum_bank"], body["hold_on_error"], body["decks"]) == (
        "50000.00", True, 8)
    assert HouseRules.objects.filter(table=table).count() == 2
    first = HouseRules.objects.get(table=table, version=1)
    assert (first.cover_rule, first.maximum_bank) == ("partial", None)
    log = ChangeLog.objects.filter(action="tables.house_rules.changed").last()
    assert log.reason == "licence of 2027"
    assert log.old["cover_rule"] == "partial"
    assert log.new["cover_rule"] == "all_or_nothing"
    listing = m.get(f"/api/v1/tables/{table.pk}/rules/").json()
    assert [v["version"] for v in listing["versions"]] == [2, 1]
    assert listing["latest"] == 2 and listing["in_force"] == 2


def test_in_force_from_the_next_session_never_for_the_open_one(
    as_user, manager, table, session, shoe, turn, croupier, pitboss
):
    m = as_user(manager)
    r = post(m, f"/api/v1/tables/{table.pk}/rules/",
             {"reason": "no levy", "commission_rate": "0.0000"})
    assert r.status_code == 201
    assert m.get(f"/api/v1/tables/{table.pk}/rules/").json()["in_force"] == 1
    c = as_user(croupier)
    coup = post(c, f"/api/v1/shoes/{shoe.pk}/coups/", {
        "punter": ["2S", "3H"], "banker": ["9C", "KD"],
        "stakes": [{"seat": 2, "amount": "200.00"}]}).json()
    assert coup["commission"] == "10.00"  # the open session's 5 %
    assert Coup.objects.get(pk=coup["id"]).rules.version == 1
    r = post(as_user(pitboss), f"/api/v1/sessions/{session.pk}/close/", {})
    assert r.status_code == 200, r.json()
    c = as_user(croupier)  # one client: as_user switches who it is
    nxt = post(c, f"/api/v1/tables/{table.pk}/sessions/", {}).json()
    shoe2 = post(c, f"/api/v1/sessions/{nxt['id']}/shoes/", {"burned": 3}).json()
    post(c, f"/api/v1/sessions/{nxt['id']}/turns/", {"seat": 1, "bank": "1000.00"})
    coup = post(c, f"/api/v1/shoes/{shoe2['id']}/coups/", {
        "punter": ["2S", "3H"], "banker": ["9C", "KD"],
        "stakes": [{"seat": 2, "amount": "200.00"}]}).json()
    assert coup["commission"] == "0.00"
    assert Coup.objects.get(pk=coup["id"]).rules.version == 2


def test_effective_from_a_later_day(as_user, manager, table):
    today = gaming_day_for(timezone.now(), 6)
    m = as_user(manager)
    r = post(m, f"/api/v1/tables/{table.pk}/rules/", {
        "reason": "from next week", "decks": 8,
        "effective_from": str(today + timedelta(days=7))})
    assert r.status_code == 201, r.json()
    assert rules_in_force(table, today).version == 1
    assert rules_in_force(table, today + timedelta(days=6)).version == 1
    assert rules_in_force(table, today + timedelta(days=7)).version == 2
    assert m.get(f"/api/v1/tables/{table.pk}/rules/").json()["in_force"] == 1


BAD = [
    ({"commission_rate": "-0.05"}, "commission_rate"),
    ({"commission_rate": 0.05}, "commission_rate"),
    ({"commission_unit": "0.00"}, "commission_unit"),
    ({"commission_unit": "0.001"}, "commission_unit"),
    ({"commission_rounding": "bankers"}, "commission_rounding"),
    ({"tie_rule": "split"}, "tie_rule"),
    ({"cover_rule": "most"}, "cover_rule"),
    ({"decks": 9}, "decks"),
    ({"decks": "6"}, "decks"),
    ({"maximum_bank": "50.00"}, "maximum_bank"),  # below the minimum banco
    ({"punter_five": "sometimes"}, "punter_five"),
    ({"banker_prescriptions": {"6/stood": "draw"}}, "banker_prescriptions"),
    ({"banker_prescriptions": {"3/9": "D"}}, "banker_prescriptions"),
    ({"banker_prescriptions": {"9/1": "draw"}}, "banker_prescriptions"),
    ({"banker_prescriptions": ["3/9"]}, "banker_prescriptions"),
    ({"hold_on_error": "yes"}, "hold_on_error"),
    ({"hold_warnings": ["bank_mismatch"]}, "hold_warnings"),  # critical: always
    ({"hold_warnings": ["no_such_code"]}, "hold_warnings"),
    ({"hold_warnings": "false_draw"}, "hold_warnings"),
    ({"gaming_day_cutoff": 24}, "gaming_day_cutoff"),
    ({"false_draw_sanction": "flogging"}, "false_draw_sanction"),
    ({"tableau_version": "no-such-tableau"}, "tableau_version"),
    ({"effective_from": "2020-01-01"}, "effective_from"),
    ({"effective_from": "tomorrow"}, "effective_from"),
    ({"effective_from": "9999-12-31"}, "effective_from"),  # 5 years ahead at most
    ({"odds": "better"}, None),  # an unknown rule: ignored fields are not rules
]


@pytest.mark.parametrize("change, field", BAD, ids=[str(c) for c, _ in BAD])
def test_bad_rules_are_refused_naming_the_field_and_nothing_changes(
    as_user, manager, table, change, field
):
    before = (HouseRules.objects.count(), ChangeLog.objects.count())
    r = post(as_user(manager), f"/api/v1/tables/{table.pk}/rules/",
             {"reason": "try", **change})
    if field is None:  # DRF ignores an unknown key: a version with no change
        assert r.status_code == 201
        return
    assert r.status_code == 400, r.json()
    assert field in r.json(), r.json()
    assert r.json()["detail"].startswith(field)
    assert (HouseRules.objects.count(), ChangeLog.objects.count()) == before


def test_a_reason_is_required(as_user, manager, table):
    r = post(as_user(manager), f"/api/v1/tables/{table.pk}/rules/", {"decks": 8})
    assert r.status_code == 400 and "reason" in r.json()
    r = post(as_user(manager), f"/api/v1/tables/{table.pk}/rules/",
             {"decks": 8, "reason": "   "})
    assert r.status_code == 400 and "reason" in r.json()


def test_a_prescription_the_new_tableau_leaves_mandatory_is_refused(
    as_user, manager, table
):
    m = as_user(manager)
    assert post(m, f"/api/v1/tables/{table.pk}/rules/", {
        "reason": "club", "banker_prescriptions": {"3/9": "draw"}}).status_code == 201
    from tables.services.tableaux import tableau_create

    tableau_create(version="pb", user=manager, reason="punto banco rows",
                   rows={str(k): list(v) for k, v in {
                       0: "DDDDDDDDDDD", 1: "DDDDDDDDDDD", 2: "DDDDDDDDDDD",
                       3: "DDDDDDDDDSD", 4: "DSSDDDDDDSS", 5: "DSSSSDDDDSS",
                       6: "SSSSSSSDDSS", 7: "SSSSSSSSSSS"}.items()})
    r = post(m, f"/api/v1/tables/{table.pk}/rules/",
             {"reason": "punto banco", "tableau_version": "pb"})
    assert r.status_code == 400
    assert "not an optional cell" in r.json()["detail"]


@pytest.mark.parametrize("role", ["croupier", "pitboss", "auditor", "outsider"])
def test_only_a_manager_writes_house_rules(as_user, table, role, request):
    user = request.getfixturevalue(role)
    r = post(as_user(user), f"/api/v1/tables/{table.pk}/rules/",
             {"reason": "mine now", "commission_rate": "0.5000"})
    assert r.status_code == 403
    assert HouseRules.objects.filter(table=table).count() == 1
    reading = as_user(user).get(f"/api/v1/tables/{table.pk}/rules/")
    assert reading.status_code == (403 if role == "outsider" else 200)


def test_a_prescribed_cell_played_the_other_way_is_a_finding(
    as_user, manager, croupier, floor_api
):
    c, table, session, shoe = floor_api("Club", {
        "banker_prescriptions": {"3/9": "draw"}, "punter_five": "stand"})
    post(c, f"/api/v1/sessions/{session['id']}/turns/",
         {"seat": 1, "bank": "1000.00"})
    # the punter draws on 5 (the house says stand) and gets a 9; the banker on
    # 3 stands against it (the house says draw): two house_choice findings
    r = post(c, f"/api/v1/shoes/{shoe['id']}/coups/", {
        "punter": ["5S", "KH", "9D"], "banker": ["3C", "QD"],
        "stakes": [{"seat": 2, "amount": "100.00"}]})
    assert r.status_code == 201, r.json()
    found = [(f["code"], f["side"], f["detail"]["house_rule"])
             for f in r.json()["findings"]]
    assert found == [("house_choice", "punter", "punter_five"),
                     ("house_choice", "banker", "3/9")]
    # the same coup where the house leaves the cells free finds nothing
    c2, _, session2, shoe2 = floor_api("Free", {"decks": 6})
    post(c2, f"/api/v1/sessions/{session2['id']}/turns/",
         {"seat": 1, "bank": "1000.00"})
    r = post(c2, f"/api/v1/shoes/{shoe2['id']}/coups/", {
        "punter": ["5S", "KH", "9D"], "banker": ["3C", "QD"],
        "stakes": [{"seat": 2, "amount": "100.00"}]})
    assert r.json()["findings"] == []


def test_decks_and_the_minimum_banco_through_the_api(floor_api):
    c, table, session, shoe = floor_api("Eight", {
        "decks": 8, "minimum_banco": "500.00"})
    assert shoe["decks"] == 8 and shoe["cards_left"] == 8 * 52 - 3
    r = post(c, f"/api/v1/sessions/{session['id']}/turns/",
             {"seat": 1, "bank": "400.00"})
    assert r.status_code == 400 and "bank" in r.json()
    r = post(c, f"/api/v1/sessions/{session['id']}/turns/",
             {"seat": 1, "bank": "500.00"})
    assert r.status_code == 201
    # a stake under a tenth of the minimum banco (50.00) is refused naming it
    r = post(c, f"/api/v1/shoes/{shoe['id']}/coups/", {
        "punter": CARDS["banker"][0], "banker": CARDS["banker"][1],
        "stakes": [{"seat": 2, "amount": "40.00"}]})
    assert r.status_code == 400
    assert r.json()["detail"].startswith("stakes[0].amount")
