"""The pad's prompt and the engine agree on what comes next, on every cell.

test_guidance_parity.py compares the page's judgement of a coup as dealt;
this one compares what the page ASKS FOR while the coup is being dealt: the
highlighted slot, the guidance's last line ("Next card: ...", "All cards in:
save the coup"), the two "Next card to ..." toggles and whether Save is the
next step. Cards go in through the page's keypad handler and the toggles are
clicked, as a croupier would; the expected step comes from tables.chemmy
(the punter's rule and the table's tableau) through a small oracle below.

Every banker total 0-7 is played against every column (punter stood, third
card 0-9): a punter who must draw (0-4) and a punter on 5 who draws; a punter
who must stand (6, 7) and a punter on 5 who stands; in an optional cell the
banker both draws and stands; after a stand one more card can still be forced
(a false draw, recorded as it happened).
"""

from __future__ import annotations

import pytest
from django.utils import translation
from playwright.sync_api import expect

from tables import chemmy
from tables.chemmy import Action, Choice, Prescriptions, Tableau, cell_key
from tables.tablet.state import js_strings

from .conftest import TRANSACTIONAL, card, recorded
from .test_guidance_parity import open_coup_screen, rank_for, two_cards

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

SUITS = "SHDC"
ORDER = [("p", 0), ("b", 0), ("p", 1), ("b", 1)]


def punter_rule(p2: int, house: Prescriptions | None = None) -> Action:
    """The punter's rule on his two-card total, the house's choice on 5."""
    rule = chemmy.punter_action(p2)
    if rule is Action.OPTIONAL and house is not None:
        rule = {Choice.DRAW: Action.DRAW, Choice.STAND: Action.STAND}.get(
            house.punter_five, rule)
    return rule


def banker_rule(tableau: Tableau, b2: int, third, house=None) -> Action:
    """The tableau's cell, the house's choice where it prescribes one."""
    cell = tableau.banker_action(b2, third)
    if cell is Action.OPTIONAL and house is not None:
        wanted = house.banker.get(cell_key(b2, third), Choice.FREE)
        cell = {Choice.DRAW: Action.DRAW, Choice.STAND: Action.STAND}.get(
            wanted, cell)
    return cell


def engine_next(punter, banker, tableau: Tableau, *, stood=False, forced=None,
                house: Prescriptions | None = None):
    """(slot, kind) the rules ask for next, from the engine's functions (and
    the house's prescriptions: a prescribed cell is a draw or a stand)."""
    hands = {"p": punter, "b": banker}
    for side, i in ORDER:
        if len(hands[side]) <= i:
            return f"{side}{i + 1}", "deal"
    if forced and len(hands[forced[0]]) < 3:
        return forced, "deal"
    p2, b2 = chemmy.hand_total(punter[:2]), chemmy.hand_total(banker[:2])
    if p2 >= 8 or b2 >= 8 or len(banker) == 3:
        return None, "complete"
    if len(punter) == 2 and not stood:
        rule = punter_rule(p2, house)
        if rule is Action.DRAW:
            return "p3", "deal"
        if rule is Action.OPTIONAL:
            return "p3", "punter_choice"
    third = chemmy.point(punter[2]) if len(punter) == 3 else None
    cell = banker_rule(tableau, b2, third, house)
    if cell is Action.STAND:
        return None, "complete"
    return "b3", "banker_choice" if cell is Action.OPTIONAL else "deal"


def shown(slot, kind, words) -> dict:
    """What the page must show for that step."""
    if kind == "complete":
        prompt = words["coup_complete"]
    elif kind in ("punter_choice", "banker_choice"):
        prompt = words[f"next_{kind}"]
    else:
        prompt = words["deal_next"].format(slot=words[f"slot_{slot}"])
    return {
        "slot": slot,
        "prompt": prompt,
        "to_punter": slot == "p3",
        "to_banker": slot == "b3",
        "save": "save" if kind in ("complete", "banker_choice") else "card",
    }


