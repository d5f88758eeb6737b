"""Four eyes on a correction, said at the start (issue "a real shift", item
11): the pit boss who accepted a coup on its croupier's behalf is told on the
coup's page, the flag's page and the correction page's first GET that he may
not correct it — not after filling in, previewing and giving a reason."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import Flag
from audit.services import flags_sync
from tables import services

from .conftest import FALSE_DRAW

D = Decimal
BARRED = "You cannot correct this coup"


@pytest.fixture
def accepted(shoe, turn, croupier, pitboss):
    """A false draw queued by croupier1 and accepted by pitboss1 after a relief."""
    return services.coup_accept(
        shoe_id=shoe.pk, user=pitboss, entered_by=croupier.pk,
        reason="sent after the relief", punter=FALSE_DRAW[0], banker=FALSE_DRAW[1],
        stakes=[services.StakeInput(amount=D("300"), seat=2)],
    ).coup


def client_for(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_the_correction_page_refuses_at_the_first_get(accepted, pitboss, pitboss2):
    url = reverse("floor:correct", args=[accepted.pk])
    answer = client_for(pitboss).get(url)
    assert answer.status_code == 403
    body = answer.content.decode()
    assert BARRED in body and "accepted this coup" in body
    assert 'name="p1"' not in body  # no form to fill in for nothing
    # a POST is refused before the form is even read
    assert client_for(pitboss).post(url, {"action": "preview"}).status_code == 403
    # another pit boss gets the form
    other = client_for(pitboss2).get(url)
    assert other.status_code == 200 and 'name="p1"' in other.content.decode()


def test_the_links_to_it_say_so_instead(accepted, pitboss, pitboss2):
    flags_sync()
    flag = Flag.objects.get(coup=accepted)
    correct_url = reverse("floor:correct", args=[accepted.pk])
    for url in (reverse("floor:coup", args=[accepted.pk]),
                reverse("floor:flag", args=[flag.pk])):
        mine = client_for(pitboss).get(url).content.decode()
        assert correct_url not in mine, url
        assert BARRED in mine, url
        theirs = client_for(pitboss2).get(url).content.decode()
        assert correct_url in theirs and BARRED not in theirs, url


def test_the_croupier_who_entered_it_is_barred_too(shoe, turn, croupier):
    """The rule is the service's, whoever is asked: the entry's author."""
    coup = services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=FALSE_DRAW[0], banker=FALSE_DRAW[1],
        stakes=[services.StakeInput(amount=D("300"), seat=2)]).coup
    assert "you entered this coup" in services.correction_barred(coup, croupier)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_the_browser_the_coup_page_says_it_first(page, live_server, accepted,
                                                    pitboss):
    c = client_for(pitboss)
    page.context.add_cookies([{"name": "sessionid",
                               "value": c.cookies["sessionid"].value,
                               "url": live_server.url}])
    page.goto(f"{live_server.url}/floor/coups/{accepted.pk}/")
    assert page.get_by_role("link", name="Correct this coup").count() == 0
    assert page.get_by_text(BARRED).is_visible()
    page.goto(f"{live_server.url}/floor/coups/{accepted.pk}/correct/")
    assert page.get_by_role("alert").filter(has_text=BARRED).is_visible()
    assert page.get_by_role("button", name="Preview the money difference").count() == 0
