"""The tableau grid editor in Chromium, as a manager uses it on a tablet:
two cells changed by taps, saved, the difference with the version in force
at a table, the assignment from tomorrow, and the re-audit it offers.
Screenshots: var/screenshots/tableau-*.png."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from playwright.sync_api import expect

from tables.models import HouseRules, TableauVersion
from tables.services import gaming_day_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900},
            "has_touch": True}


@pytest.fixture(autouse=True)
def _eager_celery():
    """The re-audit the page starts runs in the live server's thread: under CI
    (REDIS_URL set) it would otherwise wait for a worker this test does not
    run (tests/reports/test_worker.py runs one)."""
    from casino.celery import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


def sign_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


def test_grid_editor_diff_assign_reaudit(page, live_server, manager, table,
                                         screenshot):
    sign_in(page, live_server, manager)
    page.goto(live_server.url + "/tableaux/")
    std = page.get_by_role("row").filter(has_text="chemmy-standard-1")
    std.get_by_role("link", name="New version from this one").click()
    expect(page.get_by_role("heading", name="New version from chemmy-standard-1"))\
        .to_be_visible()

    three_nine = page.get_by_role("button", name="Cell 3/9", exact=True)
    five_four = page.get_by_role("button", name="Cell 5/4", exact=True)
    box = three_nine.bounding_box()
    assert box["width"] >= 48 and box["height"] >= 48  # a finger's target
    expect(three_nine).to_have_text("O")
    three_nine.tap()  # O -> D
    five_four.tap()  # O -> D
    five_four.tap()  # D -> S
    expect(three_nine).to_have_text("D")
    expect(five_four).to_have_text("S")
    expect(three_nine).to_have_class(re.compile(r"\bchanged\b"))
    expect(five_four).to_have_class(re.compile(r"\bchanged\b"))
    expect(page.locator("#changed-count")).to_have_text("2")
    expect(page.locator("button.tcell.changed")).to_have_count(2)
    page.get_by_label("Name of the new version").fill("club-2027")
    page.get_by_label("Description").fill("The club's nights")
    page.get_by_label("Reason").fill("club variant")
    screenshot("tableau-editor")
    page.get_by_role("button", name="Save the new version").click()

    expect(page.get_by_role("heading", name="Tableau club-2027")).to_be_visible()
    row = TableauVersion.objects.get(version="club-2027")
    assert row.rows["3"][10] == "D" and row.rows["5"][5] == "S"
    page.get_by_label("Compare with the version in force at").select_option(
        label="Table 1")
    page.get_by_role("button", name="Compare").click()
    diff = page.locator("#diff")
    expect(diff.get_by_role("heading")).to_have_text(
        "Difference with chemmy-standard-1, in force at Table 1")
    expect(diff.locator("tbody tr")).to_have_count(2)
    expect(diff.locator('tr[data-cell="3/9"] td')).to_have_text(
        ["3/9", "3", "9", "O", "D"])
    expect(diff.locator('tr[data-cell="5/4"] td')).to_have_text(
        ["5/4", "5", "4", "O", "S"])
    screenshot("tableau-diff")

    tomorrow = gaming_day_for(timezone.now(), 6) + timedelta(days=1)
    form = page.locator("#assign-form")
    expect(form.get_by_label("From gaming day")).to_have_value(tomorrow.isoformat())
    form.get_by_label("Table").select_option(label="Table 1")
    form.get_by_label("Reason").fill("club nights from tomorrow")
    form.get_by_role("button", name="Assign").click()

    expect(page.locator("ul.messages")).to_contain_text(
        f"Table 1 plays club-2027 from gaming day {tomorrow.isoformat()}")
    rules = HouseRules.objects.filter(table=table).latest("version")
    assert rules.tableau == row and rules.effective_from == tomorrow
    offer = page.locator("#reaudit-offer")
    expect(offer).to_contain_text("Table 1 plays this version from")
    expect(offer.get_by_label("Table 1")).to_be_checked()
    screenshot("tableau-assigned")
    offer.get_by_role("button", name="Start the re-audit").click()

    expect(page.get_by_role("heading", name=re.compile(r"^Re-audit #\d+$")))\
        .to_be_visible()
    expect(page.locator("#job-status")).to_have_text("done")
    expect(page.locator("#appear")).to_contain_text("No finding appears.")
    expect(page.locator("#disappear")).to_contain_text("No finding disappears.")
    screenshot("tableau-reaudit")
