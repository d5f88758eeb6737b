"""The house-rules pages: every table's rules in force, a manager's new
version (named refusals, nothing written), a held shoe released by a pit boss."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from tables.models import HouseRules, Shoe, ShoeRelease

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def form(rules: HouseRules, **changes) -> dict:
    """The form as the page fills it from the latest version, then edited."""
    body = {
        "commission_rate": str(rules.commission_rate),
        "commission_unit": str(rules.commission_unit),
        "commission_rounding": rules.commission_rounding,
        "minimum_banco": str(rules.minimum_banco),
        "maximum_bank": "" if rules.maximum_bank is None else str(rules.maximum_bank),
        "cover_rule": rules.cover_rule,
        "tie_rule": rules.tie_rule,
        "decks": str(rules.decks),
        "punter_five": rules.punter_five,
        "cell:3/9": "free",
        "cell:5/4": "free",
        "false_draw_sanction": rules.false_draw_sanction,
        "gaming_day_cutoff": str(rules.gaming_day_cutoff),
        "tableau_version": rules.tableau.version,
        "effective_from": "",
        "reason": "",
    }
    body.update(changes)
    return body


def test_a_manager_writes_a_version_from_the_page(manager, table):
    c = client_for(manager)
    page = c.get(f"/floor/tables/{table.pk}/rules/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "The banker on 3 against a 9" in html
    assert "The banker on 5 against a 4" in html
    # the form starts from the latest version; the tableau is a choice
    assert 'name="commission_rate" inputmode="decimal" value="0.0500"' in html
    assert 'name="maximum_bank" inputmode="decimal" value=""' in html
    assert '<option value="chemmy-standard-1" selected>' in html
    assert '<option value="punto-banco-1" >' in html
    r = c.post(f"/floor/tables/{table.pk}/rules/", form(
        table.rules, commission_rounding="half_even", cover_rule="all_or_nothing",
        maximum_bank="20000.00", **{"cell:3/9": "draw"}, hold_on_error="on",
        reason="club rules of 2027"))
    assert r.status_code == 302, r.content.decode()[:500]
    new = HouseRules.objects.get(table=table, version=2)
    assert (new.commission_rounding, new.cover_rule, new.maximum_bank,
            new.banker_prescriptions, new.hold_on_error) == (
        "half_even", "all_or_nothing", Decimal("20000.00"), {"3/9": "draw"}, True)
    listing = c.get(f"/floor/tables/{table.pk}/rules/").content.decode()
    assert "club rules of 2027" in listing
    assert "<dt>The banker on 3 against a 9</dt><dd>draw</dd>" in listing


def test_the_page_names_the_warnings_that_stop_play(manager, table):
    """Issue 24, item 2: the page says a false draw is a warning and lets the
    manager tick it (and the other warnings) to stop play too."""
    c = client_for(manager)
    html = c.get(f"/floor/tables/{table.pk}/rules/").content.decode()
    assert "With hold on error, these warnings stop play too" in html
    assert "it stops play only if it is ticked here" in html
    r = c.post(f"/floor/tables/{table.pk}/rules/", form(
        table.rules, hold_on_error="on", hold_warnings_shown="1",
        hold_warnings=["false_draw", "draw_after_natural"], reason="stop on draws"))
    assert r.status_code == 302, r.content.decode()[:500]
    new = HouseRules.objects.get(table=table, version=2)
    assert (new.hold_on_error, new.hold_warnings) == (
        True, ["draw_after_natural", "false_draw"])
    listing = c.get(f"/floor/tables/{table.pk}/rules/").content.decode()
    assert ("<dt>Hold on error</dt><dd>critical findings, card after a natural, "
            "false draw</dd>") in listing
    assert 'value="false_draw" checked' in listing
    # none ticked: critical findings only again
    r = c.post(f"/floor/tables/{table.pk}/rules/", form(
        new, hold_on_error="on", hold_warnings_shown="1", reason="criticals only"))
    assert r.status_code == 302
    assert HouseRules.objects.get(table=table, version=3).hold_warnings is None
    # a code that is not a warning is refused naming the field
    r = c.post(f"/floor/tables/{table.pk}/rules/", form(
        new, hold_warnings_shown="1", hold_warnings=["bank_mismatch"], reason="x"))
    assert r.status_code == 400 and 'data-field="hold_warnings"' in r.content.decode()


@pytest.mark.parametrize("change, field", [
    ({"commission_rate": "-0.05"}, "commission_rate"),
    ({"commission_unit": "0"}, "commission_unit"),
    ({"commission_rounding": "bankers"}, "commission_rounding"),
    ({"cell:6/stood": "draw"}, "banker_prescriptions"),
    ({"decks": "nine"}, "decks"),
    ({"effective_from": "2020-01-01"}, "effective_from"),
    ({"effective_from": "soon"}, "effective_from"),
    ({"effective_from": "9999-12-31"}, "effective_from"),
    ({"reason": ""}, "reason"),
])
def test_a_bad_value_is_refused_on_the_page_naming_it(manager, table, change, field):
    before = HouseRules.objects.count()
    body = form(table.rules, reason="try")
    body.update(change)
    r = client_for(manager).post(f"/floor/tables/{table.pk}/rules/", body)
    assert r.status_code == 400
    assert f'data-field="{field}"' in r.content.decode()
    assert HouseRules.objects.count() == before


@pytest.mark.parametrize("role", ["pitboss", "auditor", "croupier", "outsider"])
def test_only_a_manager_posts_the_form(table, role, request):
    user = request.getfixturevalue(role)
    r = client_for(user).post(f"/floor/tables/{table.pk}/rules/",
                              form(table.rules, reason="mine"))
    assert r.status_code == 403
    assert HouseRules.objects.filter(table=table).count() == 1


def test_the_form_is_shown_to_a_manager_only(table, manager, pitboss):
    assert "Write the new version" in client_for(manager).get(
        f"/floor/tables/{table.pk}/rules/").content.decode()
    page = client_for(pitboss).get(f"/floor/tables/{table.pk}/rules/")
    assert page.status_code == 200
    assert "Write the new version" not in page.content.decode()


def test_a_pit_boss_releases_a_held_shoe_from_the_page(
    manager, croupier, pitboss, as_user
):
    from tables.services import (
        banker_turn_open,
        house_rules_change,
        session_open,
        shoe_open,
        table_create,
    )

    table = table_create(user=manager, name="Held")
    house_rules_change(table=table, user=manager, reason="stop", hold_on_error=True)
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=3)
    banker_turn_open(session=session, user=croupier, seat=1, bank=Decimal("1000"))
    r = as_user(croupier).post(f"/api/v1/shoes/{shoe.pk}/coups/", {
        "punter": ["2S", "3H"], "banker": ["9C", "KD"], "declared_bank": "900.00",
        "stakes": [{"seat": 2, "amount": "100.00"}]}, format="json")
    assert r.status_code == 201
    p = client_for(pitboss)
    index = p.get("/floor/rules/").content.decode()
    assert "Held shoes" in index and "held since coup 1" in index
    assert client_for(croupier).post(f"/floor/shoes/{shoe.pk}/release/",
                                     {"reason": "x"}).status_code == 403
    r = p.post(f"/floor/shoes/{shoe.pk}/release/", {"reason": "recounted"})
    assert r.status_code == 302
    assert Shoe.objects.get(pk=shoe.pk).held_by_seq is None
    assert ShoeRelease.objects.get(shoe=shoe).reason == "recounted"
    assert "Held shoes" not in p.get("/floor/rules/").content.decode()


def test_an_unknown_tableau_is_refused_in_words_keeping_every_value(manager, table):
    """Issue 24, item 4: the tableau is a choice of the versions on file; a
    name that is none of them (a hand-made post) is refused, in the reader's
    words, and every value the manager chose comes back on the form."""
    from django.utils import translation

    body = form(table.rules, commission_rounding="half_even",
                cover_rule="all_or_nothing", tie_rule="returned", punter_five="draw",
                hold_on_error="on", hold_warnings_shown="1",
                hold_warnings=["false_draw"], false_draw_sanction="lose_shoe",
                tableau_version="chemy-standard-1", reason="club rules",
                **{"cell:3/9": "draw", "cell:5/4": "stand"})
    c = client_for(manager)
    r = c.post(f"/floor/tables/{table.pk}/rules/", body)
    assert r.status_code == 400
    html = r.content.decode()
    assert 'data-field="tableau_version"' in html
    assert ("<strong>Tableau</strong>: there is no tableau named "
            "“chemy-standard-1”") in html
    assert "tableau_version:" not in html and "unknown tableau" not in html
    for name, value in [("commission_rounding", "half_even"),
                        ("cover_rule", "all_or_nothing"), ("tie_rule", "returned"),
                        ("punter_five", "draw"), ("false_draw_sanction", "lose_shoe"),
                        ("cell:3/9", "draw"), ("cell:5/4", "stand")]:
        select = html.split(f'name="{name}"', 1)[1].split("</select>", 1)[0]
        assert f'<option value="{value}" selected>' in select, name
    assert '<input type="checkbox" name="hold_on_error" checked>' in html
    assert 'value="false_draw" checked' in html
    assert 'value="house_choice" checked' not in html
    assert HouseRules.objects.filter(table=table).count() == 1
    # the same in French: the field and the reason in words
    c.cookies["django_language"] = "fr"
    with translation.override("fr"):
        r = c.post(f"/floor/tables/{table.pk}/rules/", body,
                   HTTP_ACCEPT_LANGUAGE="fr")
    html = r.content.decode()
    assert r.status_code == 400
    assert "<strong>Tableau</strong> : aucun tableau ne s’appelle" in html, html[
        html.find("rules-error"):][:400]
    assert "there is no tableau" not in html


def test_the_api_refuses_an_unknown_tableau_naming_the_field(as_user, manager, table):
    r = as_user(manager).post(f"/api/v1/tables/{table.pk}/rules/", {
        "reason": "typo", "tableau_version": "chemy-standard-1"}, format="json")
    assert r.status_code == 400
    assert "tableau_version" in r.json()
    assert HouseRules.objects.filter(table=table).count() == 1