class Script:
    """One coup dealt step by step, with what the page must show after each."""

    def __init__(self, tableau: Tableau, words: dict, house=None):
        self.tableau, self.words, self.house = tableau, words, house
        self.punter: list[str] = []
        self.banker: list[str] = []
        self.stood = False
        self.forced: str | None = None
        self.actions: list[list] = []
        self.expected: list[dict] = []

    def check(self, label: str) -> None:
        slot, kind = engine_next(
            self.punter, self.banker, self.tableau, stood=self.stood,
            forced=self.forced, house=self.house,
        )
        self.actions.append(["read"])
        self.expected.append({"label": label, **shown(slot, kind, self.words),
                              "rules": self.rule_lines()})

    def rule_lines(self) -> list[str]:
        """The guidance's rule lines: the punter's rule, then the banker's
        cell (or that he waits), "(house rule)" where the house prescribes."""
        if len(self.punter) < 2 or len(self.banker) < 2:
            return []
        p2 = chemmy.hand_total(self.punter[:2])
        b2 = chemmy.hand_total(self.banker[:2])
        if p2 >= 8 or b2 >= 8:
            return []
        w = self.words
        names = {Action.DRAW: "_must_draw", Action.OPTIONAL: "_may_choose",
                 Action.STAND: "_must_stand"}
        rule = punter_rule(p2, self.house)
        house = rule is not chemmy.punter_action(p2)
        lines = [w["punter" + names[rule] + ("_house" if house else "")]]
        if len(self.punter) == 3:
            third = chemmy.point(self.punter[2])
        elif len(self.banker) == 3 or self.stood or rule is Action.STAND:
            third = None
        else:
            return [*lines, w["banker_waits"]]
        cell = banker_rule(self.tableau, b2, third, self.house)
        house = cell is not self.tableau.banker_action(b2, third)
        context = (w["punter_stood_on"] if third is None
                   else w["against"].format(value=third))
        return [*lines, w["banker" + names[cell] + ("_house" if house else "")]
                + f" ({b2}, {context})"]

    def card(self, side: str, code: str) -> None:
        (self.punter if side == "p" else self.banker).append(code)
        self.forced = None
        self.actions.append(["card", code])
        self.check(f"after {side} {code}")

    def to(self, side: str) -> None:
        slot = "p3" if side == "punter" else "b3"
        if side == "banker" and len(self.punter) == 2 and not self.stood:
            p2 = chemmy.hand_total(self.punter)
            b2 = chemmy.hand_total(self.banker)
            natural = p2 >= 8 or b2 >= 8
            rule = None if natural else punter_rule(p2, self.house)
            if rule is not None and rule is not Action.STAND:
                self.stood = True  # "next card to banker": the punter stands
            else:
                self.forced = slot
        else:
            self.forced = slot
        self.actions.append(["to", side])
        self.check(f"next card to {side}")


def scripts(tableau: Tableau, words: dict, house=None) -> list[Script]:
    out = []
    k = 0
    five = punter_rule(5, house)
    for b2 in range(8):
        for column in [None, *range(10)]:
            cell = tableau.banker_action(b2, column)
            played = banker_rule(tableau, b2, column, house)
            # the punter's ways to this column: must (0-4 / 6-7) and on 5
            for p2 in ([6 + k % 2, 5] if column is None else [k % 5, 5]):
                k += 1
                s = Script(tableau, words, house)
                s.check("empty pad")
                punter = two_cards(p2, k)
                banker = two_cards(b2, k + 1)
                for code_p, code_b in zip(punter, banker, strict=True):
                    s.card("p", code_p)
                    s.card("b", code_b)
                if column is None and p2 == 5:
                    if five is not Action.STAND:
                        s.to("banker")  # he stands on 5
                elif column is not None:
                    if p2 == 5 and five is Action.STAND:
                        s.to("punter")  # he draws on 5 against the house
                    s.card("p", rank_for(column, k) + SUITS[(k + 2) % 4])
                # an optional cell both ways, prescribed or not
                draws = [False, True] if cell is Action.OPTIONAL else [
                    cell is Action.DRAW
                ]
                for banker_draws in draws:
                    t = Script(tableau, words, house)
                    t.__dict__.update(
                        punter=list(s.punter), banker=list(s.banker),
                        stood=s.stood, actions=list(s.actions),
                        expected=list(s.expected),
                    )
                    if banker_draws:
                        if played is Action.STAND:
                            t.to("banker")  # he draws against the house
                        t.card("b", rank_for((k * 3) % 10, k) + SUITS[(k + 3) % 4])
                    elif cell is Action.STAND:
                        # all cards in; one more card can still be forced
                        t.to("banker")
                        t.card("b", rank_for((k * 3) % 10, k) + SUITS[(k + 3) % 4])
                    out.append(t)
    return out


