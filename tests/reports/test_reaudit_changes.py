"""Re-audit, what it writes: exactly the findings the engine gives that change
(appear or disappear) against the ones each coup was recorded with, over a
mixed night (legal coups, croupier's false draws the new tableau clears or
keeps, corrected coups where only the latest revision counts); the kept ones
counted, not written; none twice, whether a chunk is delivered twice, runs
twice at once (PostgreSQL) or is sent again to a real worker (Redis). And the
memo the chunks judge with equals the engine, situation by situation."""

from __future__ import annotations

import json
import random
import re
import threading

import pytest
from django.db import IntegrityError, connection, transaction

from audit.reports import reaudit, reaudit_check
from audit.reports.models import ReauditChunk, ReauditFinding, ReauditRun
from audit.reports.reaudit import ENGINE_CODES, reaudit_chunk, reaudit_request
from casino.models import ChangeLog
from tables import chemmy
from tables.models import Coup, Finding, TableauVersion
from tables.rollups import current_coups
from tests.conftest import seed_tableau

from .conftest import DAY1, DAY2, play, wait_for
from .test_reaudit import VARIANT, variant_rows

# -- the memo against the engine (no database) ----------------------------------


def _random_hand(rng: random.Random, third: bool) -> list[str]:
    return [rng.choice(chemmy.ALL_CODES) for _ in range(3 if third else 2)]


@pytest.mark.parametrize("tableau", [
    chemmy.STANDARD_TABLEAU, chemmy.PUNTO_BANCO_TABLEAU,
    chemmy.Tableau.from_dict({"version": "memo-variant", "rows": variant_rows()}),
], ids=lambda t: t.version)
def test_the_memo_gives_what_the_engine_gives(tableau):
    """20 000 coups of random cards (naturals with a third card dealt anyway
    among them): the memoized verdict is the engine's, finding for finding
    (code, side, severity, detail, message)."""
    rng = random.Random(7)
    judge = reaudit_check.Judge(tableau)
    alone = 0  # a natural with a third card: its finding names the card
    for _ in range(20_000):
        p = _random_hand(rng, rng.random() < 0.5)
        b = _random_hand(rng, rng.random() < 0.5)
        want = reaudit_check.engine_findings(p, b, tableau)
        assert judge(json.dumps(p), json.dumps(b)) == want, (p, b)
        natural = max(chemmy.hand_total(p[:2]), chemmy.hand_total(b[:2])) >= 8
        alone += natural and len(p) + len(b) > 4
    # every other situation evaluated once: (punter total, his third card,
    # banker total, whether he drew) at most 10 x 11 x 10 x 2
    assert judge.evaluated <= alone + len(judge.memo) <= alone + 2200


def test_a_card_named_in_a_finding_is_never_memoized():
    """After a natural a third card's finding names the card: the same point
    values with another card give another message."""
    judge = reaudit_check.Judge(chemmy.STANDARD_TABLEAU)
    five_clubs = judge('["9H", "KD"]', '["2C", "3C", "5C"]')
    five_hearts = judge('["9S", "QD"]', '["3D", "2H", "5H"]')
    assert [f.code for f in five_clubs] == ["draw_after_natural"]
    assert "(5C)" in five_clubs[0].message and "(5H)" in five_hearts[0].message
    # and a coup stored in another spelling is judged on its own, rightly
    other = judge('["10h", "kd", "4s"]', '["2c", "3c"]')
    assert other == reaudit_check.engine_findings(["TH", "KD", "4S"], ["2C", "3C"],
                                                  chemmy.STANDARD_TABLEAU)


# -- a mixed night --------------------------------------------------------------


@pytest.fixture
def variant(db):
    return seed_tableau(VARIANT, variant_rows(),
                                         description="test variant")


def _correct(coup: Coup, pitboss, punter, banker):
    from tables.services import StakeInput
    from tables.services.corrections import coup_correct

    # a correction re-settles the coups after it: take the latest revision
    coup = current_coups().get(shoe=coup.shoe, seq=coup.seq)
    stakes = [StakeInput(amount=s.amount, seat=s.seat, standing=s.standing or None,
                         announcement=s.announcement) for s in coup.stakes.all()]
    coup_correct(coup=coup, user=pitboss, reason="cards mis-keyed", punter=punter,
                 banker=banker, stakes=stakes)


def mixed_night(croupier, pitboss):
    """Two gaming days, two tables, 10 % false draws; then coups corrected:
    one twice (a plain coup, then banker 3 drawing against a 9, which the
    variant flags, then a plain 7 v 7 again), one plain coup now that very
    draw, and one recorded false draw now without it."""
    play(croupier, DAY1, tables=2, shoes=1, seed=31, rate=0.1)
    play(croupier, DAY2, tables=2, shoes=1, seed=32, rate=0.1)
    current = current_coups().filter(natural="", finding_count=0).order_by("id")
    first, second = current[3], current[10]
    flagged = (current_coups().filter(findings__code="false_draw")
               .order_by("id").first())
    three_v_nine = (["2H", "2D", "9C"], ["2S", "AC", "5H"])
    _correct(first, pitboss, *three_v_nine)
    _correct(first, pitboss, ["3H", "4D"], ["2C", "5S"])
    _correct(second, pitboss, *three_v_nine)
    _correct(flagged, pitboss, ["3H", "4D"], ["2C", "5S"])
    assert Coup.objects.filter(revision__gt=1).count() >= 4


