"""A manager's tableau pages without a browser: the list, the grid editor
(save, and a refusal naming its field with the manager's cells kept), the
difference with the version in force at a table, the assignment (never
retroactive) and its re-audit offer; who may open what; the French."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from casino.models import ChangeLog
from tables.models import HouseRules, TableauVersion
from tables.services import gaming_day_for
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
STANDARD = "chemmy-standard-1"


def signed_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def counts():
    return (TableauVersion.objects.count(), HouseRules.objects.count(),
            ChangeLog.objects.count())


def editor_post(source, **over):
    data = {"from": source.pk, "version": "club-2027", "description": "club",
            "reason": "club nights"}
    for t, row in source.rows.items():
        for c, v in enumerate(row):
            col = "stood" if c == 0 else str(c - 1)
            data[f"cell:{t}/{col}"] = v
    data["cell:3/9"] = "D"
    data["cell:5/4"] = "S"
    data.update(over)
    return data


@pytest.fixture
def std(db):
    return TableauVersion.objects.get(version=STANDARD)


def test_list_editor_save_diff_assign(manager, table, std):
    c = signed_in(manager)
    page = c.get("/tableaux/").content.decode()
    assert STANDARD in page and "Table 1" in page  # in force at Table 1
    assert f'href="/tableaux/new/?from={std.pk}"' in page
    editor = c.get(f"/tableaux/new/?from={std.pk}").content.decode()
    assert editor.count('class="tcell ') == 88  # 8 rows x 11 cells
    assert 'data-cell="3/9" data-was="O"' in editor
    before = counts()
    r = c.post("/tableaux/new/", editor_post(std))
    row = TableauVersion.objects.get(version="club-2027")
    assert r.status_code == 302 and r["Location"] == f"/tableaux/{row.pk}/"
    assert counts() == (before[0] + 1, before[1], before[2] + 1)
    assert row.rows["3"][10] == "D" and row.rows["5"][5] == "S"
    log = ChangeLog.objects.get(action="tables.tableau.created", object_id=str(row.pk))
    assert log.reason == "club nights" and log.new["from_version"] == STANDARD

    detail = c.get(f"/tableaux/{row.pk}/?table={table.pk}").content.decode()
    assert '<tr data-cell="3/9"><td>3/9</td><td>3</td><td>9</td><td>O</td>' in detail
    assert '<tr data-cell="5/4"><td>5/4</td><td>5</td><td>4</td><td>O</td>' in detail
    assert detail.count('<tr data-cell=') == 2

    yesterday = gaming_day_for(timezone.now(), 6) - timedelta(days=1)
    before = counts()
    r = c.post(f"/tableaux/{row.pk}/assign/", {
        "table": table.pk, "effective_from": yesterday.isoformat(), "reason": "x"},
        follow=True)
    assert "never retroactive" in r.content.decode()
    assert counts() == before
    tomorrow = yesterday + timedelta(days=2)
    r = c.post(f"/tableaux/{row.pk}/assign/", {
        "table": table.pk, "effective_from": tomorrow.isoformat(),
        "reason": "club nights"})
    assert r.status_code == 302 and f"assigned={table.pk}" in r["Location"]
    assert counts() == (before[0], before[1] + 1, before[2] + 1)
    rules = HouseRules.objects.filter(table=table).latest("version")
    assert rules.tableau == row and rules.effective_from == tomorrow
    offer = c.get(r["Location"]).content.decode()
    assert 'id="reaudit-offer"' in offer and "plays this version from" in offer
    assert 'name="tableau_version" value="club-2027"' in offer
    assert (f'value="{(tomorrow - timedelta(days=30)).isoformat()}"' in offer)


@pytest.mark.parametrize("over, field", [
    ({"reason": ""}, "reason"),
    ({"version": STANDARD}, "version"),
    ({"cell:3/9": "O", "cell:5/4": "O"}, "cells"),
    ({"cell:3/9": "X"}, "cells"),
    ({"cell:9/9": "D"}, "cells"),
])
def test_editor_refusal_names_the_field_and_keeps_the_cells(manager, std, over,
                                                            field):
    before = counts()
    r = signed_in(manager).post("/tableaux/new/", editor_post(std, **over))
    assert r.status_code == 400
    page = r.content.decode()
    assert f"<strong>{field}</strong>" in page
    assert counts() == before
    if field != "cells":  # the manager's two taps are still on the grid
        assert 'data-cell="3/9" data-was="O"' in page
        assert '<input type="hidden" name="cell:3/9" value="D">' in page


@pytest.mark.parametrize("role, reads, writes", [
    ("croupier", False, False), ("pitboss", False, False),
    ("auditor", True, False), ("manager", True, True),
])
def test_who_opens_what(role, reads, writes, table, std):
    c = signed_in(make_user(f"p-{role}", role))
    assert (c.get("/tableaux/").status_code == 200) is reads
    assert (c.get(f"/tableaux/{std.pk}/").status_code == 200) is reads
    assert (c.get("/tableaux/new/").status_code == 200) is writes
    before = counts()
    r = c.post(f"/tableaux/{std.pk}/assign/", {"table": table.pk, "reason": "r"})
    assert (r.status_code == 403) is not writes
    if not writes:
        assert counts() == before
        r = c.post("/tableaux/new/", editor_post(std))
        assert r.status_code == 403 and counts() == before
    if reads and not writes:
        page = c.get(f"/tableaux/{std.pk}/").content.decode()
        assert "assign-form" not in page and "/tableaux/new/" not in page


def test_nav_shows_the_tableaux_to_who_opens_them(manager, pitboss):
    assert 'href="/tableaux/"' in signed_in(manager).get("/floor/").content.decode()
    assert 'href="/tableaux/"' not in signed_in(pitboss).get("/floor/").content.decode()


def test_pages_in_french(manager, table, std):
    c = signed_in(manager)
    c.cookies["django_language"] = "fr"
    from django.conf import settings

    c.cookies[settings.LANGUAGE_COOKIE_NAME] = "fr"
    page = c.get(f"/tableaux/{std.pk}/?table={table.pk}",
                 HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Comparer avec la version en vigueur à" in page
    assert "Ré-auditer une période selon cette version" in page
    editor = c.get("/tableaux/new/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Enregistrer la nouvelle version" in editor
