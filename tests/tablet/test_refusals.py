"""Stakes the table refuses are stopped on the tablet before saving, and every
refusal of the coup API reaches the croupier in his own words.

Each refusal below is provoked through the real API (tables/api) with the
body the tablet would send; the page's static/tablet/refusals.js words the
answer, in English and in French. A refusal that falls through to the
generic sentence fails the test: a new or reworded server message needs its
line in the table.
"""

from __future__ import annotations

import json
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.urls import reverse
from django.utils import translation
from playwright.sync_api import expect

from tables.tablet.state import js_strings

from .conftest import TRANSACTIONAL, card

pytestmark = [pytest.mark.browser, TRANSACTIONAL]

CARDS = {"punter": ["2H", "KD", "4C"], "banker": ["7S", "QC"]}


def stake(amount="200.00", seat=3, announcement="none", standing=None):
    out = {"amount": amount, "announcement": announcement}
    if seat is not None:
        out["seat"] = seat
    if standing is not None:
        out["standing"] = standing
    return out


def body(*stakes, **extra):
    return {**CARDS, "stakes": list(stakes) or [stake()], **extra}


def post(client, shoe_id, data, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    r = client.post(
        reverse("api-coup-record", args=[shoe_id]),
        data=json.dumps(data),
        content_type="application/json",
        **headers,
    )
    return r.status_code, r.json()


def open_table(manager, croupier, name, *, decks=None, burned=0, bank="1000",
               hold=False, hold_warnings=()):
    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    table = table_create(user=manager, name=name, seats=9,
                         minimum_banco=Decimal("100.00"))
    if hold:
        house_rules_change(table=table, user=manager, reason="stop at the mistake",
                           hold_on_error=True, hold_warnings=list(hold_warnings))
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, decks=decks, burned=burned)
    if bank:
        banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal(bank))
    return shoe


def synthetic(exc) -> tuple[int, dict]:
    """A refusal too costly to provoke for real (a ledger overflow), answered
    by the API's own exception handler from the service's own exception."""
    from casino.api import exception_handler

    r = exception_handler(exc, {})
    return r.status_code, dict(r.data)