def engine_expected(version: str):
    """Independently, with the ORM and the engine, no memo: every current
    revision judged; what must appear / disappear, and how many are kept."""
    tableau = TableauVersion.objects.get(version=version).as_engine()
    want, kept = {}, 0
    for coup in current_coups().order_by("id"):
        before = {(f.code, f.side): f for f in Finding.objects.filter(
            coup=coup, code__in=ENGINE_CODES)}
        now = {(f.code, f.side or ""): f for f in chemmy.evaluate(
            coup.punter_cards, coup.banker_cards, tableau=tableau).findings}
        for key, f in now.items():
            if key in before:
                kept += 1
            else:
                want[(coup.pk, *key)] = ("new", f.severity, dict(f.detail),
                                         f.message)
        for key, f in before.items():
            if key not in now:
                want[(coup.pk, *key)] = (
                    "cleared", f.severity, f.detail,
                    f"cleared under {version}: {f.message}"[:300])
    return want, kept


def written(run) -> dict:
    rows = list(ReauditFinding.objects.filter(run=run).values_list(
        "coup_id", "code", "side", "change", "severity", "detail", "message"))
    got = {(c, code, side): rest for c, code, side, *rest in rows}
    assert len(got) == len(rows), "a finding written twice"
    return {k: tuple(v) for k, v in got.items()}


def assert_run_is_the_engine(run, want, kept):
    run.refresh_from_db()
    assert run.status == "done", run.error
    assert written(run) == want
    new = sum(v[0] == "new" for v in want.values())
    cleared = sum(v[0] == "cleared" for v in want.values())
    assert new > 0 and cleared > 0 and kept > 0
    assert (run.findings_new, run.findings_cleared, run.findings) == (
        new, cleared, new + kept)
    assert not ReauditFinding.objects.filter(run=run, change="kept").exists()
    assert run.coups_checked == run.coups_expected == current_coups().count()


def test_the_run_writes_what_the_engine_changes(
        croupier, pitboss, manager, auditor, as_user, variant,
        django_capture_on_commit_callbacks):
    mixed_night(croupier, pitboss)
    want, kept = engine_expected(VARIANT)
    # the corrected coups: only their latest revision is judged
    superseded = [c.pk for c in Coup.objects.all()
                  if c.pk not in set(current_coups().values_list("pk", flat=True))]
    assert superseded and not any(k[0] in superseded for k in want)
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY2,
                              tableau_version=VARIANT, chunk_size=40)
    assert run.chunks_total > 4
    assert_run_is_the_engine(run, want, kept)
    api = as_user(auditor).get(f"/api/v1/reports/reaudit/{run.pk}/").json()
    new = sum(v[0] == "new" for v in want.values())
    assert (api["appear"], api["disappear"], api["kept"]) == (
        new, len(want) - new, kept)
    listed = as_user(auditor).get(api["findings_url"] + "?page_size=1000").json()
    assert listed["count"] == len(want)
    # delivered again, every chunk: done already, nothing more written
    before = written(run), ReauditRun.objects.filter(pk=run.pk).values().get()
    for index in range(run.chunks_total):
        assert reaudit_chunk(run_id=run.pk, index=index)["skipped"]
    assert (written(run), ReauditRun.objects.filter(pk=run.pk).values().get()) \
        == before


def test_a_finding_is_written_once_per_run_coup_code_and_side(
        croupier, manager, variant, django_capture_on_commit_callbacks):
    """The database refuses a second row, whatever writes it."""
    play(croupier, DAY1, tables=1, shoes=1, seed=33, rate=0.2)
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1,
                              tableau_version=VARIANT)
    row = ReauditFinding.objects.filter(run=run).values().first()
    assert row is not None
    row.pop("id")
    with pytest.raises(IntegrityError), transaction.atomic():
        ReauditFinding.objects.bulk_create([ReauditFinding(**row)])  # the chunk's way


def test_a_run_over_some_tables_reads_only_theirs(
        croupier, manager, variant, django_capture_on_commit_callbacks):
    report = play(croupier, DAY1, tables=2, shoes=1, seed=34, rate=0.1)
    one = report.table_ids[0]
    with django_capture_on_commit_callbacks(execute=True):
        run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1,
                              tableau_version=VARIANT, table_ids=[one])
    run.refresh_from_db()
    assert run.coups_checked == current_coups().filter(
        shoe__session__table_id=one).count() > 0
    assert set(ReauditFinding.objects.filter(run=run)
               .values_list("table_id", flat=True)) <= {one}


