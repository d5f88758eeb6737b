"""The page's guidance and the engine agree on every cell.

The coup screen judges a coup in the browser (so it works offline) from the
tableau the server put in the page. Here every banker cell (8 totals x 11
columns) is played both ways (draw and stand) against every punter two-card
total, plus every natural, in the page's own JavaScript, and compared with
tables.chemmy field by field, finding messages included (a card in them as the
pad labels it). A punto-banco table
proves the page reads the table's tableau rather than a copy of its own.
Coverage and settlement are compared on 800 random stake sets, under every
house-rule variant (rounding mode, cover rule, maximum bank).
"""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from tables import chemmy
from tables.chemmy import Tableau

from .conftest import TRANSACTIONAL

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

SUITS = "SHDC"


def rank_for(value: int, k: int = 0) -> str:
    """A rank worth ``value`` points (0 is a ten or a picture)."""
    if value == 0:
        return "TJQK"[k % 4]
    return "A23456789"[value - 1]


def two_cards(total: int, k: int) -> list[str]:
    # first card carries the total, the second is worth 0
    return [rank_for(total, k) + SUITS[k % 4], rank_for(0, k + 1) + SUITS[(k + 1) % 4]]


def cases() -> list[tuple[list[str], list[str]]]:
    out = []
    k = 0
    for p2 in range(10):
        for b2 in range(10):
            for column in [None, *range(10)]:
                for banker_draws in (False, True):
                    k += 1
                    punter = two_cards(p2, k)
                    if column is not None:
                        punter.append(rank_for(column, k) + SUITS[(k + 2) % 4])
                    banker = two_cards(b2, k + 1)
                    if banker_draws:
                        banker.append(rank_for((k * 7) % 10, k) + SUITS[(k + 3) % 4])
                    out.append((punter, banker))
    return out


JS_JUDGE = """
([cases, tableau]) => {
  const T = tableau || window.ChemmyTablet.tableau();
  return cases.map(([p, b]) => {
    const v = Chemmy.evaluate(p, b, T);
    const totals = {p: Chemmy.total(p.slice(0, 2)), b: Chemmy.total(b.slice(0, 2))};
    const word = (f) => window.ChemmyTablet.findingText(f, totals);
    v.findings = v.findings.map((f) => Object.assign({}, f, {message: word(f)}));
    return v;
  });
}
"""

JS_CELLS = """
() => {
  const T = window.ChemmyTablet.tableau();
  const out = {punter: [], banker: {}};
  for (let t = 0; t <= 7; t++) out.punter.push(Chemmy.punterAction(t));
  for (let b = 0; b <= 7; b++) {
    out.banker[b] = [Chemmy.bankerAction(T, b, null)];
    for (let v = 0; v <= 9; v++) out.banker[b].push(Chemmy.bankerAction(T, b, v));
  }
  return out;
}
"""


def open_coup_screen(page, live_server, user, shoe):
    from .conftest import sign_in_cookie

    sign_in_cookie(page, live_server, user)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    page.wait_for_function("() => window.ChemmyTablet !== undefined", polling=100)


def check_cells(page, tableau: Tableau) -> None:
    cells = page.evaluate(JS_CELLS)
    assert cells["punter"] == [chemmy.punter_action(t).value for t in range(8)]
    for b in range(8):
        expected = [tableau.banker_action(b, None).value] + [
            tableau.banker_action(b, v).value for v in range(10)
        ]
        assert cells["banker"][str(b)] == expected, f"banker total {b}"


def as_the_tablet_words_it(verdict: dict) -> dict:
    """The engine's messages, but for a card: the tablet writes it as its pad
    labels it ("6♥", "K♥"), never by its code ("6H", "KH")."""
    from django.utils import translation

    from tables.cards import card_label

    with translation.override("en"):
        for f in verdict["findings"]:
            if "card" in f:
                code = f["card"]
                f["message"] = f["message"].replace(
                    f"({code})", f"({card_label(code)})"
                )
    return verdict


