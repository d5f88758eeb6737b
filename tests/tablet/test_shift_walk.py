"""One shift in Chromium, in French, at a table with every house variant that
trips a croupier (issue 24, "Proof"): prescribed cells (banker 3 against a 9
must draw), tie stay, all-or-nothing cover and hold on error (a house choice
or a false draw stops play).

The croupier ties and reloads (the tied stakes are still there), meets the
prescribed cell (guided, warned before saving), records it as it happened
(the stop shows at once, and again before anything is entered after a
reload); the pit boss sees the banner on the floor and the queue and
releases the shoe; the tablet unlocks by itself; the croupier closes the
shoe in landscape, opens the next and closes it in portrait, each close in
the viewport with its count said. No screen on the way shows English or a
code (tests/english.py reads the French catalogue)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.english import english_left

from .conftest import LANDSCAPE, PORTRAIT, TRANSACTIONAL, recorded, sign_in_cookie
from .test_i18n import set_language
from .test_layout import deal, shown_whole

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
TIE = ("8H", "8S", "KD", "QC")  # naturals 8 and 8: a tie
BANKER_WINS = ("7H", "9S", "KD", "QC")  # banker 9 against 7
# punter 2+K = 2 draws a 9 (11 -> 1); banker 3+Q = 3 against a 9: the house
# prescribes a draw, and the banker stands
PRESCRIBED = ("2H", "3C", "KS", "QH", "9D")
STOP = "Le jeu est arrêté à ce sabot : le coup 3"
STOOD = "Le banquier est resté à 3 contre un 9 : la maison impose de tirer."


def french_only(page, where: str) -> None:
    text = page.locator("body").inner_text()
    assert english_left(text) == [], (where, english_left(text))


def stake(page, seat: int, amount: str) -> None:
    page.get_by_role("button", name=f"Place {seat}", exact=True).click()
    page.get_by_role("button", name=f"Montant {amount}", exact=True).click()


def save(page) -> None:
    page.get_by_role("button", name="Enregistrer le coup").click()


def close_shoe(page, size, *, left: int, n: int) -> None:
    """The count and the close, whole on the screen without scrolling; the
    close then says the count agrees."""
    count = page.get_by_label("Cartes comptées restantes")
    close = page.get_by_role("button", name="Fermer le sabot")
    shown_whole(page, count, size, "the count field")
    shown_whole(page, close, size, "Close the shoe")
    french_only(page, f"coup screen before closing shoe {n}")
    count.fill(str(left))
    close.click()  # armed: the second tap closes
    page.locator("#close-shoe").click()
    said = page.get_by_role("status").filter(has_text=f"Sabot {n} fermé")
    expect(said).to_have_text(
        f"Sabot {n} fermé : le compte est juste ({left} cartes restantes).")
    french_only(page, f"session page after closing shoe {n}")


def test_one_shift_in_french_with_the_house_s_variants(
    page, browser, live_server, manager, croupier, pitboss
):
    from audit.models import Flag
    from tables.models import Coup, Shoe
    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    for person in (croupier, pitboss):
        set_language(person, "fr")
    table = table_create(user=manager, name="Club")
    house_rules_change(
        table=table, user=manager, reason="the club's rules",
        banker_prescriptions={"3/9": "draw"}, tie_rule="stay",
        cover_rule="all_or_nothing", hold_on_error=True,
        hold_warnings=["house_choice", "false_draw"])
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("1000"))

    sign_in_cookie(page, live_server, croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    french_only(page, "coup screen")

    # 1. a tie: the stakes stay, and a reload keeps them
    stake(page, 3, "200")
    deal(page, TIE)
    save(page)
    recorded(page, 1)
    french_only(page, "result of a tie")
    page.reload()
    expect(page.locator("#bar-seq")).to_have_text("Coup 2")
    expect(page.get_by_role("button", name="Place 3", exact=True)).to_contain_text(
        "200")
    french_only(page, "coup screen after a reload")
    deal(page, BANKER_WINS)  # played with the tied stake
    save(page)
    recorded(page, 2)
    coup = Coup.objects.get(shoe=shoe, seq=2)
    assert [(s.seat, s.amount) for s in coup.stakes.all()] == [
        (3, Decimal("200.00"))]

    # 2. the prescribed cell: guided, warned before saving, then the stop
    guidance = page.locator("#guidance")
    stake(page, 3, "200")
    deal(page, PRESCRIBED)
    expect(guidance).to_contain_text(
        "Le banquier doit tirer (règle de la maison) (3, contre un 9)")
    french_only(page, "guidance on a prescribed cell")
    save(page)
    expect(page.locator("#confirm-title")).to_have_text(
        "Le règlement de la maison dit autre chose")
    expect(page.locator("#confirm-findings")).to_contain_text(STOOD)
    french_only(page, "the warning before saving")
    assert not Coup.objects.filter(shoe=shoe, seq=3).exists()
    page.locator("#confirm-record").click()
    stop = page.locator("#stopped")
    expect(stop).to_contain_text(STOP)
    expect(stop).to_contain_text(STOOD)
    recorded(page, 3)
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq == 3
    expect(page.locator("#net")).to_have_text("En ligne")  # nothing waits
    french_only(page, "the stop after the coup")
    page.screenshot(path=str(SHOTS / "walk-fr-stopped.png"))

    # 3. the stop before anything is entered, the pad locked
    page.reload()
    expect(stop).to_contain_text(STOP)
    expect(page.get_by_role("button", name="Enregistrer le coup")).to_be_disabled()
    expect(page.get_by_role("button", name="Place 3", exact=True)).to_be_disabled()
    french_only(page, "the held shoe opened again")

    # 4. the pit boss: the banner on the floor and the queue, the release
    boss = browser.new_context(viewport=LANDSCAPE).new_page()
    sign_in_cookie(boss, live_server, pitboss)
    for url in ("/floor/", "/floor/queue/"):
        boss.goto(f"{live_server.url}{url}")
        banner = boss.get_by_role("alert", name="Jeu arrêté")
        expect(banner).to_contain_text("Le jeu est arrêté à Club (sabot n° 1)")
        expect(banner).to_contain_text(STOOD)
        french_only(boss, f"pit boss {url}")
        name = url.strip("/").replace("/", "-")
        boss.screenshot(path=str(SHOTS / f"walk-fr-banner-{name}.png"))
    flag = Flag.objects.get(coup__shoe=shoe, coup__seq=3)
    boss.goto(f"{live_server.url}/floor/flags/{flag.pk}/")
    french_only(boss, "the flag page")
    boss.goto(f"{live_server.url}/floor/")
    boss.get_by_role("alert", name="Jeu arrêté").get_by_role(
        "link", name="Libérer le sabot").click()
    held = boss.locator(f"#held-{shoe.pk}")
    held.get_by_label("Motif").fill("le banquier a choisi, vu avec lui")
    held.get_by_role("button", name="Libérer le sabot").click()
    released = "Club : le sabot est libéré ; le jeu reprend."
    expect(boss.get_by_text(released)).to_be_visible()
    french_only(boss, "the release")
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq is None
    boss.context.close()

    # 5. the tablet unlocks by itself; one more coup, then the close (landscape)
    expect(stop).to_be_hidden(timeout=12_000)
    stake(page, 3, "200")
    deal(page, BANKER_WINS)
    save(page)
    recorded(page, 4)
    # 312 cards, 5 burned, 4 coups of 4 and one of 5 cards (the prescribed one)
    left = 312 - 5 - 4 * 3 - 5
    close_shoe(page, LANDSCAPE, left=left, n=1)
    page.screenshot(path=str(SHOTS / "walk-fr-closed-landscape.png"))

    # 6. the next shoe, in portrait, and its close
    page.set_viewport_size(PORTRAIT)
    page.get_by_label("Cartes brûlées").fill("5")
    page.get_by_role("button", name="Ouvrir le sabot").click()
    expect(page.get_by_role("button", name="Enregistrer le coup")).to_be_visible()
    french_only(page, "coup screen of shoe 2 (portrait)")
    stake(page, 3, "200")
    deal(page, BANKER_WINS)
    save(page)
    recorded(page, 1)
    close_shoe(page, PORTRAIT, left=312 - 5 - 4, n=2)
    page.screenshot(path=str(SHOTS / "walk-fr-closed-portrait.png"))
    assert list(Shoe.objects.filter(session=session).values_list(
        "number", "left_counted")) == [(1, left), (2, 303)]
