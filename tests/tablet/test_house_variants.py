"""The coup screen plays the session's own house rules (docs/rules.md, "House
rules"): its result follows the cover rule, the maximum bank and the levy's
rounding mode as the server settles them, and a shoe held by a critical
finding refuses the next coup in the croupier's words before it is sent."""

from __future__ import annotations

from decimal import Decimal

import pytest
from playwright.sync_api import expect

from tables.models import Coup

from .conftest import TRANSACTIONAL, card, recorded

pytestmark = [pytest.mark.browser, TRANSACTIONAL]


def deal(page, *codes):
    for code in codes:
        rank, suit = card(page, code)
        rank.click()
        suit.click()


def stake(page, seat: int, amount: int):
    page.get_by_role("button", name=f"Seat {seat}", exact=True).click()
    page.get_by_role("button", name=f"Amount {amount}", exact=True).click()


def open_house(manager, croupier, **rules):
    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    table = table_create(user=manager, name="Club")
    house_rules_change(table=table, user=manager, reason="the club's rules", **rules)
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("1000"))
    return shoe


def test_the_result_follows_cover_maximum_and_rounding(
    page, live_server, signed_in, manager, croupier
):
    """Bank 1,000 under a maximum of 600: 400 garaged first. All or nothing:
    seat 2's 500 is covered, seat 3's 200 does not fit in the 100 left and is
    declined whole, seat 4's 10 is covered: 510 at risk. The levy rounds down
    to whole units: 5 % of 510 is 25.50, so 25."""
    shoe = open_house(manager, croupier, cover_rule="all_or_nothing",
                      maximum_bank=Decimal("600.00"), commission_rounding="down",
                      commission_unit=Decimal("1.00"))
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 2, 500)
    stake(page, 3, 200)
    stake(page, 4, 10)
    deal(page, "2H", "9S", "KD", "QC")  # punter 2, banker 9: a natural, he wins
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    result = page.get_by_label("Last coup")
    expect(result).to_contain_text("Covered (at risk)510")
    expect(result).to_contain_text("Garage (withdrawn by the banker)490")
    expect(result).to_contain_text("Commission25")
    expect(result).to_contain_text("Bank carried forward995")
    coup = Coup.objects.get(shoe=shoe, seq=1)
    assert (coup.covered, coup.garage, coup.commission, coup.bank_after) == (
        Decimal("510.00"), Decimal("490.00"), Decimal("25.00"), Decimal("995.00"))
    assert [s.covered for s in coup.stakes.order_by("position")] == [
        Decimal("500.00"), Decimal("0.00"), Decimal("10.00")]


def test_a_held_shoe_refuses_the_next_coup_in_words(
    page, live_server, signed_in, manager, croupier, as_user
):
    shoe = open_house(manager, croupier, hold_on_error=True)
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", {
        "punter": ["2S", "3H"], "banker": ["9C", "KD"], "declared_bank": "900.00",
        "stakes": [{"seat": 2, "amount": "100.00"}]}, format="json")
    assert r.status_code == 201
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    # issue 24, item 3: said at once, the pad locked, nothing can be sent
    stop = page.locator("#stopped")
    expect(stop.locator("#stopped-text")).to_have_text(
        "Play is stopped at this shoe: coup 1 has a finding that stops play "
        "(house rule: hold on error). Call the pit boss: he releases the shoe, "
        "then this screen unlocks.")
    expect(stop.locator("#stopped-findings")).to_have_text(
        "The croupier declared a bank of 900; the bank carried forward is "
        "1,000.")  # amounts as the tablet writes them (issue 24, item 8)
    expect(page.get_by_role("button", name="Save coup")).to_be_disabled()
    page.keyboard.press("Enter")
    assert Coup.objects.filter(shoe=shoe).count() == 1  # nothing was sent


@pytest.mark.parametrize("tie_rule, stays", [("stay", True), ("returned", False)])
def test_after_a_tie_the_stakes_stay_or_go_back_as_the_house_plays(
    page, live_server, signed_in, manager, croupier, tie_rule, stays
):
    shoe = open_house(manager, croupier, tie_rule=tie_rule)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 3, 200)
    deal(page, "8H", "8S", "KD", "QC")  # 8 against 8: a tie of naturals
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    note = ("The stakes stay on the table for the next coup." if stays else
            "The stakes go back to the punters: the next coup's stakes are placed "
            "afresh.")
    expect(page.get_by_label("Last coup")).to_contain_text(note)
    seat = page.get_by_role("button", name="Seat 3", exact=True)
    if stays:
        expect(seat).to_contain_text("200")
    else:
        expect(seat).not_to_contain_text("200")


