"""Re-audit: a period checked again against a new tableau version, in chunks
(a Celery chord; eager here, a real worker in test_worker.py)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from audit.reports.models import ReauditChunk, ReauditFinding, ReauditRun
from audit.reports.reaudit import plan_chunks, reaudit_chunk, reaudit_request
from casino.models import ChangeLog
from tables import chemmy
from tables.models import Coup, Finding, Table, TableauVersion
from tables.rollups import rollup_recompute, rollup_snapshot
from tables.services import house_rules_change

from .conftest import DAY1, DAY2, play

pytestmark = pytest.mark.django_db
VARIANT = "test-variant-1"


def variant_rows():
    rows = {str(t): list(r) for t, r in chemmy.STANDARD_TABLEAU.to_dict()["rows"]
            .items()}
    rows["3"][10] = "S"  # banker 3 against a 9: must stand (was optional)
    rows["5"][5] = "D"  # banker 5 against a 4: must draw (was optional)
    rows["6"] = ["O"] * 11  # banker 6: free choice (drawing was often forced)
    return rows


@pytest.fixture
def variant(db):
    return TableauVersion.objects.create(version=VARIANT, rows=variant_rows(),
                                         description="test variant")


def expected_changes(tableau_version: str):
    """Independently: every current coup judged by the engine, compared with
    the findings it was recorded with."""
    tableau = chemmy.Tableau.from_dict({"version": tableau_version,
                                        "rows": variant_rows()})
    codes = ("false_draw", "draw_after_natural")
    new = kept = cleared = 0
    for coup in Coup.objects.all():
        now = {(f.code, f.side or "") for f in chemmy.evaluate(
            coup.punter_cards, coup.banker_cards, tableau=tableau).findings}
        before = {(f.code, f.side) for f in Finding.objects.filter(coup=coup,
                                                                  code__in=codes)}
        new += len(now - before)
        kept += len(now & before)
        cleared += len(before - now)
    return new, kept, cleared


def test_reaudit_against_the_new_version(croupier, manager, variant,
                                         django_capture_on_commit_callbacks):
    play(croupier, DAY1, tables=2, shoes=1, seed=21, rate=0.1)
    play(croupier, DAY2, tables=2, shoes=1, seed=21, rate=0.1)
    for table in Table.objects.all():
        house_rules_change(table=table, user=manager, reason="new tableau",
                           tableau_version=VARIANT)
    rollups_before = rollup_snapshot()
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY2,
                              chunk_size=60)
    run.refresh_from_db()
    assert run.status == "done", run.error
    assert run.chunks_total == run.chunks_done > 2
    assert run.coups_checked == run.coups_expected == Coup.objects.count()
    new, kept, cleared = expected_changes(VARIANT)
    assert new > 0 and cleared > 0
    assert (run.findings_new, run.findings - run.findings_new,
            run.findings_cleared) == (new, kept, cleared)
    rows = ReauditFinding.objects.filter(run=run)
    assert rows.filter(change="new").count() == new
    assert set(rows.values_list("tableau_version", flat=True)) == {VARIANT}
    # the recorded history is untouched: findings, rollups
    assert rollup_snapshot() == rollups_before == rollup_recompute()
    assert ChangeLog.objects.filter(action="reports.reaudit.requested",
                                    user=manager).exists()
    assert ChangeLog.objects.filter(action="reports.reaudit.done").exists()
    # a redelivered chunk is done already: nothing is written twice
    assert reaudit_chunk(run_id=run.pk, index=0) == {"chunk": 0, "skipped": True}
    assert ReauditFinding.objects.filter(run=run).count() == rows.count()


def test_a_named_version_and_the_chunk_plan(croupier, manager, variant,
                                            django_capture_on_commit_callbacks):
    play(croupier, DAY1, tables=1, shoes=1, seed=22, rate=0.1)
    n = Coup.objects.count()
    plan = plan_chunks(DAY1, DAY1, 25)
    assert sum(size for _, size in plan) == n
    assert all(size <= 25 for _, size in plan)
    parts = {tuple(c[2:]) for cells, _ in plan for c in cells}
    assert len(parts) == len(plan) and all(p[1] == len(plan) for p in parts)
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1,
                              tableau_version=VARIANT, chunk_size=25)
    run.refresh_from_db()
    assert run.status == "done" and run.coups_checked == n
    # split by coup id modulo: each coup checked exactly once
    assert sum(c.coups_checked for c in ReauditChunk.objects.filter(run=run)) == n


def test_an_empty_range_finishes_at_once(manager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1)
    run.refresh_from_db()
    assert (run.status, run.chunks_total, run.percent) == ("done", 0, 100)


def test_a_chunk_that_breaks_fails_the_run_with_the_reason(
    croupier, manager, monkeypatch, django_capture_on_commit_callbacks
):
    from audit.reports import reaudit_check

    play(croupier, DAY1, tables=1, shoes=1, seed=23)

    def boom(punter, banker, tableau):
        raise RuntimeError("engine exploded")

    reaudit_check.forget()  # nothing memoized: the engine is asked
    monkeypatch.setattr(reaudit_check, "engine_findings", boom)
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1)
    run.refresh_from_db()
    assert run.status == "failed"
    assert "RuntimeError: engine exploded" in run.error


@pytest.mark.parametrize("kwargs,field", [
    ({"from_day": "2025-02-30"}, "from_day"),
    ({"to_day": "2024-01-01"}, "to_day"),
    ({"tableau_version": "nope"}, "tableau_version"),
    ({"chunk_size": 1}, "chunk_size"),
])
def test_bad_requests_name_the_field(manager, manager_api_post, kwargs, field):
    r = manager_api_post({"from_day": str(DAY1), "to_day": str(DAY2), **kwargs})
    assert r.status_code == 400 and field in r.json(), r.content
    assert not ReauditRun.objects.exists()


@pytest.fixture
def manager_api_post(manager, as_user, django_capture_on_commit_callbacks):
    def post(body):
        with django_capture_on_commit_callbacks(execute=True):
            return as_user(manager).post("/api/v1/reports/reaudit/", body,
                                         format="json")
    return post


def test_the_button_is_for_managers(croupier, manager, auditor, as_user,
                                    manager_api_post):
    play(croupier, DAY1, tables=1, shoes=1, seed=24)
    r = manager_api_post({"from_day": str(DAY1), "to_day": str(DAY1)})
    assert r.status_code == 202, r.content
    status = as_user(auditor).get(r.data["status_url"]).data
    assert status["status"] == "done" and status["percent"] == 100
    denied = as_user(auditor).post("/api/v1/reports/reaudit/",
                                   {"from_day": str(DAY1), "to_day": str(DAY1)})
    assert denied.status_code == 403


def test_the_command(croupier, manager, variant, capsys,
                     django_capture_on_commit_callbacks):
    """(The waiting path runs against a real worker in test_worker.py.)"""
    play(croupier, DAY1, tables=1, shoes=1, seed=25, rate=0.1)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("reaudit", "--from", str(DAY1), "--to", str(DAY1), "--tableau",
                     VARIANT, "--chunk-size", "40", "--user", "manager1", "--no-wait")
    out = capsys.readouterr().out
    run = ReauditRun.objects.get()
    assert run.status == "done" and run.requested_by == manager
    assert f"re-audit #{run.pk}: {run.coups_expected} coups in {run.chunks_total} " \
        "chunks" in out
    with pytest.raises(CommandError, match="tableau_version"):
        call_command("reaudit", "--from", str(DAY1), "--to", str(DAY1),
                     "--tableau", "nope")
    with pytest.raises(CommandError, match="to_day"):
        call_command("reaudit", "--from", str(DAY2), "--to", str(DAY1))
    with pytest.raises(CommandError, match="--user"):
        call_command("reaudit", "--from", str(DAY1), "--to", str(DAY1),
                     "--user", "nobody")