def refusals(shoe, croupier, croupier2, manager) -> list[tuple]:
    """(what, status, answer, body, expected key, expected English or None)."""
    from django.test import Client

    from tables.errors import Conflict
    from tables.services import shoe_close
    from tables.services.ledger import LEDGER_MAX, _check_ledger_room

    c = Client()
    c.force_login(croupier)
    out = []

    def case(what, data, key, english=None, shoe_id=None, client=c, idem=None):
        status, answer = post(client, shoe_id or shoe.pk, data, idem)
        assert 400 <= status < 500, (what, status, answer)
        out.append((what, status, answer, data, key, english))

    case("below minimum", body(stake("5.00")), "refused_below_minimum",
         "Seat 3: 5 is below the table minimum of 10. Raise the stake or remove it.")
    case("banco solo not the bank", body(stake("500.00", announcement="banco_solo")),
         "refused_whole_bank",
         "Seat 3: banco solo takes the whole bank in play, 1,000. Set the stake to "
         "1,000 or cancel the announcement.")
    case("no suivi", body(stake("1000.00", announcement="suivi")), "no_suivi",
         "Nobody may call suivi now.")
    case("banco avec not half", body(stake("300.00", announcement="banco_avec")),
         "refused_banco_avec",
         "Seat 3: banco avec takes exactly half the bank in play, 500.")
    case("banco deux alone", body(stake("500.00", announcement="banco_deux")),
         "refused_banco_deux_alone")
    case("banco deux of three", body(
        stake("300.00", seat=3, announcement="banco_deux"),
        stake("300.00", seat=4, announcement="banco_deux"),
        stake("400.00", seat=5, announcement="banco_deux")),
        "refused_banco_deux_third", "Seat 5: banco deux is two punters; a third "
        "cannot join.")
    case("banco deux short", body(
        stake("300.00", seat=3, announcement="banco_deux"),
        stake("300.00", seat=4, announcement="banco_deux")),
        "refused_banco_deux_total",
        "Banco deux: the two stakes must make up the whole bank in play, 1,000.")
    case("negative amount", body(stake("-5")), "refused_amount")
    case("three decimals", body(stake("12.345")), "refused_amount")
    case("zero", body(stake("0.00")), "refused_amount")
    case("banker's seat", body(stake(seat=1)), "refused_seat_banker",
         "Seat 1 holds the bank: the banker does not stake against himself.")
    case("no such seat", body(stake(seat=11)), "refused_seat_range")
    case("past any table", body(stake(seat=13)), "refused_seat_range")
    case("seat and standing", body(stake(seat=3, standing="Mr X")),
         "refused_seat_or_standing")
    case("neither", body(stake(seat=None)), "refused_seat_or_standing")
    case("same seat twice", body(stake(seat=3), stake(seat=3)), "refused_duplicate",
         "Seat 3 already has a stake: one stake per player.")
    case("same standing twice", body(stake(seat=None, standing="Mr X"),
                                     stake(seat=None, standing="Mr X")),
         "refused_duplicate", "Mr X already has a stake: one stake per player.")
    case("unknown announcement", body(stake(announcement="banco_tout")),
         "refused_announcement")
    case("no stake", {**CARDS, "stakes": []}, "refused_stakes")
    case("bad punter card", {**body(), "punter": ["ZZ", "2H"]}, "refused_cards_punter")
    case("one banker card", {**body(), "banker": ["2H"]}, "refused_cards_banker")
    case("four punter cards", {**body(), "punter": ["2H", "3H", "4H", "5H"]},
         "refused_cards_punter")
    case("moved on", body(expected_seq=99), "moved_on")
    case("bad clock", body(entered_at="yesterday"), "refused_clock")
    case("bad declared bank", body(declared_bank="lots"), "refused_declared_bank")
    case("another's coup", body(entered_by=croupier2.pk), "refused_not_yours",
         "This coup was entered by croupier2: it is sent when croupier2 signs in, "
         "or a pit boss accepts it.")
    case("key too long", body(), "refused_key_bad", idem="k" * 101)
    # a key already used for another coup (the first one is recorded)
    status, first = post(c, shoe.pk, body(), "same-key")
    assert status == 201, first
    case("key reused", body(stake("100.00")), "refused_key", idem="same-key")
    other = Client()
    other.force_login(croupier2)
    case("not his table", body(), "refused_not_your_table", client=other)
    case("no such shoe", body(), "refused_not_found", shoe_id=987654)
    short = open_table(manager, croupier, "Short", decks=1, burned=45)
    assert post(c, short.pk, body())[0] == 201  # 7 cards left, 2 after it
    case("shoe nearly empty", body(), "refused_shoe_short",
         "Only 2 cards are left in the shoe: not enough for this coup. Close the "
         "shoe.", shoe_id=short.pk)
    no_turn = open_table(manager, croupier, "No bank", bank=None)
    case("no bank open", body(), "no_turn", shoe_id=no_turn.pk)
    closed = open_table(manager, croupier, "Closed")
    shoe_close(shoe=closed, user=croupier)
    case("shoe closed", body(), "refused_shoe_closed", shoe_id=closed.pk)
    # house rule hold_on_error: a critical finding holds the shoe
    held = open_table(manager, croupier, "Held", hold=True)
    assert post(c, held.pk, body(declared_bank="900.00"))[0] == 201
    case("shoe held", body(), "refused_shoe_held",
         "A declared bank that differs from the bank carried forward stops play at "
         "this table (house rule). Play is stopped at this shoe since coup 1: call "
         "the pit boss, he releases the shoe before the next coup.", shoe_id=held.pk)
    # issue 24: a false draw stops play where the house says so; named
    false = open_table(manager, croupier, "Held on a false draw", hold=True,
                       hold_warnings=["false_draw"])
    assert post(c, false.pk, {"punter": ["3S", "3H"], "banker": ["7C", "KD", "AD"],
                              "stakes": [stake()]})[0] == 201  # banker drew on 7
    case("shoe held on a false draw", body(), "refused_shoe_held",
         "A false draw stops play at this table (house rule). Play is stopped at "
         "this shoe since coup 1: call the pit boss, he releases the shoe before "
         "the next coup.", shoe_id=false.pk)

    # house rule tie_rule "stay": a tie's stakes stay for the next coup
    tied = open_table(manager, croupier, "Tied")
    assert post(c, tied.pk, {"punter": ["8S", "KH"], "banker": ["8C", "KD"],
                             "stakes": [stake("200.00", seat=3)]})[0] == 201
    case("tied stake taken back", body(stake("200.00", seat=4)), "refused_tie_stays",
         "Seat 3: the stake of 200 stays on the table after the tie. It may be "
         "raised, not taken back.", shoe_id=tied.pk)
    case("tied stake lowered", body(stake("100.00", seat=3)), "refused_tie_stays",
         "Seat 3: the stake of 200 stays on the table after the tie. It may be "
         "raised, not taken back.", shoe_id=tied.pk)

    # ledger overflows: the services' own exceptions through the API's handler
    try:
        _check_ledger_room(
            SimpleNamespace(garage_total=Decimal(0), commission_total=Decimal(0)),
            SimpleNamespace(bank_after=LEDGER_MAX + 1, garage=Decimal(0),
                            commission=Decimal(0)),
        )
    except Conflict as exc:
        status, answer = synthetic(exc)
    out.append(("bank past the ledger", status, answer, body(), "refused_bank_max",
                None))
    status, answer = synthetic(Conflict(
        "stakes", "this coup would take a running total past the largest amount "
        f"the ledger holds ({LEDGER_MAX})"))
    out.append(("running total past the ledger", status, answer, body(),
                "refused_ledger_max", None))
    return out


