"""The manager's house-rules form in Chromium (issue 24, item 4): a refused
version keeps every value the manager chose and says what is wrong in words;
fixed and saved, the new version has every intended variant; the versions
column is readable at 1280 px. Screenshots: var/screenshots/house-rules-*.png."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import expect

from tables.models import HouseRules

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}}


def sign_in(page, live_server, user):
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


# What the manager means to write: label -> value (selects by their label).
SELECTS = {
    "Rounding": "half even",
    "A stake larger than what is left of the bank": "all or nothing",
    "On a tie": "the stakes are returned",
    "The punter on 5": "draw",
    "The banker on 3 against a 9": "draw",
    "The banker on 5 against a 4": "stand",
    "False-draw sanction": "the player loses the shoe",
}
TEXTS = {
    "Commission rate": "0.0400",
    "Rounded to": "0.50",
    "Maximum bank (empty: none)": "20000.00",
    "Decks": "8",
    "The gaming day starts at (hour)": "5",
    "Reason": "club rules of 2027",
}
HOLDS = ("a false draw", "an optional cell played against")


def fill(page, minimum: str, tableau: str) -> None:
    for label, value in SELECTS.items():
        page.get_by_label(label, exact=True).select_option(label=value)
    for label, value in TEXTS.items():
        page.get_by_label(label, exact=True).fill(value)
    page.get_by_label("Minimum banco", exact=True).fill(minimum)
    page.get_by_label("Tableau", exact=True).select_option(value=tableau)
    page.get_by_label("Hold on error:").check()
    for text in HOLDS:
        page.get_by_label(text).check()


def assert_kept(page, minimum: str, tableau: str) -> None:
    """Every value the manager chose is on the form again."""
    for label, value in SELECTS.items():
        select = page.get_by_label(label, exact=True)
        assert select.evaluate("s => s.options[s.selectedIndex].text") == value, label
    for label, value in TEXTS.items():
        expect(page.get_by_label(label, exact=True)).to_have_value(value)
    expect(page.get_by_label("Minimum banco", exact=True)).to_have_value(minimum)
    expect(page.get_by_label("Tableau", exact=True)).to_have_value(tableau)
    expect(page.get_by_label("Hold on error:")).to_be_checked()
    for text in HOLDS:
        expect(page.get_by_label(text)).to_be_checked()
    expect(page.get_by_label("a third card dealt after a natural")).not_to_be_checked()


def test_a_refused_version_keeps_every_choice_then_saves(
    page, live_server, manager, table, screenshot
):
    sign_in(page, live_server, manager)
    page.goto(f"{live_server.url}/floor/tables/{table.pk}/rules/")
    tableau = page.get_by_label("Tableau", exact=True)
    assert tableau.evaluate("e => e.tagName") == "SELECT"  # no typing a name
    assert set(tableau.locator("option").evaluate_all(
        "os => os.map(o => o.value)")) == {"chemmy-standard-1", "punto-banco-1"}

    # 1. a mistyped amount ("1OO" with a letter O)
    fill(page, "1OO.00", "chemmy-standard-1")
    page.get_by_role("button", name="Write the new version").click()
    error = page.locator("#rules-error")
    expect(error).to_contain_text("Minimum banco: an amount such as 100.00")
    expect(error).to_contain_text("every value you chose is kept")
    expect(page.get_by_label("Minimum banco", exact=True)).to_have_attribute(
        "aria-invalid", "true")
    assert "minimum_banco" not in error.inner_text()  # words, not the field's code
    assert_kept(page, "1OO.00", "chemmy-standard-1")
    screenshot("house-rules-refused")

    # 2. the amount fixed, but a tableau where 3/9 is not optional
    page.get_by_label("Minimum banco", exact=True).fill("200.00")
    page.get_by_label("Tableau", exact=True).select_option(value="punto-banco-1")
    page.get_by_role("button", name="Write the new version").click()
    expect(error).to_contain_text(
        "3/9 is not an optional cell of tableau punto-banco-1")
    assert_kept(page, "200.00", "punto-banco-1")
    assert HouseRules.objects.filter(table=table).count() == 1  # nothing written

    # 3. back to the standard tableau: written, with every intended variant
    page.get_by_label("Tableau", exact=True).select_option(value="chemmy-standard-1")
    page.get_by_role("button", name="Write the new version").click()
    expect(page.locator("ul.messages")).to_contain_text(
        "Version 2 of Table 1's house rules")
    new = HouseRules.objects.get(table=table, version=2)
    assert {
        "commission_rate": new.commission_rate, "commission_unit": new.commission_unit,
        "commission_rounding": new.commission_rounding,
        "minimum_banco": new.minimum_banco, "maximum_bank": new.maximum_bank,
        "cover_rule": new.cover_rule, "tie_rule": new.tie_rule, "decks": new.decks,
        "punter_five": new.punter_five,
        "banker_prescriptions": new.banker_prescriptions,
        "hold_on_error": new.hold_on_error, "hold_warnings": new.hold_warnings,
        "false_draw_sanction": new.false_draw_sanction,
        "gaming_day_cutoff": new.gaming_day_cutoff, "tableau": new.tableau.version,
    } == {
        "commission_rate": Decimal("0.0400"), "commission_unit": Decimal("0.50"),
        "commission_rounding": "half_even", "minimum_banco": Decimal("200.00"),
        "maximum_bank": Decimal("20000.00"), "cover_rule": "all_or_nothing",
        "tie_rule": "returned", "decks": 8, "punter_five": "draw",
        "banker_prescriptions": {"3/9": "draw", "5/4": "stand"},
        "hold_on_error": True, "hold_warnings": ["false_draw", "house_choice"],
        "false_draw_sanction": "lose_shoe", "gaming_day_cutoff": 5,
        "tableau": "chemmy-standard-1",
    }
    row = page.locator('table.versions tr[data-version="2"]')
    expect(row.locator("td.rules")).to_contain_text("The banker on 3 against a 9")
    expect(row.locator("td.written")).to_contain_text("club rules of 2027")
    screenshot("house-rules-saved")
    assert_versions_readable(page)


# Each box of the versions column, measured in the page: (what, width the box
# has, width its content needs, lines it takes, its line height).
MEASURE = """() => {
  const out = [];
  const table = document.querySelector("table.versions");
  const panel = table.closest(".panel");
  out.push({what: "panel", has: panel.clientWidth, needs: panel.scrollWidth});
  const boxes = "td, th, td.rules dt, td.rules dd, .nowrap";
  for (const el of table.querySelectorAll(boxes)) {
    const style = getComputedStyle(el);
    const inline = style.display === "inline";
    const lh = parseFloat(style.lineHeight) || 20;
    const pad = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
    out.push({what: el.tagName + "." + el.className + ": " +
                    el.textContent.trim().slice(0, 40),
              tag: el.tagName, cls: el.className,
              // an inline box has no width of its own: its lines are its rects
              has: inline ? 0 : el.clientWidth, needs: inline ? 0 : el.scrollWidth,
              lines: inline ? el.getClientRects().length
                            : Math.round((el.clientHeight - pad) / lh),
              width: el.getBoundingClientRect().width});
  }
  return out;
}"""


def assert_versions_readable(page) -> None:
    """At 1280 px: nothing overflows its box, the date and the badge stay on
    one line, a rule's name and value take at most two lines each, and the
    rules column is wide enough to read (issue 24, item 4: it wrapped and
    crammed)."""
    boxes = page.evaluate(MEASURE)
    for b in boxes:
        assert b["needs"] <= b["has"] + 1, f"overflows its box: {b}"
    for b in boxes:
        if "nowrap" in b.get("cls", ""):
            assert b["lines"] == 1, f"should be one line: {b}"
        if b.get("tag") in ("DT", "DD"):
            assert b["lines"] <= 2, f"crammed: {b}"
    rules = [b for b in boxes if b.get("tag") == "TD" and b["cls"] == "rules"]
    assert rules and min(b["width"] for b in rules) >= 350, rules


def test_in_french_the_error_is_in_words_and_the_versions_are_readable(
    browser, live_server, manager, table
):
    """French labels are longer: the versions column still reads at 1280 px,
    and a refusal says the field and the reason in French."""
    from tables.services.house import house_rules_change

    house_rules_change(table=table, user=manager, reason="règles du club 2027",
                       maximum_bank=Decimal("20000"), cover_rule="all_or_nothing",
                       punter_five="draw",
                       banker_prescriptions={"3/9": "draw", "5/4": "stand"},
                       hold_on_error=True, hold_warnings=["false_draw", "house_choice"],
                       false_draw_sanction="lose_shoe")
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  locale="fr-FR")
    page = context.new_page()
    try:
        sign_in(page, live_server, manager)
        page.goto(f"{live_server.url}/floor/tables/{table.pk}/rules/")
        page.get_by_label("Jeux", exact=True).fill("neuf")
        page.get_by_label("Motif", exact=True).fill("essai")
        page.locator("form.rules-form button[type=submit]").click()
        error = page.locator("#rules-error")
        expect(error).to_contain_text("Jeux : un nombre entier")
        assert "decks" not in error.inner_text()
        expect(page.get_by_label("Jeux", exact=True)).to_have_value("neuf")
        expect(page.get_by_label("Le ponte à 5", exact=True)).to_have_value("draw")
        row = page.locator('table.versions tr[data-version="2"]')
        expect(row.locator("td.rules")).to_contain_text("Arrêt sur erreur")
        folder = Path(__file__).resolve().parents[2] / "var" / "screenshots"
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / "house-rules-refused-fr.png"),
                        full_page=True)
        assert_versions_readable(page)
    finally:
        context.close()