def test_a_tied_stake_is_not_taken_back(page, live_server, signed_in, manager,
                                        croupier, as_user):
    """House rule tie_rule "stay": the server keeps what a tie left on the
    table (a reloaded page pre-fills it), and a tied stake removed or lowered
    is stopped before saving, naming the seat, as the API refuses it."""
    shoe = open_house(manager, croupier, tie_rule="stay")
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", {
        "punter": ["8H", "KD"], "banker": ["8S", "QC"],
        "stakes": [{"seat": 3, "amount": "200.00"}]}, format="json")
    assert r.status_code == 201 and r.json()["outcome"] == "tie"
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    seat = page.get_by_role("button", name="Seat 3", exact=True)
    expect(seat).to_contain_text("200")  # still on the table
    seat.click()
    page.get_by_role("button", name="Remove stake").click()
    stake(page, 4, 100)
    deal(page, "2H", "9S", "KD", "QC")
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#alert")).to_have_text(
        "Seat 3: the stake of 200 stays on the table after the tie. It may be "
        "raised, not taken back.")
    assert Coup.objects.filter(shoe=shoe).count() == 1  # nothing was sent
    stake(page, 3, 200)
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)


def test_a_prescribed_cell_is_guided_and_warned_before_saving(
    page, live_server, signed_in, manager, croupier
):
    """Issue 24, item 1. Banker 3 against a 9 is prescribed a draw and the
    punter's 5 a stand: the guidance says so ("must draw (house rule)"), and
    a stand there (or a draw on 5) is warned before it is saved, as a false
    draw is; recorded as it happened, it carries the house_choice finding."""
    from tables.models import Finding

    shoe = open_house(manager, croupier, punter_five="stand",
                      banker_prescriptions={"3/9": "draw"})
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    guidance = page.get_by_role("status", name="Guidance")
    stake(page, 3, 200)
    deal(page, "2H", "3C", "KS", "QH", "9D")  # punter 2 draws a 9; banker 3
    expect(guidance).to_contain_text("Banker must draw (house rule) (3, against a 9)")
    expect(guidance).not_to_contain_text("may choose")
    expect(guidance.locator(".g-next")).to_have_text("Next card: banker's third card")
    expect(page.locator("#slot-b3")).to_have_class("slot slot-third target")
    page.get_by_role("button", name="Save coup").click()  # he stands
    dialog = page.locator("#confirm")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#confirm-title")).to_have_text("The house rules disagree")
    expect(dialog.locator("#confirm-findings")).to_have_text(
        "Banker stood on 3 against a 9: this house prescribes a draw. "
        "Record it as it happened?")
    assert not Coup.objects.filter(shoe=shoe).exists()  # nothing sent yet
    page.locator("#confirm-record").click()
    recorded(page, 1)
    (finding,) = Finding.objects.filter(coup__shoe=shoe, coup__seq=1)
    assert (finding.code, finding.side) == ("house_choice", "banker")

    # the punter's 5, prescribed a stand: he draws against the house
    stake(page, 3, 200)
    deal(page, "5H", "7C", "KS", "QH")
    expect(guidance).to_contain_text("Punter must stand (house rule)")
    expect(guidance).not_to_contain_text("may choose")
    expect(guidance.locator(".g-next")).to_have_text("All cards in: save the coup")
    page.get_by_role("button", name="Next card to punter").click()
    deal(page, "3D")
    page.get_by_role("button", name="Save coup").click()
    expect(dialog.locator("#confirm-findings")).to_have_text(
        "Punter drew on 5: this house prescribes standing. "
        "Record it as it happened?")
    page.locator("#confirm-record").click()
    recorded(page, 2)
    (finding,) = Finding.objects.filter(coup__shoe=shoe, coup__seq=2)
    assert (finding.code, finding.side) == ("house_choice", "punter")


def test_a_free_cell_still_lets_the_banker_choose(
    page, live_server, signed_in, manager, croupier
):
    """The same cell at a house that prescribes nothing: the banker may
    choose, and a stand is saved without a warning."""
    shoe = open_house(manager, croupier, tie_rule="stay")
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    guidance = page.get_by_role("status", name="Guidance")
    stake(page, 3, 200)
    deal(page, "2H", "3C", "KS", "QH", "9D")
    expect(guidance).to_contain_text("Banker may choose (3, against a 9)")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    assert Coup.objects.get(shoe=shoe).finding_count == 0