def test_every_refusal_in_the_croupiers_words(
    page, live_server, signed_in, ready_turn, croupier, croupier2, manager
):
    from tables.tablet.models import profile_for

    shoe, _ = ready_turn
    cases = refusals(shoe, croupier, croupier2, manager)
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    page.wait_for_function("() => window.ChemmyTablet !== undefined", polling=100)
    js = "(cases) => cases.map(([s, d, b]) => window.ChemmyTablet.refusalText(s, d, b))"
    english = page.evaluate(js, [[s, a, b] for _, s, a, b, _, _ in cases])
    for (what, _s, answer, _b, key, text), said in zip(cases, english, strict=True):
        assert said["key"] == key, (what, answer, said)
        if text is not None:
            assert said["text"] == text, what
        assert "{" not in said["text"], what

    # An unknown refusal still gets a croupier's sentence, with the detail.
    said = page.evaluate(js, [[400, {"detail": "frobnicate: no", "code": "x"}, {}]])[0]
    assert said["text"] == (
        "The server did not take this coup (frobnicate: no). Check the coup, or "
        "call the pit boss."
    )
    # its field in words, never a code (issue 35)
    said = page.evaluate(js, [[400, {"detail": "stakes[0].player_card: too odd",
                                     "code": "x"}, {"stakes": [{"seat": 3}]}]])[0]
    assert said["text"] == (
        "The server did not take this coup (Seat 3, player's card number: too "
        "odd). Check the coup, or call the pit boss."
    )

    profile = profile_for(croupier)
    profile.language = "fr"
    profile.save()
    signed_in(croupier)
    page.reload()
    page.wait_for_function("() => window.ChemmyTablet !== undefined", polling=100)
    french = page.evaluate(js, [[s, a, b] for _, s, a, b, _, _ in cases])
    with translation.override("fr"):
        words = js_strings()
    for (what, *_rest), en, fr in zip(cases, english, french, strict=True):
        assert fr["key"] == en["key"], what
        assert fr["text"] != en["text"] and "{" not in fr["text"], what
        prefix = words[fr["key"]].split("{")[0]
        assert fr["text"].startswith(prefix), what
    below = french[0]["text"]
    assert below == (
        "Place 3 : 5 est sous le minimum de la table, 10. Augmentez la mise ou "
        "retirez-la."
    )
    held = dict(zip([c[0] for c in cases], french, strict=True))
    assert held["shoe held on a false draw"]["text"] == (
        "Un faux tirage arrête le jeu à cette table (règle de la maison). Le jeu "
        "est arrêté à ce sabot depuis le coup 1 : appelez le chef de partie, il "
        "libère le sabot avant le coup suivant."
    )


def test_a_stake_below_the_minimum_is_stopped_before_saving(
    page, live_server, signed_in, ready_turn, croupier
):
    from tables.models import Coup

    shoe, _ = ready_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    page.get_by_role("button", name="Seat 4", exact=True).click()
    page.get_by_label("Other amount").fill("5")
    page.get_by_role("button", name="Set amount").click()
    for code in ("2H", "7S", "KD", "QC", "4C"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    page.get_by_role("button", name="Save coup").click()
    expect(page.locator("#alert")).to_have_text(
        "Seat 4: 5 is below the table minimum of 10. Raise the stake or remove it."
    )
    # nothing queued, no provisional result, nothing sent
    assert page.evaluate("window.ChemmyTablet.queue().length") == 0
    expect(page.locator("#result [data-state]")).to_have_count(0)
    assert not Coup.objects.exists()
    # the croupier raises it: saved
    page.get_by_role("button", name="Amount 10", exact=True).click()
    page.get_by_role("button", name="Save coup").click()
    recorded_1 = '#result [data-state="recorded"][data-seq="1"]'
    expect(page.locator(recorded_1)).to_be_visible()


def test_a_server_refusal_is_shown_in_words(
    page, live_server, signed_in, ready_turn, croupier
):
    """The shoe is closed from elsewhere while the tablet still shows it."""
    from tables.services import shoe_close

    shoe, _ = ready_turn
    signed_in(croupier)
    page.goto(f"{live_server.url}/tablet/shoes/{shoe.pk}/")
    expect(page.get_by_role("button", name="Save coup")).to_be_visible()
    page.get_by_role("button", name="Seat 4", exact=True).click()
    for code in ("2H", "7S", "KD", "QC", "4C"):
        rank, suit = card(page, code)
        rank.click()
        suit.click()
    shoe_close(shoe=shoe, user=croupier)
    page.get_by_role("button", name="Save coup").click()
    conflict = page.locator("#conflict")
    expect(conflict).to_be_visible()
    expect(page.locator("#conflict-text")).to_have_text(
        "This shoe is closed: the coup cannot go into it. Call the pit boss."
    )
    # what to do, in words: no server code on the croupier's screen
    expect(page.locator("#conflict-coup")).to_have_text(
        "This coup was not recorded: the screen shows the table as the server "
        "holds it. Back to the pad to correct it, or discard it."
    )