JS_PLAY = """
(scripts) => {
  const key = (k) => document.dispatchEvent(new KeyboardEvent("keydown", {key: k}));
  const read = () => {
    const target = document.querySelector(".slot.target");
    const next = document.querySelector("#guidance .g-next");
    return {
      slot: target ? target.id.replace("slot-", "") : null,
      prompt: next ? next.textContent : null,
      to_punter:
        document.getElementById("to-punter").getAttribute("aria-pressed") === "true",
      to_banker:
        document.getElementById("to-banker").getAttribute("aria-pressed") === "true",
      save: document.getElementById("save").dataset.next,
      rules: [...document.querySelectorAll("#guidance .g-rule")].map(
        (e) => e.textContent),
    };
  };
  return scripts.map((actions) => {
    window.ChemmyTablet.clearPad();
    const seen = [];
    for (const [what, arg] of actions) {
      if (what === "read") seen.push(read());
      else if (what === "card") { key(arg[0]); key(arg[1]); }
      else document.getElementById(
        arg === "punter" ? "to-punter" : "to-banker").click();
    }
    return seen;
  });
}
"""


def play_and_compare(page, tableau: Tableau, house=None) -> int:
    with translation.override("en"):
        words = js_strings()
    all_scripts = scripts(tableau, words, house)
    got = page.evaluate(JS_PLAY, [s.actions for s in all_scripts])
    checked = 0
    for s, seen in zip(all_scripts, got, strict=True):
        assert len(seen) == len(s.expected)
        for want, saw in zip(s.expected, seen, strict=True):
            label = want["label"]
            assert saw == {k: v for k, v in want.items() if k != "label"}, (
                s.punter, s.banker, label)
            checked += 1
    return checked


def test_the_prompt_follows_the_engine_on_every_cell(
    page, live_server, ready_turn, croupier
):
    shoe, _ = ready_turn
    open_coup_screen(page, live_server, croupier, shoe)
    checked = play_and_compare(page, chemmy.STANDARD_TABLEAU)
    # 88 cells x 2 ways in, optional cells both ways, each read 6-9 times: 1,310 reads
    assert checked > 1200


def test_a_house_tableau_prompts_from_its_own_cells(
    page, live_server, manager, croupier
):
    from decimal import Decimal

    from tables.services import banker_turn_open, session_open, shoe_open, table_create

    table = table_create(
        user=manager, name="Punto", seats=7, tableau_version="punto-banco-1"
    )
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier)
    banker_turn_open(session=session, user=croupier, seat=2, bank=Decimal("500"))
    open_coup_screen(page, live_server, croupier, shoe)
    assert play_and_compare(page, chemmy.PUNTO_BANCO_TABLEAU) > 1200


def house_table(manager, croupier, name, **rules):
    from decimal import Decimal

    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    table = table_create(user=manager, name=name, seats=7)
    house_rules_change(table=table, user=manager, reason="prescribed cells", **rules)
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier)
    banker_turn_open(session=session, user=croupier, seat=2, bank=Decimal("500"))
    return shoe


def every_optional_cell(tableau: Tableau, first: Choice) -> dict[str, str]:
    """Every optional banker cell prescribed, draw and stand in turn."""
    other = Choice.STAND if first is Choice.DRAW else Choice.DRAW
    cells = [cell_key(b, t) for b in range(8) for t in [None, *range(10)]
             if tableau.banker_action(b, t) is Action.OPTIONAL]
    assert len(cells) >= 2  # 3/9 and 5/4 in the standard tableau
    return {key: (first if i % 2 == 0 else other).value
            for i, key in enumerate(cells)}


@pytest.mark.parametrize("first, five", [(Choice.DRAW, Choice.STAND),
                                         (Choice.STAND, Choice.DRAW)])
def test_the_prompt_plays_every_prescribed_cell(
    page, live_server, manager, croupier, first, five
):
    """A house that prescribes every optional cell (draw and stand in turn,
    the other way round in the second run) and the punter's 5: the pad asks
    for the prescribed card or says all cards are in, and the guidance says
    "must draw (house rule)" / "must stand (house rule)", on every cell."""
    tableau = chemmy.STANDARD_TABLEAU
    banker = every_optional_cell(tableau, first)
    shoe = house_table(manager, croupier, f"Prescribed {first}",
                       punter_five=five.value, banker_prescriptions=banker)
    house = Prescriptions(punter_five=five, banker=banker)
    open_coup_screen(page, live_server, croupier, shoe)
    assert play_and_compare(page, tableau, house) > 1200