def test_hold_on_error_stops_play_at_a_false_draw_when_the_house_says_so(
    page, live_server, signed_in, manager, croupier
):
    """Issue 24, item 2: hold on error with false draws ticked. A normal
    tablet coup with a false draw (the banker draws on 7), recorded as it
    happened, holds the shoe: the next coup is refused before it is sent."""
    from tables.models import Shoe

    shoe = open_house(manager, croupier, hold_on_error=True,
                      hold_warnings=["false_draw"])
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 3, 100)
    deal(page, "3S", "7C", "3H", "KD")  # punter 6 stands, banker 7 stands
    page.get_by_role("button", name="Next card to banker").click()
    deal(page, "AD")  # ... but draws: a false draw
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#confirm-findings")).to_contain_text(
        "Banker drew on 7 with the punter standing: the tableau requires standing.")
    page.locator("#confirm-record").click()
    recorded(page, 1)
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq == 1
    # the stop is shown at once and the pad is locked: no next coup
    expect(page.locator("#stopped")).to_contain_text(
        "Banker drew on 7 with the punter standing: the tableau requires standing.")
    expect(page.get_by_role("button", name="Save coup")).to_be_disabled()
    expect(page.get_by_role("button", name="Seat 3", exact=True)).to_be_disabled()
    page.keyboard.press("Enter")
    assert Coup.objects.filter(shoe=shoe).count() == 1  # nothing was sent


def test_without_false_draws_named_play_goes_on_after_one(
    page, live_server, signed_in, manager, croupier
):
    """The versions written before the choice: hold on error alone holds on
    critical findings only; a false draw is flagged and play goes on."""
    from tables.models import Shoe

    shoe = open_house(manager, croupier, hold_on_error=True)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 3, 100)
    deal(page, "3S", "7C", "3H", "KD")
    page.get_by_role("button", name="Next card to banker").click()
    deal(page, "AD")
    page.get_by_role("button", name="Save coup").click()
    page.locator("#confirm-record").click()
    recorded(page, 1)
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq is None
    stake(page, 3, 100)
    deal(page, "2H", "9S", "KD", "QC")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)


def test_a_held_shoe_is_seen_at_once_and_released_from_the_banner(
    page, browser, live_server, signed_in, manager, croupier, pitboss, as_user,
    screenshot
):
    """Issue 24, item 3. A false draw holds the shoe (hold on error, false
    draws named). Opening the coup screen shows the stop at once, with the
    finding, and the pad is locked; the floor and the review queue carry a
    banner naming the table, the finding and a link to release; the pit
    boss releases it there and the tablet unlocks by itself."""
    from tables.models import Shoe

    from .conftest import sign_in_cookie

    shoe = open_house(manager, croupier, hold_on_error=True,
                      hold_warnings=["false_draw"])
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", {
        "punter": ["3S", "3H"], "banker": ["7C", "KD", "AD"],
        "stakes": [{"seat": 2, "amount": "100.00"}]}, format="json")
    assert r.status_code == 201 and Shoe.objects.get(pk=shoe.pk).held_by_seq == 1
    finding = ("Banker drew on 7 with the punter standing: the tableau requires "
               "standing.")

    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stop = page.locator("#stopped")
    expect(stop).to_be_visible()  # before anything is entered
    expect(stop).to_contain_text("Play is stopped at this shoe: coup 1 has a "
                                 "finding that stops play")
    expect(stop).to_contain_text(finding)
    expect(page.get_by_role("button", name="Save coup")).to_be_disabled()
    expect(page.get_by_role("button", name="Seat 3", exact=True)).to_be_disabled()
    pad = page.get_by_role("group", name="Card pad")
    expect(pad.locator("[data-rank]").first).to_be_disabled()
    page.keyboard.press("7")  # the keyboard does not deal either
    expect(page.locator("#slot-p1")).to_have_text("")
    shots = screenshot("tablet-held-shoe").parent

    boss = browser.new_context().new_page()
    sign_in_cookie(boss, live_server, pitboss)
    for url in ("/floor/", "/floor/queue/"):
        boss.goto(f"{live_server.url}{url}")
        banner = boss.get_by_role("alert", name="Play stopped")
        expect(banner).to_contain_text("Play is stopped at Club (shoe n° 1)")
        expect(banner).to_contain_text(finding)
        expect(banner.get_by_role("link", name="coup 1")).to_be_visible()
        name = url.strip("/").replace("/", "-")
        boss.screenshot(path=str(shots / f"held-banner-{name}.png"))
    banner.get_by_role("link", name="Release the shoe").click()
    held = boss.locator(f"#held-{shoe.pk}")
    held.get_by_label("Reason").fill("false draw seen with the banker")
    held.get_by_role("button", name="Release the shoe").click()
    released = "Club: the shoe is released; play goes on."
    expect(boss.get_by_text(released)).to_be_visible()
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq is None
    boss.goto(f"{live_server.url}/floor/")
    expect(boss.get_by_role("alert", name="Play stopped")).to_have_count(0)
    boss.context.close()

    # the tablet learns of the release by itself (it asks every 5 s)
    expect(stop).to_be_hidden(timeout=12_000)
    expect(page.get_by_role("button", name="Save coup")).to_be_enabled()
    stake(page, 3, 100)
    deal(page, "2H", "9S", "KD", "QC")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 2)


