"""Tableau versions (docs/rules.md, "Tableau versions"): a version made from
another by changing cells, compared with the one in force at a table, and
assigned to a table from a gaming day, over the service and the API. Every
refusal names its field and writes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from casino.models import ChangeLog
from tables import chemmy
from tables.errors import Invalid
from tables.models import HouseRules, TableauVersion
from tables.services import gaming_day_for, house_rules_change
from tables.services.tableaux import (
    parse_cell,
    tableau_assign,
    tableau_derive,
    tableau_diff,
    tableau_in_force,
)
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
STANDARD = "chemmy-standard-1"
URL = "/api/v1/tableaux/"


def counts():
    return (TableauVersion.objects.count(), HouseRules.objects.count(),
            ChangeLog.objects.count())


def today(table=None):
    return gaming_day_for(timezone.now(), 6)


def body(**over):
    return {"from_version": STANDARD, "version": "club-2027",
            "cells": {"3/9": "D", "5/4": "S"}, "reason": "club variant",
            "description": "the club's tableau", **over}


@pytest.fixture
def club(manager):
    return tableau_derive(from_version=STANDARD, version="club-2027",
                          cells={"3/9": "D", "5/4": "S"}, user=manager,
                          reason="club variant")


# --- the service ---------------------------------------------------------


def test_cell_keys():
    assert parse_cell("3/9") == (3, 10)
    assert parse_cell("6/stood") == (6, 0)
    assert parse_cell("0/0") == (0, 1)
    for bad in ("8/3", "3/10", "3/x", "3", "/9", "-1/2", " 3/9", "3/9/1", 39, None):
        with pytest.raises(ValueError):
            parse_cell(bad)


def test_derive_changes_only_the_cells_named(manager):
    before = counts()
    row = tableau_derive(from_version=STANDARD, version="club-2027",
                         cells={"3/9": "D", "5/4": "S", "0/0": "D"},
                         user=manager, reason="club variant", description="club")
    engine = row.as_engine()
    std = chemmy.STANDARD_TABLEAU
    assert engine.banker_action(3, 9) is chemmy.Action.DRAW
    assert engine.banker_action(5, 4) is chemmy.Action.STAND
    differing = [(t, c) for t in range(8) for c in range(11)
                 if engine.rows[t][c] != std.rows[t][c]]
    assert differing == [(3, 10), (5, 5)]
    assert counts() == (before[0] + 1, before[1], before[2] + 1)
    log = ChangeLog.objects.get(action="tables.tableau.created", object_id=str(row.pk))
    assert log.reason == "club variant" and log.user == manager
    assert log.new["from_version"] == STANDARD
    assert log.new["cells"] == {"3/9": {"from": "O", "to": "D"},
                                "5/4": {"from": "O", "to": "S"}}


@pytest.mark.parametrize("over, field", [
    ({"cells": {"3/9": "X"}}, "cells"),
    ({"cells": {"3/9": "d"}}, "cells"),
    ({"cells": {"3/9": None}}, "cells"),
    ({"cells": {"8/3": "D"}}, "cells"),
    ({"cells": {"3/10": "D"}}, "cells"),
    ({"cells": {"3/nine": "D"}}, "cells"),
    ({"cells": {"3/9": "O"}}, "cells"),  # no change: 3/9 is O already
    ({"cells": {}}, "cells"),
    ({"cells": ["3/9"]}, "cells"),
    ({"from_version": "nope-1"}, "from_version"),
    ({"version": STANDARD}, "version"),  # a name taken
    ({"version": ""}, "version"),
    ({"version": "x" * 65}, "version"),
    ({"reason": ""}, "reason"),
    ({"reason": "   "}, "reason"),
    ({"description": "d" * 201}, "description"),
])
def test_derive_refusals_name_the_field_and_write_nothing(manager, over, field):
    b = body(**over)
    before = counts()
    with pytest.raises(Invalid) as exc:
        tableau_derive(from_version=b["from_version"], version=b["version"],
                       cells=b["cells"], user=manager, reason=b["reason"],
                       description=b["description"])
    assert exc.value.field == field
    assert counts() == before


def test_diff_lists_changed_cells_with_both_values(club):
    std = TableauVersion.objects.get(version=STANDARD)
    assert tableau_diff(std, club) == [
        {"cell": "3/9", "banker": 3, "column": "9", "from": "O", "to": "D"},
        {"cell": "5/4", "banker": 5, "column": "4", "from": "O", "to": "S"},
    ]
    back = tableau_diff(club, std)
    assert [(c["cell"], c["from"], c["to"]) for c in back] == [
        ("3/9", "D", "O"), ("5/4", "S", "O")]
    assert tableau_diff(club, club) == []
    pb = TableauVersion.objects.get(version="punto-banco-1")
    # punto banco's banker: draw on 3 v 9 and on 5 v 4 (docs/rules.md)
    assert [c["cell"] for c in tableau_diff(std, pb)] == ["3/9", "5/4"]


def test_assign_from_tomorrow_keeps_today(table, manager, club):
    tomorrow = today() + timedelta(days=1)
    before = counts()
    rules = tableau_assign(table=table, tableau_version="club-2027",
                           effective_from=tomorrow, reason="club night",
                           user=manager)
    assert rules.tableau == club and rules.effective_from == tomorrow
    assert counts() == (before[0], before[1] + 1, before[2] + 1)
    log = ChangeLog.objects.filter(action="tables.house_rules.changed").last()
    assert log.reason == "club night"
    assert log.new["tableau"] == "club-2027" and log.old["tableau"] == STANDARD
    table.refresh_from_db()
    assert tableau_in_force(table).version == STANDARD  # not before tomorrow


def test_assign_refusals(table, manager, club):
    yesterday = today() - timedelta(days=1)
    before = counts()
    with pytest.raises(Invalid) as exc:
        tableau_assign(table=table, tableau_version="club-2027",
                       effective_from=yesterday, reason="r", user=manager)
    assert exc.value.field == "effective_from"
    assert "never retroactive" in exc.value.message
    with pytest.raises(Invalid) as exc:
        tableau_assign(table=table, tableau_version="nope", reason="r", user=manager)
    assert exc.value.field == "tableau_version"
    with pytest.raises(Invalid) as exc:
        tableau_assign(table=table, tableau_version="club-2027", reason="",
                       user=manager)
    assert exc.value.field == "reason"
    assert counts() == before


def test_assign_refuses_a_tableau_that_voids_a_house_prescription(table, manager,
                                                                  club):
    # the house prescribes the banker's choice on 3 v 9, optional in the
    # standard tableau; club-2027 makes it a D cell: no choice to prescribe
    house_rules_change(table=table, user=manager, reason="house draws on 3 v 9",
                       banker_prescriptions={"3/9": "draw"})
    before = counts()
    with pytest.raises(Invalid) as exc:
        tableau_assign(table=table, tableau_version="club-2027", reason="r",
                       user=manager)
    assert exc.value.field == "banker_prescriptions"
    assert counts() == before


# --- the API -------------------------------------------------------------


def test_api_list_and_detail_with_rows(as_user, croupier, club):
    r = as_user(croupier).get(URL)
    assert r.status_code == 200
    names = [t["version"] for t in r.json()]
    assert {STANDARD, "punto-banco-1", "club-2027"} <= set(names)
    club_json = next(t for t in r.json() if t["version"] == "club-2027")
    assert club_json["rows"]["3"][10] == "D" and len(club_json["rows"]) == 8
    r = as_user(croupier).get(f"{URL}{club.pk}/")
    assert r.status_code == 200 and r.json()["rows"] == club.rows
    assert as_user(croupier).get(f"{URL}987654/").status_code == 404


def test_api_create(as_user, manager):
    before = counts()
    r = as_user(manager).post(URL, body(), format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["version"] == "club-2027"
    assert r.json()["rows"]["5"][5] == "S"
    assert counts() == (before[0] + 1, before[1], before[2] + 1)
    log = ChangeLog.objects.get(action="tables.tableau.created",
                                object_id=str(r.json()["id"]))
    assert log.reason == "club variant"


@pytest.mark.parametrize("over, field", [
    ({"cells": {"3/9": "X"}}, "cells"),
    ({"cells": {"9/9": "D"}}, "cells"),
    ({"cells": {"3/9": "O"}}, "cells"),
    ({"cells": {"3/9": 1}}, "cells"),
    ({"cells": "3/9=D"}, "cells"),
    ({"from_version": "nope-1"}, "from_version"),
    ({"from_version": 3}, "from_version"),
    ({"version": STANDARD}, "version"),
    ({"reason": ""}, "reason"),
    ({"reason": None}, "reason"),
])
def test_api_create_refusals(as_user, manager, over, field):
    b = body(**over)
    before = counts()
    r = as_user(manager).post(URL, b, format="json")
    assert r.status_code == 400, r.json()
    assert field in r.json(), r.json()
    assert counts() == before


@pytest.mark.parametrize("missing", ["reason", "from_version", "version", "cells"])
def test_api_create_missing_field(as_user, manager, missing):
    b = body()
    del b[missing]
    before = counts()
    r = as_user(manager).post(URL, b, format="json")
    assert r.status_code == 400 and missing in r.json()
    assert counts() == before


@pytest.mark.parametrize("role", ["croupier", "pitboss", "auditor", None])
def test_api_writes_are_a_managers(api, table, club, role):
    user = make_user(f"who-{role}", role)
    api.force_authenticate(user=user)
    before = counts()
    assert api.post(URL, body(version="x-1"), format="json").status_code == 403
    r = api.post(f"/api/v1/tables/{table.pk}/tableau/",
                 {"tableau_version": "club-2027", "reason": "r"}, format="json")
    assert r.status_code == 403
    assert counts() == before
    reads = api.get(URL).status_code, api.get(f"{URL}{club.pk}/diff/?table="
                                                f"{table.pk}").status_code
    assert reads == ((403, 403) if role is None else (200, 200))


def test_api_anonymous_is_refused(api, club):
    assert api.get(URL).status_code in (401, 403)
    assert api.post(URL, body(version="x-2"), format="json").status_code in (401, 403)


def test_api_diff(as_user, auditor, table, club):
    c = as_user(auditor)
    r = c.get(f"{URL}{club.pk}/diff/?against={STANDARD}")
    assert r.status_code == 200
    assert r.json()["changes"] == [
        {"cell": "3/9", "banker": 3, "column": "9", "from": "O", "to": "D"},
        {"cell": "5/4", "banker": 5, "column": "4", "from": "O", "to": "S"},
    ]
    std = TableauVersion.objects.get(version=STANDARD)
    by_id = c.get(f"{URL}{club.pk}/diff/?against={std.pk}").json()
    assert by_id["changes"] == r.json()["changes"] and by_id["against"] == STANDARD
    at_table = c.get(f"{URL}{club.pk}/diff/?table={table.pk}").json()
    assert at_table["against"] == STANDARD and at_table["table"] == table.pk
    assert at_table["changes"] == r.json()["changes"]
    assert c.get(f"{URL}{std.pk}/diff/?table={table.pk}").json()["changes"] == []
    for q, field in (("against=nope", "against"), ("table=987654", "table"),
                     ("table=x", "table"), ("", "against")):
        r = c.get(f"{URL}{club.pk}/diff/?{q}")
        assert r.status_code == 400 and field in r.json(), (q, r.json())


def test_api_assign_from_tomorrow_offers_a_reaudit(as_user, manager, table, club):
    tomorrow = today() + timedelta(days=1)
    before = counts()
    r = as_user(manager).post(
        f"/api/v1/tables/{table.pk}/tableau/",
        {"tableau_version": "club-2027", "effective_from": tomorrow.isoformat(),
         "reason": "club nights"}, format="json")
    assert r.status_code == 201, r.json()
    out = r.json()
    assert out["rules"]["tableau_version"] == "club-2027"
    assert out["rules"]["effective_from"] == tomorrow.isoformat()
    assert [c["cell"] for c in out["changes"]] == ["3/9", "5/4"]
    assert out["reaudit"]["url"] == "/api/v1/reports/reaudit/"
    assert out["reaudit"]["body"] == {
        "tableau_version": "club-2027", "tables": [table.pk],
        "from_day": (tomorrow - timedelta(days=30)).isoformat(),
        "to_day": today().isoformat()}
    assert counts() == (before[0], before[1] + 1, before[2] + 1)
    assert ChangeLog.objects.filter(action="tables.house_rules.changed",
                                    reason="club nights").count() == 1


@pytest.mark.parametrize("over, field", [
    ({"effective_from": "2001-01-01"}, "effective_from"),
    ({"effective_from": "tomorrow"}, "effective_from"),
    ({"effective_from": "9999-12-31"}, "effective_from"),
    ({"tableau_version": "nope"}, "tableau_version"),
    ({"tableau_version": 7}, "tableau_version"),
    ({"reason": ""}, "reason"),
])
def test_api_assign_refusals(as_user, manager, table, club, over, field):
    b = {"tableau_version": "club-2027", "reason": "r", **over}
    before = counts()
    r = as_user(manager).post(f"/api/v1/tables/{table.pk}/tableau/", b,
                              format="json")
    assert r.status_code == 400 and field in r.json(), r.json()
    if over.get("effective_from") == "2001-01-01":
        assert "never retroactive" in r.json()["detail"]
    assert counts() == before


def test_api_assign_refuses_a_voided_prescription(as_user, manager, table, club):
    house_rules_change(table=table, user=manager, reason="house stands on 5 v 4",
                       banker_prescriptions={"5/4": "stand"})
    before = counts()
    r = as_user(manager).post(f"/api/v1/tables/{table.pk}/tableau/",
                              {"tableau_version": "club-2027", "reason": "r"},
                              format="json")
    assert r.status_code == 400 and "banker_prescriptions" in r.json()
    assert counts() == before


def test_api_assign_unknown_table(as_user, manager, club):
    r = as_user(manager).post("/api/v1/tables/987654/tableau/",
                              {"tableau_version": "club-2027", "reason": "r"},
                              format="json")
    assert r.status_code == 404
