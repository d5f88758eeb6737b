"""French everywhere, words not codes for people (issue 24, item 8): in French
the review queue, the flag pages and the floor's banner show no finding code,
no English severity, status or side, and no English finding sentence; the
codes stay in the markup (data-code) and the API, where machines read them."""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from django.test import Client

from audit.models import Flag
from tables.services import (
    banker_turn_open,
    house_rules_change,
    session_open,
    shoe_open,
    table_create,
)

pytestmark = pytest.mark.django_db

CODES = re.compile(r"\b(false_draw|house_choice|bank_mismatch|draw_after_natural|"
                   r"deal_below_seven|card_count_exceeded|shoe_count|"
                   r"cagnotte_variance|turn_structure|ledger_mismatch)\b")
ENGLISH = re.compile(r"\b(warning|critical|open|confirmed|dismissed|resolved|"
                     r"banker|punter|raised|none)\b")
SENTENCES = ("The croupier declared", "this house prescribes", "the tableau requires",
             "Drawing in an S cell", "Punter stood", "Banker drew")


def visible_text(page: str) -> str:
    """What a person reads: no script, style, tag or attribute. The trail
    panel lists the change log's action names (tables.coup.recorded...), the
    log's own identifiers: left out."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r'<section class="panel" aria-label="Journal">.*?</section>', " ",
                  page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def english_left(page: str) -> list[str]:
    text = visible_text(page)
    found = CODES.findall(text) + ENGLISH.findall(text)
    return found + [s for s in SENTENCES if s in text]


@pytest.fixture
def flagged(manager, croupier, as_user):
    """A table whose house prescribes the punter's 5, with a house choice,
    a false draw and a bank mismatch that stops play (hold on error)."""
    table = table_create(user=manager, name="Salon Rouge")
    house_rules_change(table=table, user=manager, reason="club", punter_five="draw",
                       hold_on_error=True)
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=3)
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("1000"))
    api = as_user(croupier)
    stakes = [{"seat": 2, "amount": "100.00"}]
    for body in (
        # the punter stands on 5 where the house prescribes a draw
        {"punter": ["2S", "3H"], "banker": ["4C", "KD", "5C"]},
        # the banker draws on 6 with the punter standing: a false draw
        {"punter": ["2D", "4H"], "banker": ["6C", "KH", "2C"]},
        # a declared bank that is not the bank carried forward
        {"punter": ["2H", "3D"], "banker": ["9C", "KS"], "declared_bank": "1.00"},
    ):
        r = api.post(f"/api/v1/shoes/{shoe.pk}/coups/", {**body, "stakes": stakes},
                     format="json")
        assert r.status_code == 201, r.json()
    codes = set(Flag.objects.values_list("code", flat=True))
    assert codes == {"house_choice", "false_draw", "bank_mismatch"}, codes
    return table


def french(user) -> Client:
    c = Client(HTTP_ACCEPT_LANGUAGE="fr")
    c.force_login(user)
    return c


def test_the_queue_the_flag_pages_and_the_floor_speak_french(flagged, pitboss):
    c = french(pitboss)
    queue = c.get("/floor/queue/").content.decode()
    assert "règle de la maison non suivie" in queue and "écart de banque" in queue
    assert "avertissement" in queue and "critique" in queue and "ouvert" in queue
    assert "Le croupier a annoncé une banque de 1 ; la banque" in queue
    assert not english_left(queue), english_left(queue)
    assert 'data-code="bank_mismatch"' in queue  # the code stays in the markup
    for flag in Flag.objects.all():
        page = c.get(f"/floor/flags/{flag.pk}/").content.decode()
        assert not english_left(page), (flag.code, english_left(page))
        if flag.code == "bank_mismatch":  # amounts as French writes them
            assert re.search(r"Le croupier a annoncé une banque de 1 ; la banque "
                             r"reportée est de 195\.", visible_text(page)), \
                visible_text(page)[:3000]
    floor = c.get("/floor/").content.decode()
    assert "Le croupier a annoncé une banque" in floor  # the held table's banner
    assert not CODES.findall(visible_text(floor))


def test_the_same_pages_in_english_say_words_too(flagged, pitboss):
    c = Client()
    c.force_login(pitboss)
    queue = c.get("/floor/queue/").content.decode()
    assert "house rule not followed" in queue and "bank mismatch" in queue
    assert not CODES.findall(visible_text(queue))


def test_the_api_keeps_the_codes(flagged, pitboss, as_user):
    r = as_user(pitboss).get("/api/v1/flags/")
    assert r.status_code == 200
    body = r.json()
    rows = body["results"] if isinstance(body, dict) else body
    assert {"house_choice", "false_draw", "bank_mismatch"} <= {f["code"] for f in rows}


@pytest.mark.parametrize("language, sentence", [
    ("en", "The croupier declared a bank of 1,234.50; the bank carried forward "
           "is 1,000."),
    ("fr", "Le croupier a annoncé une banque de 1\xa0234,50 ; la banque reportée "
           "est de 1\xa0000."),
])
def test_a_bank_mismatch_in_words_with_its_amounts(language, sentence):
    from django.utils import translation

    from audit.flag_words import _Stored
    from tables.finding_words import finding_text

    found = _Stored("bank_mismatch", {"declared_bank": "1234.50",
                                      "carried_forward": "1000.00"}, "stored")
    with translation.override(language):
        assert finding_text(found) == sentence
