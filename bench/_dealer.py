"""How a croupier's tablet plays a table's house rules: one place for every
bench that records coups (load.py, faults.py, bench_floor.py, bench_http.py,
profile_coup.py, count_coup.py). Not a benchmark itself.

`House` is a table's rules as the API gives them to a croupier
(GET /api/v1/tables/<id>/rules/ and /api/v1/tableaux/), reduced to what
changes what a tablet must send (docs/rules.md, "House rules"):

- decks: the shoe the tablet deals from (a code seen more often than the shoe
  has decks is the critical finding card_count_exceeded);
- the tableau, the punter's 5 and the banker's optional cells: the cards
  dealt (a choice against the house's prescription is a house_choice finding,
  one against the tableau a false_draw, and either may hold the shoe under
  hold on error);
- minimum banco: the opening bank of a turn, and the minimum stake (a tenth);
- tie: under "stay" the next coup of the turn carries every stake a tie
  left on the table, raised or as it was, or the server refuses it (400
  naming the seat); under "returned" stakes are placed afresh;
- cover and maximum bank: what a tie leaves on the table is each stake's
  covered part (never its declined part, nor a bank above the maximum); the
  answer to the coup says it (`stays`). Under "all or nothing" one stake is
  always the minimum stake, so that some stake fits the bank (`stakes`).

`ApiDealer` plays one table in this process through DRF's test client (the
coups of profile_coup.py and count_coup.py).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

ALL_CODES = tuple(r + s for s in "SHDC" for r in "A23456789TJQK")
STAKE_STEPS = (1, 2, 2, 3, 5, 5, 10, 20)  # x the minimum stake, as in simulation
CENT = Decimal("0.01")

# request(method, path) -> (status, parsed JSON): a tablet's, or a test client's
Request = Callable[[str, str], tuple[int, object]]


@functools.cache
def _chemmy():
    """tables.chemmy, imported at first use (a bench puts the project on
    sys.path after importing this module), then at no cost per coup (the
    instructions of count_coup.py include the dealer's)."""
    import tables.chemmy

    return tables.chemmy


def _tableau(rows: Mapping | None = None, version: str = "chemmy-standard-1"):
    from tables.chemmy import STANDARD_TABLEAU, Tableau

    if rows is None:
        return STANDARD_TABLEAU
    return Tableau.from_dict({"version": version, "rows": rows})


@dataclass(frozen=True)
class House:
    """The house rules in force at a table, as a tablet plays them. The
    defaults are the house rules' defaults (docs/rules.md)."""

    decks: int = 6
    minimum_banco: Decimal = Decimal("100.00")
    maximum_bank: Decimal | None = None
    tie_rule: str = "stay"
    cover_rule: str = "partial"
    punter_five: str = "free"
    banker_prescriptions: Mapping[str, str] = field(default_factory=dict)
    tableau: object = field(default_factory=_tableau)  # tables.chemmy.Tableau
    seats: int = 9

    @classmethod
    def read(cls, request: Request, table: int) -> House:
        """What a croupier's tablet reads of its table: the version in force
        and its tableau's rows. Raises RuntimeError naming what failed."""
        status, body = request("GET", f"/api/v1/tables/{table}/")
        if status != 200:
            raise RuntimeError(f"GET table {table}: {status} {body}")
        seats = body["seats"]
        status, body = request("GET", f"/api/v1/tables/{table}/rules/")
        if status != 200:
            raise RuntimeError(f"GET table {table}'s rules: {status} {body}")
        rules = next(v for v in body["versions"] if v["version"] == body["in_force"])
        status, tableaux = request("GET", "/api/v1/tableaux/")
        if status != 200:
            raise RuntimeError(f"GET tableaux: {status} {tableaux}")
        version = rules["tableau_version"]
        rows = next(t["rows"] for t in tableaux if t["version"] == version)
        maximum = rules["maximum_bank"]
        return cls(
            decks=rules["decks"],
            minimum_banco=Decimal(rules["minimum_banco"]),
            maximum_bank=None if maximum is None else Decimal(maximum),
            tie_rule=rules["tie_rule"],
            cover_rule=rules["cover_rule"],
            punter_five=rules["punter_five"],
            banker_prescriptions=dict(rules["banker_prescriptions"]),
            tableau=_tableau(rows, version),
            seats=seats,
        )

    @property
    def minimum_stake(self) -> Decimal:
        return (self.minimum_banco / 10).quantize(CENT)

    @property
    def opening_bank(self) -> str:
        """A new banker's bank: the minimum banco."""
        return f"{self.minimum_banco:.2f}"

    def new_shoe(self, rng: random.Random, burned: int = 0) -> list[str]:
        """The house's decks shuffled; `burned` cards off the top (cards are
        dealt from the end)."""
        cards = [c for c in ALL_CODES for _ in range(self.decks)]
        rng.shuffle(cards)
        if burned:
            del cards[-burned:]
        return cards

    def deal(self, rng: random.Random, cards: list[str]) -> tuple[list, list]:
        """One coup from the end of the shoe by the punter's rule and the
        house's tableau, an optional cell played as the house prescribes it,
        else a free choice. A free house draws the rng as
        tables.simulation.deal_coup does (the same coups from the same seed)."""
        c = _chemmy()
        p = [cards.pop(), None]
        b = [cards.pop(), None]
        p[1], b[1] = cards.pop(), cards.pop()
        pt, bt = c.hand_total(p), c.hand_total(b)
        if pt >= 8 or bt >= 8:
            return p, b
        third = None
        if self._draws(rng, c.punter_action(pt), self.punter_five):
            p.append(cards.pop())
            third = c.point(p[2])
        wanted = self.banker_prescriptions.get(c.cell_key(bt, third), "free")
        if self._draws(rng, self.tableau.banker_action(bt, third), wanted):
            b.append(cards.pop())
        return p, b

    @staticmethod
    def _draws(rng: random.Random, action, wanted: str) -> bool:
        actions = _chemmy().Action
        if action != actions.OPTIONAL:
            return action == actions.DRAW
        if wanted != "free":
            return wanted == "draw"
        return rng.random() < 0.5

    def stakes(
        self, rng: random.Random, *, banker_seat: int | None = None, most: int = 3
    ) -> list[dict]:
        """Fresh stakes, 1 to `most`, each a few minimum stakes: on seats other
        than the banker's, or (banker_seat None: a tablet that does not follow
        the bank round the table) from standing players p0, p1, ...

        Under cover "all or nothing" the first is the minimum stake: a bank
        never falls below it (each coup covers at least that much), so some
        stake always fits, where stakes all larger than the bank would be
        declined whole and leave a bank of 0 that no coup may play."""
        amounts = [
            f"{self.minimum_stake * rng.choice(STAKE_STEPS):.2f}"
            for _ in range(rng.randint(1, most))
        ]
        if self.cover_rule == "all_or_nothing":
            amounts[0] = f"{self.minimum_stake:.2f}"
        if banker_seat is None:
            return [{"standing": f"p{i}", "amount": a} for i, a in enumerate(amounts)]
        others = [s for s in range(1, self.seats + 1) if s != banker_seat]
        seats = rng.sample(others, k=min(len(amounts), len(others)))
        return [{"seat": s, "amount": a} for s, a in zip(seats, amounts, strict=False)]

    def stays(self, answer: dict) -> list[dict] | None:
        """What the coup answered in `answer` (the API's coup) leaves on the
        table for the turn's next coup: under tie "stay", after a tie, each
        stake's covered part, raised to the minimum stake where the cover
        left less (a smaller stake would be refused); else None."""
        if self.tie_rule != "stay" or answer.get("outcome") != "tie":
            return None
        out = []
        for s in answer["stakes"]:
            covered = Decimal(s["covered"])
            if covered <= 0:
                continue
            who = {"seat": s["seat"]} if s["seat"] is not None else {
                "standing": s["standing"]}
            out.append({**who, "amount": f"{max(covered, self.minimum_stake):.2f}"})
        return out or None


class ApiDealer:
    """One table through DRF's test client: two stakes a coup on seats other
    than the banker's, dealt from a shuffled shoe, a new shoe opened at the
    cut card, a tie's stakes carried as the house rules say."""

    def __init__(self, client, session_id: int, shoe_id: int, *, seed: int = 3,
                 house: House | None = None):
        self.client, self.session = client, session_id
        self.shoe, self.seat, self.cards = shoe_id, 1, []
        self.rng = random.Random(seed)
        self.house = house or House()
        self.staying = None  # the stakes a tie left on the table

    def next_coup(self) -> dict:
        """The next coup's body: two stakes on seats other than the banker's."""
        if len(self.cards) < 7:  # the cut card: close this shoe, open the next
            self.client.post(f"/api/v1/shoes/{self.shoe}/close/")
            r = self.client.post(f"/api/v1/sessions/{self.session}/shoes/",
                                 {"burned": 3}, format="json")
            self.shoe = r.json()["id"]
            self.cards = [c for c in ALL_CODES for _ in range(self.house.decks)][:-3]
            self.rng.shuffle(self.cards)
        punter, banker = self.house.deal(self.rng, self.cards)
        others = [s for s in range(1, self.house.seats + 1) if s != self.seat]
        amount = f"{2 * self.house.minimum_stake:.2f}"
        stakes = [{"seat": s, "amount": amount}
                  for s in self.rng.sample(others, k=2)]
        # Drawn above either way: the same cards and seats as before the rule.
        return {"punter": punter, "banker": banker,
                "stakes": self.staying or stakes}

    def post_coup(self, body: dict, key: str):
        r = self.client.post(f"/api/v1/shoes/{self.shoe}/coups/", body,
                             format="json", HTTP_IDEMPOTENCY_KEY=key)
        self.staying = self.house.stays(r.json()) if r.status_code == 201 else None
        return r

    def open_turn(self, seat: int):
        """The bank was lost: `seat` opens the next banker turn."""
        self.seat = seat
        return self.client.post(f"/api/v1/sessions/{self.session}/turns/",
                                {"seat": seat, "bank": self.house.opening_bank},
                                format="json")
