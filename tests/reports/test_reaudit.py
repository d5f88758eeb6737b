"""Re-audit: a period checked again against a new tableau version, in chunks
(a Celery chord; eager here, a real worker in test_worker.py)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connections
from django.urls import reverse

from audit.reports import reaudit, reaudit_check
from audit.reports.models import ReauditChunk, ReauditFinding, ReauditRun
from audit.reports.reaudit import (
    plan_chunks,
    reaudit_chunk,
    reaudit_request,
    run_position,
)
from casino import replica
from casino.models import ChangeLog
from tables import chemmy
from tables.models import Coup, Finding, Table
from tables.rollups import rollup_recompute, rollup_snapshot
from tables.services import house_rules_change
from tests.conftest import seed_tableau

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
    return seed_tableau(VARIANT, variant_rows(),
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


# -- how far the data read goes, and the reads before the write -----------------


def _last_coup() -> int:
    return Coup.objects.order_by("-id").values_list("id", flat=True)[0]


def test_the_run_says_up_to_which_coup_it_read(
        croupier, manager, auditor, as_user, client, variant,
        django_capture_on_commit_callbacks):
    play(croupier, DAY1, tables=2, shoes=1, seed=26, rate=0.1)
    last = _last_coup()
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1,
                              tableau_version=VARIANT, chunk_size=40)
    run.refresh_from_db()
    assert run.status == "done" and run.chunks_total > 1, run.error
    # no replica here: every chunk read the primary, all of it
    for chunk in ReauditChunk.objects.filter(run=run):
        p = chunk.data_position
        assert (p["alias"], p["replica"], p["coup"], p["lag_seconds"]) == (
            "default", False, last, None), p
        assert p["text"] == replica.position_text(p)
    p = run.data_position
    assert (p["alias"], p["replica"], p["coup"]) == ("default", False, last)
    assert p["text"] == replica.position_text(p)
    assert p["text"].startswith(f"Data up to coup #{last}, recorded at ")
    assert p["text"].endswith("; read from the main database")
    # the API and the page say it
    api = as_user(auditor).get(f"/api/v1/reports/reaudit/{run.pk}/").json()
    assert api["data_position"] == p
    client.force_login(auditor)
    page = client.get(reverse("reports:reaudit", args=[run.pk])).content.decode()
    assert f"Data up to coup #{last}, recorded at {p['coup_at']}" in page
    assert "read from the main database" in page


def test_a_run_position_is_its_chunks_most_conservative():
    def chunk(coup, lag, alias="reports", read_at="2025-03-03T23:00:00+01:00"):
        return {"alias": alias, "replica": alias == "reports", "coup": coup,
                "coup_at": f"at {coup}", "replayed_at": f"replayed {coup}",
                "lag_seconds": lag, "read_at": read_at, "text": "..."}

    p = run_position([
        chunk(120, "0.0"),
        chunk(90, "2.5", read_at="2025-03-03T23:00:05+01:00"),
        chunk(130, None, alias="default", read_at="2025-03-03T22:59:59+01:00"),
        chunk(100, "7.0"),
        {},  # a chunk done before positions were kept
    ])
    assert (p["coup"], p["coup_at"], p["replayed_at"]) == (90, "at 90", "replayed 90")
    assert (p["replica"], p["lag_seconds"], p["alias"]) == (True, "7.0",
                                                           "default,reports")
    assert p["read_at"] == "2025-03-03T22:59:59+01:00"
    assert p["text"] == ("Data up to coup #90, recorded at at 90; read from the "
                         "reports copy, 7.0 s behind the main database")
    # a chunk that saw no coup at all is lower still
    assert run_position([chunk(5, "0.0"), chunk(None, "0.0")])["coup"] is None
    primary = run_position([chunk(7, None, "default"), chunk(8, None, "default")])
    assert (primary["coup"], primary["replica"], primary["alias"]) == (
        7, False, "default")
    assert primary["text"].endswith("; read from the main database")
    assert run_position([]) == run_position([{}]) == {}


def test_a_chunk_done_by_another_delivery_while_it_read_writes_nothing(
        croupier, manager, variant, monkeypatch):
    """The chunk reads before it locks its row: a second delivery of it that
    read meanwhile finds it done once it holds the lock, and writes nothing."""
    play(croupier, DAY1, tables=2, shoes=1, seed=27, rate=0.2)
    # planned, not sent: the deliveries are below
    monkeypatch.setattr(reaudit, "reaudit_dispatch", lambda run: True)
    run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1,
                          tableau_version=VARIANT)
    assert run.chunks_total == 1
    check = reaudit.check_cells
    reads, other = [], []

    def read_while_the_other_delivery_writes(*args, **kwargs):
        reads.append(1)
        changes = check(*args, **kwargs)
        if len(reads) == 1:  # the other delivery reads, locks and writes first
            other.append(reaudit_chunk(run_id=run.pk, index=0))
        return changes

    monkeypatch.setattr(reaudit, "check_cells", read_while_the_other_delivery_writes)
    assert reaudit_chunk(run_id=run.pk, index=0) == {"chunk": 0, "skipped": True}
    assert len(reads) == 2  # both read: the first found it done only then
    done = other[0]
    assert "skipped" not in done and done["new"] + done["cleared"] > 0
    run.refresh_from_db()
    assert (run.chunks_done, run.coups_checked, run.findings_new,
            run.findings_cleared) == (1, done["coups"], done["new"], done["cleared"])
    assert ReauditFinding.objects.filter(run=run).count() == \
        done["new"] + done["cleared"]
    assert ChangeLog.objects.filter(action="reports.reaudit.chunk_done",
                                    object_id=str(run.pk)).count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_chunk_reads_outside_any_transaction_on_default(
        _migration_rows, croupier, manager, monkeypatch,
        django_capture_on_commit_callbacks):
    """casino/replica.py: what a transaction on "default" reads may decide
    what it writes, so the replica is never read inside one; the re-audit
    reads first (in a reading() block), then opens its write transaction."""
    play(croupier, DAY1, tables=1, shoes=1, seed=28, rate=0.1)
    seen = {}
    read_rows, compare = reaudit_check.read_rows, reaudit._compare

    def watched_read(*args, **kwargs):
        seen.setdefault("read", []).append(
            (connections["default"].in_atomic_block, replica.read_alias()))
        yield from read_rows(*args, **kwargs)

    def watched_write(*args, **kwargs):
        seen.setdefault("write", []).append(connections["default"].in_atomic_block)
        return compare(*args, **kwargs)

    monkeypatch.setattr(reaudit_check, "read_rows", watched_read)
    monkeypatch.setattr(reaudit, "_compare", watched_write)
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1,
                              tableau_version="punto-banco-1")
    run.refresh_from_db()
    assert run.status == "done" and run.coups_checked > 0, run.error
    assert seen["read"] == [(False, replica.reports_alias())] * run.chunks_total
    assert seen["write"] == [True] * run.chunks_total
