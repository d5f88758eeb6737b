"""A table played in this process through DRF's test client: the coups of
profile_coup.py and count_coup.py, dealt from a shuffled six-deck shoe, a
new shoe opened at the cut card. Not a benchmark itself."""

from __future__ import annotations

import random


class ApiDealer:
    def __init__(self, client, session_id: int, shoe_id: int, *, seed: int = 3):
        from tables.simulation import SimulationReport

        self.client, self.session = client, session_id
        self.shoe, self.seat, self.cards = shoe_id, 1, []
        self.rng, self.report = random.Random(seed), SimulationReport()
        self.staying = None  # the stakes a tie left on the table

    def next_coup(self) -> dict:
        """The next coup's body: two stakes on seats other than the banker's."""
        from tables.chemmy import ALL_CODES, STANDARD_TABLEAU
        from tables.simulation import deal_coup

        if len(self.cards) < 7:  # the cut card: close this shoe, open the next
            self.client.post(f"/api/v1/shoes/{self.shoe}/close/")
            r = self.client.post(f"/api/v1/sessions/{self.session}/shoes/",
                                 {"burned": 3}, format="json")
            self.shoe = r.json()["id"]
            self.cards = [c for c in ALL_CODES for _ in range(6)][:-3]
            self.rng.shuffle(self.cards)
        punter, banker = deal_coup(self.rng, self.cards, STANDARD_TABLEAU, 0.0,
                                   self.report)
        others = [s for s in range(1, 10) if s != self.seat]
        stakes = [{"seat": s, "amount": "20.00"}
                  for s in self.rng.sample(others, k=2)]
        # House rule tie_rule "stay": after a tie its stakes stay on the table
        # (drawn above either way: the same cards and seats as before it).
        return {"punter": punter, "banker": banker,
                "stakes": self.staying or stakes}

    def post_coup(self, body: dict, key: str):
        r = self.client.post(f"/api/v1/shoes/{self.shoe}/coups/", body,
                             format="json", HTTP_IDEMPOTENCY_KEY=key)
        self.staying = staying(r)
        return r

    def open_turn(self, seat: int):
        """The bank was lost: `seat` opens the next banker turn."""
        self.seat = seat
        return self.client.post(f"/api/v1/sessions/{self.session}/turns/",
                                {"seat": seat, "bank": "100.00"}, format="json")


def staying(r) -> list | None:
    """After a tie (house rule tie_rule "stay", the default), the stakes of
    the coup answered in `r` that were covered, as placed, for the next coup."""
    if r.status_code != 201:
        return None
    body = r.json()
    if body["outcome"] != "tie":
        return None
    return [{"seat": s["seat"], "amount": s["amount"]} for s in body["stakes"]
            if s["seat"] is not None and s["covered"] != "0.00"] or None