def check_table(page, tableau: Tableau) -> int:
    check_cells(page, tableau)
    all_cases = cases()
    js = page.evaluate(JS_JUDGE, [all_cases, None])
    assert len(js) == len(all_cases)
    for (punter, banker), got in zip(all_cases, js, strict=True):
        want = as_the_tablet_words_it(
            chemmy.evaluate(punter, banker, tableau=tableau).to_dict()
        )
        assert got == want, (punter, banker)
    return len(all_cases)


def test_every_cell_agrees_with_the_engine(page, live_server, ready_turn, croupier):
    shoe, _ = ready_turn
    open_coup_screen(page, live_server, croupier, shoe)
    n = check_table(page, chemmy.STANDARD_TABLEAU)
    # 10 punter totals x 10 banker totals x 11 punter columns x draw/stand
    assert n == 2200
    check_coverage_and_settlement(page)


def test_a_house_tableau_is_read_from_the_page(page, live_server, manager, croupier):
    from tables.services import banker_turn_open, session_open, shoe_open, table_create

    table = table_create(
        user=manager, name="Punto", seats=7, tableau_version="punto-banco-1"
    )
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier)
    banker_turn_open(session=session, user=croupier, seat=2, bank=Decimal("500"))
    open_coup_screen(page, live_server, croupier, shoe)
    assert page.evaluate("window.ChemmyTablet.tableau().version") == "punto-banco-1"
    check_cells(page, chemmy.PUNTO_BANCO_TABLEAU)
    # the cells where punto banco differs: banker 3 v 9, banker 5 v 4
    verdict = page.evaluate(
        "() => Chemmy.evaluate(['2H', 'KS', '9D'], ['3C', 'QH'], "
        "window.ChemmyTablet.tableau())"
    )
    assert verdict["findings"][0]["code"] == "false_draw"  # must draw there


JS_HOUSE = """
([cases, prescriptions]) => {
  const T = window.ChemmyTablet.tableau();
  return cases.map(([p, b]) => {
    const v = Chemmy.evaluate(p, b, T);
    return Chemmy.houseFindings(v, prescriptions).map((f) =>
      Object.assign({}, f, {message: window.ChemmyTablet.findingText(f, null)}));
  });
}
"""


@pytest.mark.parametrize("five, cells", [
    ("draw", {"3/9": "draw", "5/4": "stand"}),
    ("stand", {"3/9": "stand", "5/4": "draw"}),
])
def test_the_house_choice_agrees_with_the_engine(
    page, live_server, ready_turn, croupier, five, cells
):
    """Every case judged against a house that prescribes the punter's 5 and
    every optional cell: the page's house_choice findings are the engine's,
    field by field, message included."""
    shoe, _ = ready_turn
    open_coup_screen(page, live_server, croupier, shoe)
    house = chemmy.Prescriptions(punter_five=five, banker=cells)
    all_cases = cases()
    got = page.evaluate(JS_HOUSE, [all_cases, house.to_dict()])
    flagged = 0
    for (punter, banker), js in zip(all_cases, got, strict=True):
        verdict = chemmy.evaluate(punter, banker, tableau=chemmy.STANDARD_TABLEAU)
        want = [f.to_dict() for f in chemmy.house_findings(verdict, house)]
        assert js == want, (punter, banker)
        flagged += len(want)
    # the punter's 5 and both banker cells are played against the house
    assert {f["house_rule"] for js in got for f in js} == {"punter_five", *cells}
    assert flagged > 20


JS_COVER = """
(cases) => cases.map((c) => {
  const stakes = c.stakes.map((s) => ({
    seat: s.seat, standing: s.standing, announcement: s.announcement,
    amount: Chemmy.toCents(s.amount)}));
  const bank = Chemmy.toCents(c.bank);
  const top = c.maximum_bank === null ? null : Chemmy.toCents(c.maximum_bank);
  const cov = Chemmy.cover(stakes, bank, c.banker_seat, c.seats, c.cover, top);
  const st = Chemmy.settle(c.outcome, cov, c.rate, Chemmy.toCents(c.unit), c.rounding);
  return {
    covered: Chemmy.centsToString(cov.covered),
    garage: Chemmy.centsToString(cov.garage),
    stakes: cov.stakes.map((s) => [Chemmy.centsToString(s.covered),
                                   Chemmy.centsToString(s.declined)]),
    punter_index: cov.punter_index,
    commission: Chemmy.centsToString(st.commission),
    bank_after: Chemmy.centsToString(st.bank_after),
    payouts: st.payouts.map(Chemmy.centsToString),
  };
})
"""


