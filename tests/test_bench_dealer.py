"""The benches' tablets play by the house rules (issue 33, item 12): the
shared dealer (bench/_dealer.py House, used by load.py, faults.py,
bench_floor.py, bench_http.py, count_coup.py) reads a table's rules over the
API as its croupier and plays a long run of coups under house variants with
every warning stopping play (hold on error): not one coup refused, not one
finding. A rule that changes what a tablet must send and that the dealer
does not follow fails here, on any database, before a bench meets it."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from bench._dealer import House

pytestmark = pytest.mark.django_db

EVERY_WARNING = ["false_draw", "house_choice", "draw_after_natural",
                 "deal_below_seven"]
STRICT = {  # every rule that changes what a tablet sends, off its default
    "tie_rule": "stay", "cover_rule": "partial", "decks": 2,
    "minimum_banco": "200.00", "maximum_bank": "300.00", "punter_five": "draw",
    "banker_prescriptions": {"3/9": "stand", "5/4": "draw"},
    "hold_on_error": True, "hold_warnings": EVERY_WARNING,
}
RETURNED = {"tie_rule": "returned", "cover_rule": "all_or_nothing",
            "hold_on_error": True, "hold_warnings": EVERY_WARNING}


def open_table(as_user, manager, croupier, rules: dict):
    """A table playing `rules`; its croupier's client and table id."""
    m = as_user(manager)
    table = m.post("/api/v1/tables/", {"name": "Bench house"}, format="json").json()
    r = m.post(f"/api/v1/tables/{table['id']}/rules/",
               {"reason": "a house variant", **rules}, format="json")
    assert r.status_code == 201, r.json()
    return as_user(croupier), table["id"]


def play(client, table: int, coups: int, seed: int = 11) -> dict:
    """`coups` coups as a bench's tablet deals and stakes them; every answer
    must be a 201. Returns what happened. (Fewer than the croupier's coup
    rate limit allows in a minute, COUP_THROTTLE.)"""
    def get(method, path):
        r = client.get(path)
        return r.status_code, r.json()

    house = House.read(get, table)
    rng = random.Random(seed)
    session = client.post(f"/api/v1/tables/{table}/sessions/", {},
                          format="json").json()["id"]
    seen = {"ties": 0, "carried": 0, "shoes": 0, "findings": []}
    shoe, cards, seat, stays = None, [], 1, None
    turn = client.post(f"/api/v1/sessions/{session}/turns/",
                       {"seat": seat, "bank": house.opening_bank}, format="json")
    assert turn.status_code == 201, turn.json()
    for k in range(coups):
        if len(cards) < 7:  # the cut card: counted, closed, the next shoe
            if shoe is not None:
                r = client.post(f"/api/v1/shoes/{shoe}/close/",
                                {"cards_left": len(cards)}, format="json")
                assert r.status_code == 200, r.json()
                assert r.json()["findings"] == [], r.json()
            r = client.post(f"/api/v1/sessions/{session}/shoes/", {"burned": 3},
                            format="json")
            shoe, cards = r.json()["id"], house.new_shoe(rng, 3)
            seen["shoes"] += 1
        punter, banker = house.deal(rng, cards)
        stakes = stays or house.stakes(rng, banker_seat=seat)
        seen["carried"] += stays is not None
        r = client.post(f"/api/v1/shoes/{shoe}/coups/",
                        {"punter": punter, "banker": banker, "stakes": stakes},
                        format="json", HTTP_IDEMPOTENCY_KEY=f"dealer-{k}")
        assert r.status_code == 201, (k, stakes, r.json())
        answer = r.json()
        seen["findings"] += [f["code"] for f in answer["findings"]]
        seen["ties"] += answer["outcome"] == "tie"
        stays = house.stays(answer)
        if answer["next_banker_seat"] is not None:  # the bank lost
            seat = answer["next_banker_seat"]
            r = client.post(f"/api/v1/sessions/{session}/turns/",
                            {"seat": seat, "bank": house.opening_bank},
                            format="json")
            assert r.status_code == 201, r.json()
    return {"house": house, **seen}


def test_the_dealer_reads_the_house_rules_as_a_croupier(as_user, manager, croupier):
    client, table = open_table(as_user, manager, croupier, STRICT)
    house = play(client, table, 0)["house"]
    assert (house.decks, house.minimum_banco, house.maximum_bank) == (
        2, Decimal("200.00"), Decimal("300.00"))
    assert (house.tie_rule, house.punter_five) == ("stay", "draw")
    assert house.banker_prescriptions == STRICT["banker_prescriptions"]
    assert house.minimum_stake == Decimal("20.00")
    assert house.opening_bank == "200.00"


def test_a_strict_house_is_played_without_a_refusal_or_a_finding(
        as_user, manager, croupier):
    client, table = open_table(as_user, manager, croupier, STRICT)
    run = play(client, table, 100)
    assert run["findings"] == []
    assert run["shoes"] >= 3  # two decks: several shoes counted and closed
    # ties happened, and the coup after each carried what stayed on the table
    assert run["ties"] > 0
    # (the run's last coup may be a tie: nothing after it to carry it)
    assert run["carried"] in (run["ties"], run["ties"] - 1)


def test_under_tie_returned_the_stakes_are_placed_afresh(as_user, manager, croupier):
    client, table = open_table(as_user, manager, croupier, RETURNED)
    run = play(client, table, 60)
    assert run["findings"] == []
    assert run["ties"] > 0 and run["carried"] == 0


def test_what_stays_is_the_covered_part_raised_to_the_minimum_stake():
    house = House(minimum_banco=Decimal("200.00"))
    tie = {"outcome": "tie", "stakes": [
        {"seat": 3, "standing": "", "amount": "190.00", "covered": "190.00"},
        {"seat": 5, "standing": "", "amount": "40.00", "covered": "10.00"},
        {"seat": None, "standing": "p0", "amount": "60.00", "covered": "0.00"},
    ]}
    assert house.stays(tie) == [{"seat": 3, "amount": "190.00"},
                                {"seat": 5, "amount": "20.00"}]
    assert house.stays({**tie, "outcome": "banker"}) is None
    assert House(tie_rule="returned").stays(tie) is None
