"""French and English: the catalogue is complete, and the language follows
the person's setting (not the tablet's browser)."""

from __future__ import annotations

import re

import pytest
from django.utils import translation
from playwright.sync_api import expect

from tables.tablet.state import js_strings

from .conftest import TRANSACTIONAL

# The same word in both languages (names of things, card codes, placeholders).
SAME = {"{amount}", "Coup {n}", "banco solo", "suivi", "10"}


# The catalogue's completeness (every msgid of the code, now and later, and a
# .mo compiled from the .po): tests/test_french_catalogue.py.


def test_every_sentence_of_the_page_script_is_translated():
    with translation.override("en"):
        english = js_strings()
    with translation.override("fr"):
        french = js_strings()
    missing = [k for k, v in english.items() if french[k] == v and v not in SAME]
    assert not missing, missing
    # placeholders survive translation
    for key, value in english.items():
        assert set(re.findall(r"\{\w+\}", value)) == set(
            re.findall(r"\{\w+\}", french[key])
        ), key


def set_language(user, language):
    from tables.tablet.models import profile_for

    profile = profile_for(user)
    profile.language = language
    profile.save()


@pytest.mark.django_db
def test_language_follows_the_user_not_the_browser(client, croupier, croupier2):
    set_language(croupier, "fr")
    client.login(username="croupier1", password="pw-croupier1")
    r = client.get("/tablet/", HTTP_ACCEPT_LANGUAGE="en")
    assert "Choisissez votre table" in r.content.decode()
    client.logout()
    client.login(username="croupier2", password="pw-croupier2")
    r = client.get("/tablet/", HTTP_ACCEPT_LANGUAGE="en")
    assert "Pick your table" in r.content.decode()
    r = client.post("/tablet/preferences/", {"form": "language", "language": "fr"})
    assert "Langue enregistrée." in r.content.decode()
    assert "Choisissez votre table" in client.get("/tablet/").content.decode()


@pytest.mark.browser
@TRANSACTIONAL
def test_a_french_croupier_sees_french(
    page, live_server, ready_turn, croupier, screenshot
):
    from .conftest import recorded

    shoe, _ = ready_turn
    set_language(croupier, "fr")
    page.goto(live_server.url + "/tablet/")
    # Nobody is known yet: the sign-in page speaks the browser's language.
    page.get_by_label("Username").fill("croupier1")
    page.get_by_label("Password").fill("pw-croupier1")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Choisissez votre table")).to_be_visible()
    page.get_by_role("button", name="Rejoindre la séance à Table 1").click()
    save = page.get_by_role("button", name="Enregistrer le coup")
    expect(save).to_be_visible()
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    page.get_by_role("button", name="Place 3", exact=True).click()
    page.get_by_role("button", name="Montant 200", exact=True).click()
    pad = page.get_by_role("group", name="Clavier des cartes")
    for rank, suit in [("2", "Cœur"), ("5", "Pique"), ("Roi", "Carreau"),
                       ("Dame", "Trèfle"), ("6", "Trèfle")]:
        pad.get_by_role("button", name=rank, exact=True).click()
        pad.get_by_role("button", name=suit, exact=True).click()
    guidance = page.get_by_role("status", name="Consignes")
    expect(guidance).to_contain_text("Le ponte doit tirer")
    expect(guidance).to_contain_text("Le banquier doit tirer (5, contre un 6)")
    expect(page.locator("#coverage")).to_have_text(
        re.compile(r"Banque 1\s000 · couvert 200 · garage 800")
    )
    screenshot("tablet-coup-entry-french-landscape")
    save.click()
    dialog = page.get_by_role("dialog", name="Le tableau dit autre chose")
    expect(dialog).to_contain_text(
        "Le banquier est resté à 5 contre un 6 : le tableau impose de tirer. "
        "L’enregistrer tel qu’il s’est passé ?".replace("’", "'")
    )
    dialog.get_by_role("button", name="Enregistrer tel quel").click()
    recorded(page, 1)
    expect(page.get_by_label("Dernier coup")).to_contain_text("Le ponte gagne 8 à 5")
