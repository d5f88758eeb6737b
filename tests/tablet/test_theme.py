"""The night theme is the person's: saved on the server from Settings, taken
into the session at sign-in, rendered on <html data-theme> of every page
(tablet, floor, reports) from the first byte, kept on the lock screen."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def theme_of(response) -> str:
    html = response.content.decode()
    start = html.index("<html")
    tag = html[start:html.index(">", start)]
    return tag.split('data-theme="')[1].split('"')[0]


def test_a_bad_theme_is_refused_naming_the_field(client, croupier):
    from tables.tablet.models import profile_for

    client.force_login(croupier)
    r = client.post("/tablet/preferences/", {"form": "theme", "theme": "dusk"})
    assert r.status_code == 400
    assert "Select a valid choice" in r.content.decode()
    assert 'aria-labelledby="theme-h"' in r.content.decode()
    assert profile_for(croupier).theme == "day"
    r = client.post("/tablet/preferences/", {"form": "theme"})
    assert r.status_code == 400 and "This field is required." in r.content.decode()


def test_night_is_saved_and_follows_the_user_to_every_page(client, pitboss, croupier):
    from django.test import Client

    from tables.tablet.models import profile_for

    client.force_login(pitboss)
    assert theme_of(client.get("/floor/")) == "day"
    r = client.post("/tablet/preferences/", {"form": "theme", "theme": "night"})
    assert r.status_code == 200 and theme_of(r) == "night"
    assert profile_for(pitboss).theme == "night"
    assert theme_of(client.get("/floor/")) == "night"
    assert theme_of(client.get("/floor/queue/")) == "night"
    assert 'theme/night.css' in client.get("/floor/").content.decode()
    assert theme_of(client.get("/tablet/preferences/")) == "night"

    elsewhere = Client()  # another device: a new sign-in finds it again
    elsewhere.force_login(pitboss)
    assert theme_of(elsewhere.get("/floor/")) == "night"
    other = Client()  # another person keeps his own
    other.force_login(croupier)
    assert theme_of(other.get("/tablet/")) == "day"

    # Locking signs out but keeps it on the lock screen.
    r = elsewhere.post("/tablet/lock/", {"next": "/tablet/"})
    assert r.status_code == 302
    assert theme_of(elsewhere.get("/tablet/unlock/")) == "night"

    r = client.post("/tablet/preferences/", {"form": "theme", "theme": "day"})
    assert theme_of(r) == "day" and profile_for(pitboss).theme == "day"
    assert theme_of(client.get("/floor/")) == "day"
    assert 'theme/night.css' not in client.get("/floor/").content.decode()