def random_case(rng: random.Random) -> dict:
    seats = rng.randint(5, 12)
    banker = rng.randint(1, seats)
    bank = Decimal(rng.choice([100, 250, 1000, 1365, 2500, 77]) * rng.randint(1, 9))
    others = [s for s in range(1, seats + 1) if s != banker]
    stakes = []
    for seat in rng.sample(others, rng.randint(1, min(5, len(others)))):
        amount = Decimal(rng.choice([10, 20, 50, 100, 150, 200, 500, 1000]))
        stakes.append({"seat": seat, "standing": None, "amount": amount,
                       "announcement": "none"})
    if rng.random() < 0.3:
        stakes.append({"seat": None, "standing": "standing 1",
                       "amount": Decimal(rng.choice([10, 100, 300])),
                       "announcement": "none"})
    pick = rng.random()
    if pick < 0.15:
        stakes[0].update(amount=bank, announcement="banco_solo")
    elif pick < 0.3 and bank % 2 == 0:
        stakes[0].update(amount=bank / 2, announcement="banco_avec")
    elif pick < 0.4 and len(stakes) > 1 and bank % 2 == 0:
        stakes[0].update(amount=bank / 2, announcement="banco_deux")
        stakes[1].update(amount=bank / 2, announcement="banco_deux")
    return {
        "seats": seats,
        "banker_seat": banker,
        "bank": bank,
        "stakes": stakes,
        "outcome": rng.choice(["banker", "punter", "tie"]),
        "rate": rng.choice([Decimal("0.05"), Decimal("0.0500"), Decimal("0.025"),
                            Decimal("0")]),
        "unit": rng.choice([Decimal("0.10"), Decimal("0.01"), Decimal("1.00"),
                            Decimal("0.50")]),
        # the house-rule variants (docs/rules.md, "House rules")
        "rounding": rng.choice(["half_up", "half_even", "down"]),
        "cover": rng.choice(["partial", "all_or_nothing"]),
        "maximum_bank": rng.choice([None, None, Decimal(rng.randint(1, 30) * 100)]),
    }


def python_answer(c: dict) -> dict:
    coverage = chemmy.cover_stakes(
        [chemmy.StakeIn(amount=s["amount"], seat=s["seat"], standing=s["standing"],
                        announcement=chemmy.Announcement(s["announcement"]))
         for s in c["stakes"]],
        bank=c["bank"], banker_seat=c["banker_seat"], seats=c["seats"],
        minimum_banco=Decimal("100"), cover=c["cover"],
        maximum_bank=c["maximum_bank"],
    )
    st = chemmy.settle(chemmy.Outcome(c["outcome"]), coverage,
                       commission_rate=c["rate"], commission_unit=c["unit"],
                       rounding=chemmy.rounding_mode(c["rounding"]))
    return {
        "covered": f"{coverage.covered:.2f}",
        "garage": f"{coverage.garage:.2f}",
        "stakes": [[f"{s.covered:.2f}", f"{s.declined:.2f}"] for s in coverage.stakes],
        "punter_index": coverage.punter_index,
        "commission": f"{st.commission:.2f}",
        "bank_after": f"{st.bank_after:.2f}",
        "payouts": [f"{p:.2f}" for p in st.payouts],
    }


def check_coverage_and_settlement(page):
    rng = random.Random(20240601)
    picked = []
    while len(picked) < 800:
        c = random_case(rng)
        try:
            want = python_answer(c)
        except chemmy.CoupError:
            continue  # the engine refuses it; the server would answer 400
        picked.append((c, want))

    def js_form(c):
        top = c["maximum_bank"]
        return {**c, "bank": str(c["bank"]), "rate": str(c["rate"]),
                "unit": str(c["unit"]),
                "maximum_bank": None if top is None else str(top),
                "stakes": [{**s, "amount": f"{s['amount']:.2f}"} for s in c["stakes"]]}

    got = page.evaluate(JS_COVER, [js_form(c) for c, _ in picked])
    for (c, want), js in zip(picked, got, strict=True):
        assert js == want, c