def test_a_coup_that_holds_the_shoe_shows_the_stop_at_once(
    page, live_server, signed_in, manager, croupier
):
    """The croupier's own coup holds the shoe: the stop shows as soon as it
    is saved, before the server has answered (here the Wi-Fi is down), not
    at the next Save; the server's answer keeps it, a reload too."""
    from tables.models import Shoe

    shoe = open_house(manager, croupier, hold_on_error=True,
                      hold_warnings=["false_draw"])
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stop = page.locator("#stopped")
    expect(stop).to_be_hidden()
    stake(page, 3, 100)
    deal(page, "3S", "7C", "3H", "KD")
    page.get_by_role("button", name="Next card to banker").click()
    deal(page, "AD")
    page.context.set_offline(True)
    page.get_by_role("button", name="Save coup").click()
    page.locator("#confirm-record").click()
    expect(stop).to_contain_text("coup 1 has a finding that stops play")
    expect(stop).to_contain_text("Banker drew on 7 with the punter standing")
    expect(page.get_by_role("button", name="Save coup")).to_be_disabled()
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq is None  # not sent yet
    page.context.set_offline(False)
    recorded(page, 1)
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq == 1
    expect(stop).to_be_visible()
    page.reload()
    expect(stop).to_contain_text("Banker drew on 7 with the punter standing")
    expect(page.get_by_role("button", name="Save coup")).to_be_disabled()


def test_a_coup_that_does_not_hold_leaves_the_pad_open(
    page, live_server, signed_in, manager, croupier
):
    """Hold on error with false draws named: a clean coup stops nothing."""
    shoe = open_house(manager, croupier, hold_on_error=True,
                      hold_warnings=["false_draw"])
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    stake(page, 3, 100)
    deal(page, "2H", "9S", "KD", "QC")
    page.get_by_role("button", name="Save coup").click()
    recorded(page, 1)
    expect(page.locator("#stopped")).to_be_hidden()
    expect(page.get_by_role("button", name="Save coup")).to_be_enabled()


def test_in_french_the_house_rule_and_the_stop_are_french(
    page, live_server, signed_in, manager, croupier, screenshot
):
    """A French croupier: the prescribed cell's guidance, the warning before
    saving, and the stop after a coup that holds, all in French."""
    from .test_i18n import set_language

    set_language(croupier, "fr")
    shoe = open_house(manager, croupier, banker_prescriptions={"3/9": "draw"},
                      hold_on_error=True, hold_warnings=["house_choice"])
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    guidance = page.locator("#guidance")
    page.get_by_role("button", name="Place 3", exact=True).click()
    page.locator('[data-amount="200.00"]').click()
    page.keyboard.type("2h3ckSqh9d")  # punter 2 draws a 9; banker 3
    expect(guidance).to_contain_text(
        "Le banquier doit tirer (règle de la maison) (3, contre un 9)")
    page.locator("#save").click()
    expect(page.locator("#confirm-title")).to_have_text(
        "Le règlement de la maison dit autre chose")
    expect(page.locator("#confirm-findings")).to_contain_text(
        "Le banquier est resté à 3 contre un 9 : la maison impose de tirer.")
    page.locator("#confirm-record").click()
    stop = page.locator("#stopped")
    expect(stop).to_contain_text("Le jeu est arrêté à ce sabot : le coup 1")
    expect(stop).to_contain_text(
        "Le banquier est resté à 3 contre un 9 : la maison impose de tirer.")
    recorded(page, 1)
    page.reload()  # the server's words, in French
    expect(stop).to_contain_text(
        "Le banquier est resté à 3 contre un 9 : la maison impose de tirer.")
    screenshot("tablet-held-shoe-fr")