def test_the_plan_keeps_days_whole_and_shares_the_work(croupier, manager,
                                                      monkeypatch):
    play(croupier, DAY1, tables=2, shoes=2, seed=35)
    play(croupier, DAY2, tables=2, shoes=1, seed=36)
    n = Coup.objects.count()
    tables = {day: set(Coup.objects.filter(gaming_day=day).values_list(
        "shoe__session__table_id", flat=True)) for day in (DAY1, DAY2)}
    plan = reaudit.plan_chunks(DAY1, DAY2, 100)
    assert sum(size for _, size in plan) == n and all(s <= 100 for _, s in plan)
    # a day whole in one chunk, or split by coup id with every table of it
    whole: dict[str, set] = {}
    for i, (cells, _) in enumerate(plan):
        for _, day, _, parts in cells:
            if parts == 1:
                whole.setdefault(day, set()).add(i)
        for day, part in {(d, p) for _, d, p, ps in cells if ps > 1}:
            assert {t for t, d, p, _ in cells if (d, p) == (day, part)} \
                == tables[DAY1 if day == str(DAY1) else DAY2]
    assert all(len(chunks) == 1 for chunks in whole.values())
    assert len(plan) > 2
    # a big chunk size still gives MIN_CHUNKS chunks when the range allows it
    monkeypatch.setattr(reaudit, "MIN_CHUNK_COUPS", 10)
    assert len(reaudit.plan_chunks(DAY1, DAY2, 100_000)) >= reaudit.MIN_CHUNKS


# -- the same chunk twice at once (PostgreSQL: its row lock) --------------------


@pytest.mark.postgres
def test_a_chunk_run_twice_at_once_writes_once(
        transactional_db, _migration_rows, croupier, pitboss, manager, monkeypatch,
        django_capture_on_commit_callbacks):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL's row locks")
    seed_tableau(VARIANT, variant_rows())
    mixed_night(croupier, pitboss)
    want, kept = engine_expected(VARIANT)
    # planned, not sent: the two deliveries below are the only ones
    monkeypatch.setattr(reaudit, "reaudit_dispatch", lambda run: True)
    run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY2,
                          tableau_version=VARIANT, chunk_size=40)
    inside, release = threading.Event(), threading.Event()
    compare = reaudit._compare

    def held(run, *args):
        inside.set()  # the first delivery holds the chunk's row lock here
        release.wait(10)
        return compare(run, *args)

    monkeypatch.setattr(reaudit, "_compare", held)
    results = {}

    def deliver(name, index):
        try:
            results[name] = reaudit_chunk(run_id=run.pk, index=index)
        finally:
            connection.close()

    for index in range(run.chunks_total):
        inside.clear()
        release.clear()
        first = threading.Thread(target=deliver, args=("first", index))
        first.start()
        assert inside.wait(10)
        second = threading.Thread(target=deliver, args=("second", index))
        second.start()
        second.join(0.5)
        assert second.is_alive()  # waiting on the chunk's row
        release.set()
        first.join(20)
        second.join(20)
        assert "skipped" not in results["first"]
        assert results["second"] == {"chunk": index, "skipped": True}
    reaudit.reaudit_finish(run_id=run.pk)
    assert_run_is_the_engine(ReauditRun.objects.get(pk=run.pk), want, kept)
    assert ReauditChunk.objects.filter(run=run, done_at=None).count() == 0


# -- a real worker, every chunk sent twice (Redis) ------------------------------


@pytest.mark.postgres
@pytest.mark.redis
def test_on_a_worker_every_chunk_sent_twice_writes_once(
        start_worker, croupier, pitboss, manager):
    from audit.reports.tasks import reaudit_chunk_task

    seed_tableau(VARIANT, variant_rows())
    mixed_night(croupier, pitboss)
    want, kept = engine_expected(VARIANT)
    worker = start_worker()  # two pool processes: the copies race the chord
    run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY2,
                          tableau_version=VARIANT, chunk_size=40)
    copies = [reaudit_chunk_task.delay(run.pk, i) for i in range(run.chunks_total)]
    run, _ = wait_for(lambda: ReauditRun.objects.get(pk=run.pk),
                      lambda r: r.status in ("done", "failed"), timeout=90)
    for copy in copies:
        copy.get(timeout=60)
    assert_run_is_the_engine(run, want, kept)
    assert run.chunks_done == run.chunks_total > 4
    # every chunk delivered twice, done by one delivery (the other skipped)
    received = re.findall(r"Task reports\.reaudit_chunk\[[^\]]+\] received",
                          worker.text())
    assert len(received) == 2 * run.chunks_total
    done = ChangeLog.objects.filter(action="reports.reaudit.chunk_done",
                                    object_id=str(run.pk))
    assert sorted(e.new["chunk"] for e in done) == list(range(run.chunks_total))