def test_the_oracle_can_disagree_with_the_page():
    """The oracle is not the page's logic copied: a stand cell asks for
    nothing more, a draw cell for the banker's third card."""
    t = chemmy.STANDARD_TABLEAU
    assert engine_next(["2H", "KS", "5D"], ["6C", "QH"], t) == (None, "complete")
    assert engine_next(["2H", "KS", "7D"], ["6C", "QH"], t) == ("b3", "deal")
    assert engine_next(["5H", "KS"], ["6C", "QH"], t, stood=True) == (
        None, "complete")
    assert engine_next(["5H", "KS"], ["6C", "QH"], t) == ("p3", "punter_choice")
    assert engine_next(["2H", "KS", "9D"], ["3C", "QH"], t) == ("b3", "banker_choice")
    draw = Prescriptions(banker={"3/9": "draw"}, punter_five="stand")
    assert engine_next(["2H", "KS", "9D"], ["3C", "QH"], t, house=draw) == (
        "b3", "deal")
    stand = Prescriptions(banker={"3/9": "stand"}, punter_five="draw")
    assert engine_next(["2H", "KS", "9D"], ["3C", "QH"], t, house=stand) == (
        None, "complete")
    assert engine_next(["5H", "KS"], ["6C", "QH"], t, house=stand) == ("p3", "deal")
    assert engine_next(["5H", "KS"], ["6C", "QH"], t, house=draw) == (
        None, "complete")


def deal(tap, page, *codes):
    for code in codes:
        rank, suit = card(page, code)
        tap(rank)
        tap(suit)


def test_after_a_stand_the_pad_says_all_cards_are_in(
    page, live_server, signed_in, ready_turn, croupier, taps
):
    """The issue's case: banker 6 against a punter's third card 5 stands.
    The pad says all cards are in, highlights no slot, lights neither toggle
    and makes Save the next step; the whole coup takes 14 taps at most."""
    from tables.models import Coup

    shoe, _ = ready_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    save = page.get_by_role("button", name="Save coup")
    expect(save).to_be_visible()
    taps(page.get_by_role("button", name="Seat 3", exact=True))
    taps(page.get_by_role("button", name="Amount 200", exact=True))
    # punter 3 + K = 3 draws a 5 (8); banker 6 + Q = 6 must stand against a 5
    deal(taps, page, "3H", "6S", "KD", "QC", "5C")
    guidance = page.get_by_role("status", name="Guidance")
    expect(guidance).to_contain_text("Banker must stand (6, against a 5)")
    expect(guidance.locator(".g-next")).to_have_text("All cards in: save the coup")
    expect(guidance).not_to_contain_text("Next card")
    expect(page.locator(".slot.target")).to_have_count(0)
    expect(page.get_by_role("button", name="Next card to banker")).to_have_attribute(
        "aria-pressed", "false"
    )
    expect(save).to_have_class("btn btn-primary btn-save ready")
    # a rank key now says what to do instead of dealing a sixth card
    page.keyboard.press("7")
    expect(page.locator("#alert")).to_contain_text("All cards are in: save the coup.")
    taps(save)
    recorded(page, 1)
    assert taps.count <= 14, taps.count
    assert taps.on_page() == taps.count
    coup = Coup.objects.get()
    assert coup.banker_cards == ["6S", "QC"] and coup.finding_count == 0


def test_the_punter_stands_on_5_then_the_tableau_decides(
    page, live_server, signed_in, ready_turn, croupier
):
    shoe, _ = ready_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    guidance = page.get_by_role("status", name="Guidance")
    for code in ("5H", "7S", "KD", "QC"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    expect(guidance.locator(".g-next")).to_have_text(
        "Punter on 5: deal his third card, or tap “Next card to banker” if he stands"
    )
    expect(page.locator("#slot-p3")).to_have_class("slot slot-third target")
    page.get_by_role("button", name="Next card to banker").click()
    # banker 7 stands whatever: all cards in, nothing lit
    expect(guidance.locator(".g-next")).to_have_text("All cards in: save the coup")
    expect(page.locator(".slot.target")).to_have_count(0)
    # Undo takes back the stand: the punter may draw again
    page.get_by_role("button", name="Undo").click()
    expect(page.locator("#slot-p3")).to_have_class("slot slot-third target")
