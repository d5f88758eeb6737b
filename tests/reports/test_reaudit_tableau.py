"""Re-audit against a chosen tableau version over chosen tables: the findings
that APPEAR (raised under the new version, not recorded) and DISAPPEAR
(recorded under the version the coup was checked against, not raised under
the new one), checked coup by coup against the engine, in both directions
(standard -> variant, variant -> standard); in the API and on the page."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from audit.reports.models import ReauditFinding
from audit.reports.reaudit import ENGINE_CODES, reaudit_request
from tables import chemmy
from tables.models import Coup, Finding, TableauVersion
from tables.services import (
    StakeInput,
    banker_turn_open,
    coup_record,
    gaming_day_for,
    session_open,
    shoe_open,
    table_create,
)
from tables.services.tableaux import tableau_assign, tableau_derive

pytestmark = pytest.mark.django_db
STANDARD = "chemmy-standard-1"
VARIANT = "variant-t"
# the variant: banker 3 v 9 must stand (was O), 5 v 6 optional (was D),
# 4 v 1 must draw (was S)
CELLS = {"3/9": "S", "5/6": "O", "4/1": "D"}
COUPS = {
    # banker 3 draws against a 9: free in the standard, a false draw in the variant
    "three_v_nine": (["2H", "2D", "9C"], ["2S", "AC", "5H"]),
    # banker 5 stands against a 6: a false draw in the standard, free in the variant
    "five_v_six": (["2H", "2D", "6C"], ["3S", "2C"]),
    # banker 4 stands against an ace: right in the standard, a false draw in the variant
    "four_v_one": (["TH", "KD", "AH"], ["2C", "2S"]),
    # 7 v 7, both stand: the same in both
    "tie": (["3H", "4D"], ["2C", "5S"]),
}


def engine_keys(coup: Coup, version: str) -> set:
    tableau = TableauVersion.objects.get(version=version).as_engine()
    verdict = chemmy.evaluate(coup.punter_cards, coup.banker_cards, tableau=tableau)
    return {(f.code, f.side or "") for f in verdict.findings if f.code in ENGINE_CODES}


def recorded_keys(coup: Coup) -> set:
    return {(f.code, f.side) for f in Finding.objects.filter(
        coup=coup, code__in=ENGINE_CODES)}


@pytest.fixture
def variant(manager):
    return tableau_derive(from_version=STANDARD, version=VARIANT, cells=CELLS,
                          user=manager, reason="test variant")


def play_table(name, croupier, manager, tableau=None):
    table = table_create(user=manager, name=name, seats=9,
                         minimum_banco=Decimal("100.00"))
    if tableau:
        tableau_assign(table=table, tableau_version=tableau, user=manager,
                       reason="variant table")
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    banker_turn_open(session=session, user=croupier, seat=1,
                     bank=Decimal("5000.00"))
    coups = {}
    for key, (punter, banker) in COUPS.items():
        coups[key] = coup_record(
            shoe_id=shoe.pk, user=croupier, punter=punter, banker=banker,
            stakes=[StakeInput(amount=Decimal("100"), seat=2, standing=None,
                               announcement="none")], device="t").coup
    return table, coups


def run_reaudit(manager, version, tables, capture):
    day = gaming_day_for(timezone.now(), 6)
    with capture(execute=True):
        run = reaudit_request(user=manager, from_day=day, to_day=day,
                              tableau_version=version, table_ids=[t.pk for t in tables],
                              chunk_size=10)
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


def changes(run) -> dict:
    out = {"new": set(), "cleared": set(), "kept": set()}
    for f in ReauditFinding.objects.filter(run=run):
        out[f.change].add((f.coup_id, f.code, f.side))
    return out


def expected(coups, checked_against: str, version: str) -> dict:
    out = {"new": set(), "cleared": set(), "kept": set()}
    for coup in coups.values():
        coup.refresh_from_db()
        assert coup.tableau_version == checked_against
        before = recorded_keys(coup)
        assert before == engine_keys(coup, checked_against)  # recorded = engine
        now = engine_keys(coup, version)
        out["new"] |= {(coup.pk, *k) for k in now - before}
        out["cleared"] |= {(coup.pk, *k) for k in before - now}
        out["kept"] |= {(coup.pk, *k) for k in now & before}
    return out


def test_appear_and_disappear_both_directions(croupier, croupier2, manager, variant,
                                              django_capture_on_commit_callbacks):
    std_table, std_coups = play_table("Std", croupier, manager)
    var_table, var_coups = play_table("Var", croupier2, manager, tableau=VARIANT)

    # standard -> variant, the standard table only
    run = run_reaudit(manager, VARIANT, [std_table],
                      django_capture_on_commit_callbacks)
    got, want = changes(run), expected(std_coups, STANDARD, VARIANT)
    assert got == want
    fd = ("false_draw", "banker")
    assert want["new"] == {(std_coups["three_v_nine"].pk, *fd),
                           (std_coups["four_v_one"].pk, *fd)}
    assert want["cleared"] == {(std_coups["five_v_six"].pk, *fd)}
    assert (run.findings_new, run.findings_cleared) == (2, 1)
    assert run.coups_checked == len(COUPS) and run.tables == [std_table.pk]

    # variant -> standard, the variant table only: the other way round
    back = run_reaudit(manager, STANDARD, [var_table],
                       django_capture_on_commit_callbacks)
    got, want = changes(back), expected(var_coups, VARIANT, STANDARD)
    assert got == want
    assert want["new"] == {(var_coups["five_v_six"].pk, *fd)}
    assert want["cleared"] == {(var_coups["three_v_nine"].pk, *fd),
                               (var_coups["four_v_one"].pk, *fd)}
    assert (back.findings_new, back.findings_cleared) == (1, 2)
    # the recorded history is untouched
    assert recorded_keys(std_coups["five_v_six"]) == {fd}
    assert recorded_keys(std_coups["three_v_nine"]) == set()


def test_reaudit_api_lists_what_appears_and_disappears(
        croupier, manager, auditor, variant, as_user, client,
        django_capture_on_commit_callbacks):
    table, coups = play_table("Std", croupier, manager)
    day = gaming_day_for(timezone.now(), 6).isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        r = as_user(manager).post("/api/v1/reports/reaudit/", {
            "from_day": day, "to_day": day, "tableau_version": VARIANT,
            "tables": [table.pk]}, format="json")
    assert r.status_code in (202, 503), r.json()
    run_id = r.json()["id"]
    run = as_user(auditor).get(f"/api/v1/reports/reaudit/{run_id}/").json()
    assert (run["appear"], run["disappear"]) == (2, 1)
    assert run["tables"] == [table.pk]
    rows = as_user(auditor).get(run["findings_url"]).json()["results"]
    assert sorted((f["change"], f["coup"]) for f in rows) == sorted([
        ("appear", coups["three_v_nine"].pk), ("appear", coups["four_v_one"].pk),
        ("disappear", coups["five_v_six"].pk)])
    gone = next(f for f in rows if f["change"] == "disappear")
    assert gone["checked_against"] == STANDARD and gone["tableau_version"] == VARIANT
    only = as_user(auditor).get(run["findings_url"] + "?change=disappear").json()
    assert [f["coup"] for f in only["results"]] == [coups["five_v_six"].pk]
    bad = as_user(auditor).get(run["findings_url"] + "?change=gone")
    assert bad.status_code == 400 and "change" in bad.json()
    assert as_user(auditor).get(
        "/api/v1/reports/reaudit/987654/findings/").status_code == 404
    refused = as_user(manager).post("/api/v1/reports/reaudit/", {
        "from_day": day, "to_day": day, "tables": [987654]}, format="json")
    assert refused.status_code == 400 and "tables" in refused.json()

    client.force_login(manager)
    page = client.get(f"/reports/reaudit/{run_id}/").content.decode()
    assert 'id="appear"' in page and 'id="disappear"' in page
    assert page.count(f"#{coups['three_v_nine'].pk}<") == 1
    assert f"#{coups['five_v_six'].pk}<" in page
