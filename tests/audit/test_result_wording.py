"""Every page that writes a coup's result says it one way (tables.wording):
the winner first with his total -- never "banker 5-8"."""

from __future__ import annotations

import re

import pytest

from audit.models import Flag


@pytest.fixture
def flag(played):
    from audit.services import flags_sync

    flags_sync()
    return Flag.objects.get()


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_floor_pages_write_the_winner_first(client, pitboss, played, flag):
    client.force_login(pitboss)
    banker_win, false_draw, tie, _ = played
    page = text(client.get(f"/floor/coups/{banker_win.pk}/").content.decode())
    assert "Banker wins 8 to 5" in page
    page = text(client.get(f"/floor/coups/{tie.pk}/").content.decode())
    assert "Tie at 7" in page
    page = text(client.get(f"/floor/flags/{flag.pk}/").content.decode())
    # the flagged coup and the coups around it
    assert "Banker wins 8 to 5" in page and "Tie at 7" in page
    assert re.search(r"(Banker|Punter) wins (\d) to (\d)", page)


def test_the_recent_coups_write_the_winner_first(client, croupier, played):
    client.force_login(croupier)
    shoe = played[0].shoe
    page = text(client.get(f"/tablet/shoes/{shoe.pk}/recent/").content.decode())
    assert "Banker wins 8 to 5" in page and "Tie at 7" in page
    assert "banker 5–8" not in page


def test_in_french_too(client, croupier, played):
    from tables.tablet.models import profile_for

    profile = profile_for(croupier)
    profile.language = "fr"
    profile.save()
    client.force_login(croupier)
    shoe = played[0].shoe
    page = text(client.get(f"/tablet/shoes/{shoe.pk}/recent/").content.decode())
    assert "Le banquier gagne 8 à 5" in page and "Égalité à 7" in page
