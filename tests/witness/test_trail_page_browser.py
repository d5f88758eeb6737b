"""The trail page's Witnesses section in Chromium, in English and French,
two witness processes configured, one cosigning the latest checkpoint and
the other down (so the quorum is short). Screenshots:
var/screenshots/trail-witnesses-{en,fr}.png."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import expect

from casino.checkpoints import checkpoint_publish
from casino.models import ChangeLog, Checkpoint
from tests.witness.conftest import write

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@contextmanager
def trail_page(browser, live_server, user, locale: str, heading: str):
    """The trail page signed in as `user`, in `locale`: its Witnesses
    section, checked by the layout every language shares; then a screenshot
    of it."""
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  locale=locale)
    client = Client()
    client.force_login(user)
    context.add_cookies([{"name": "sessionid",
                          "value": client.cookies["sessionid"].value,
                          "url": live_server.url}])
    try:
        page = context.new_page()
        page.goto(live_server.url + "/floor/trail/")
        section = page.locator("#witnesses")
        expect(section.get_by_role("heading", name=heading)).to_be_visible()
        # no paragraph left empty by a list inside it (the HTML holds)
        expect(section.locator("p:empty")).to_have_count(0)
        expect(section.locator("#witness-each tbody tr")).to_have_count(2)
        yield section
        SHOTS.mkdir(parents=True, exist_ok=True)
        section.screenshot(path=str(SHOTS / f"trail-witnesses-{locale[:2]}.png"))
    finally:
        context.close()


@pytest.fixture
def witnessed(witnesses):
    """Checkpoints cosigned by both, then w2 down: the latest is cosigned by
    w1 alone."""
    write(1200)
    checkpoint_publish()
    witnesses[1].stop()
    write(4)
    checkpoint_publish()
    return witnesses


def test_the_witnesses_section_in_english(browser, live_server, auditor, witnessed):
    rows = ChangeLog.objects.count()
    first = Checkpoint.objects.order_by("id").first().size
    with trail_page(browser, live_server, auditor, "en-GB", "Witnesses") as section:
        expect(section.locator("#witness-cosigned")).to_contain_text(
            f"Latest cosigned checkpoint: {rows:,} rows (epoch 1), made at")
        expect(section.locator("#witness-cosigners li")).to_have_count(1)
        expect(section.locator("#witness-cosigners")).to_contain_text(
            "witness.example/w1 at")
        w1, w2 = (section.locator("#witness-each tbody tr").nth(i) for i in (0, 1))
        expect(w1).to_contain_text(f"witness.example/w1{rows:,}")
        expect(w1.locator("td").nth(3)).to_have_text("cosigned")
        expect(w2).to_contain_text(f"witness.example/w2{first:,}")
        expect(w2.locator("td").nth(3)).to_have_text("not cosigned")
        expect(section.locator("#witness-notes")).to_contain_text(
            f"1 of 2 witnesses cosigned the latest checkpoint ({rows:,}); quorum 2")
        expect(section.locator("#witness-quorum")).to_have_text(
            f"The database holds {rows:,} rows of this epoch; quorum 2 of 2 "
            "witnesses.")


def _fr(n: int) -> str:
    return f"{n:,}".replace(",", "\xa0")


def test_the_witnesses_section_in_french(browser, live_server, auditor, witnessed):
    rows = ChangeLog.objects.count()
    with trail_page(browser, live_server, auditor, "fr-FR", "Témoins") as section:
        expect(section.locator("#witness-cosigned")).to_contain_text(
            f"Dernier point de contrôle cosigné : {_fr(rows)} lignes (époque 1)")
        expect(section.locator("#witness-each thead")).to_contain_text(
            "Dernier cosigné (lignes)")
        expect(section.locator("#witness-each tbody tr").nth(1).locator(
            "td").nth(3)).to_have_text("pas cosigné")
        notes = section.locator("#witness-notes")
        expect(notes).to_contain_text(
            f"témoins ayant cosigné le dernier point de contrôle ({_fr(rows)}) : "
            "1 sur 2 ; quorum 2")
        assert "witnesses" not in notes.inner_text()
        expect(section.locator("#witness-quorum")).to_contain_text(
            f"La base contient {_fr(rows)} lignes")
