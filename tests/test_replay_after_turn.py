"""A tablet re-sends a coup it was answered for (a double tap, its retry queue
replayed) after the table moved on: the bank lost, the next banker sits where
the stake was. The replay is answered with the stored coup (200), not
judged again against the table as it is now (bench/bench_floor.py found it
answered 400: "the banker cannot stake")."""

from __future__ import annotations

from tables.models import Coup

PUNTER_NATURAL = {"punter": ["9H", "KD"], "banker": ["5C", "2S"]}


def test_a_replay_after_the_bank_passed_to_the_stakers_seat(
        api, croupier, shoe, turn):
    api.force_authenticate(user=croupier)
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    body = {**PUNTER_NATURAL, "stakes": [{"seat": 2, "amount": "1000.00",
                                          "announcement": "banco_solo"}]}
    first = api.post(url, body, format="json", headers={"Idempotency-Key": "k1"})
    assert first.status_code == 201, first.json()
    nxt = first.json()["next_banker_seat"]
    assert nxt == 2  # banco won: the bank passes to the punter's seat
    r = api.post(f"/api/v1/sessions/{shoe.session_id}/turns/",
                 {"seat": nxt, "bank": "1000.00"}, format="json")
    assert r.status_code == 201, r.json()
    again = api.post(url, body, format="json", headers={"Idempotency-Key": "k1"})
    assert again.status_code == 200, again.json()
    assert again.json()["id"] == first.json()["id"]
    assert Coup.objects.filter(idempotency_key="k1").count() == 1
    # another body under the key is still refused, naming the key
    other = {**body, "stakes": [{"seat": 3, "amount": "100.00"}]}
    r = api.post(url, other, format="json", headers={"Idempotency-Key": "k1"})
    assert r.status_code == 409 and "Idempotency-Key" in r.json()
