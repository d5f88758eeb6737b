"""The live surveillance's path (issue 38, audit/surveillance/live.py): the
tallies of a look against hand-counted coups, a croupier false-drawing at
ten times the floor's rate (gross cheating: what a shift can show) raised once
with its words, an honest floor
raising nothing, who sees the alert and who never does (the croupier it is
about, on every path; another table's croupier), the floor's mark, the
nightly run's word on it, a forged message refused, concurrent looks.

The coups are dealt through the recording services (tables.simulation, as
the nightly pipeline's tests deal them) and the sessions left open: the
gaming day is still being dealt. A real Celery worker runs the beat-scheduled
task and the shoe close's look in test_live_worker.py."""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest
from django.test import Client
from django.utils import translation

from audit.models import Flag, FlagEvent, SurveillanceEvidence, SurveillanceRun
from audit.surveillance import live, live_days
from audit.surveillance.livetests import reference_rate
from casino.models import ChangeLog
from tests.reports.conftest import at, evening

from .conftest import DAY1
from .test_collect import _correct_one

pytestmark = pytest.mark.django_db

SENTENCE = re.compile(
    r"^(?P<table>.+): croupier (?P<who>\S+) has false-drawn (?P<count>[\d,]+) "
    r"times in (?P<coups>[\d,]+) coups tonight; the floor's rate would give "
    r"(?P<expected>[\d.,]+); this happens by chance about once in "
    r"(?P<once>[\d,]+) shifts\.$")


def deal(user, day, **kw):
    """Shoes dealt through the services on gaming day `day`, the sessions
    left open (the shift goes on)."""
    from tables.simulation import simulate

    with at(evening(day)):
        return simulate(user=user, **kw)


@pytest.fixture(autouse=True)
def _fresh():
    live.trailing_forget()
    yield
    live.trailing_forget()


@pytest.fixture
def shift(croupier, croupier2):
    """DAY1 still dealing: `croupier` at two honest tables (a floor's rate),
    `croupier2` at one table false-drawing ten times as often (10 % of his
    coups against 1 % of the others': gross cheating, which a shift shows;
    the subtle kind is the nightly run's, docs/surveillance.md)."""
    honest = deal(croupier, DAY1, tables=2, shoes=6, seed=31,
                  false_draw_rate=0.01, table_prefix="Honest")
    bad = deal(croupier2, DAY1, tables=1, shoes=16, seed=32,
               false_draw_rate=0.10, table_prefix="Bad")
    return {"honest": honest, "bad": bad, "culprit": croupier2,
            "other": croupier}


def _flags():
    return Flag.objects.filter(kind=Flag.Kind.SURVEILLANCE,
                               code__startswith="live_")


# -- the tallies -----------------------------------------------------------------

def test_the_tallies_are_the_hand_counted_coups(croupier, croupier2, pitboss):
    from tables.models import Coup

    deal(croupier, DAY1, tables=2, shoes=1, seed=41, false_draw_rate=0.05,
         table_prefix="A")
    deal(croupier2, DAY1, tables=1, shoes=1, seed=42, false_draw_rate=0.05,
         table_prefix="B")
    _correct_one(pitboss)  # a corrected coup counts once, at its revision
    latest: dict[tuple, Coup] = {}
    every = (Coup.objects.filter(gaming_day=DAY1)
             .select_related("shoe__session", "turn").prefetch_related("findings"))
    for c in every:  # by hand: the latest revision of each (shoe, seq)
        key = (c.shoe_id, c.seq)
        if key not in latest or latest[key].revision < c.revision:
            latest[key] = c
    assert every.count() == len(latest) + 1  # the correction's revision
    n = {"croupier": Counter(), "banker": Counter(), "table": Counter()}
    x = {"croupier": Counter(), "banker": Counter(), "table": Counter()}
    for c in latest.values():
        card = c.turn.player_card
        banker = f"card:{card}" if card else \
            f"seat:{c.banker_seat}@session:{c.shoe.session_id}"
        keys = {"croupier": f"croupier:{c.entered_by_id}", "banker": banker,
                "table": f"table:{c.shoe.session.table_id}"}
        fd = any(f.code == "false_draw" for f in c.findings.all())
        for family, key in keys.items():
            n[family][key] += 1
            x[family][key] += fd if family == "croupier" else (c.outcome == "banker")
    assert sum(x["croupier"].values()) > 0  # there are false draws to count

    look = live.look_window(DAY1, open_tables=3)
    for family, tally in look.tallies.items():
        got_n = dict(zip(tally.subjects, tally.n.sum(axis=1).tolist(), strict=True))
        got_x = dict(zip(tally.subjects, tally.x.sum(axis=1).tolist(), strict=True))
        assert got_n == dict(n[family]), family
        assert got_x == dict(x[family]), family
    assert look.groups.coups == len(latest)
    # the banker's and the table's null: each play's exact banker-win odds
    assert look.q_play.shape == (len(look.groups.plays),)
    assert all(0.45 < q < 0.47 for q in look.q_play)
    # no history: each croupier against tonight's rest of the floor
    assert look.trailing.reference.source == "tonight"
    big_n, big_x = sum(n["croupier"].values()), sum(x["croupier"].values())
    for subject, q in zip(look.tallies["croupier"].subjects,
                          look.tallies["croupier"].q.ravel(), strict=True):
        # the calibrated reference: the 99.9 % upper bound of the rest's rate
        assert q == pytest.approx(reference_rate(
            big_x - x["croupier"][subject], big_n - n["croupier"][subject]))
        assert q > (big_x - x["croupier"][subject]) / (big_n - n["croupier"][subject])


def test_with_history_the_reference_is_the_trailing_days(croupier, monkeypatch):
    """Enough coups on the days before: their false-draw rate is every
    croupier's reference, and the evidence says so."""
    from datetime import timedelta

    monkeypatch.setattr(live_days, "REFERENCE_MIN_COUPS", 100)
    deal(croupier, DAY1 - timedelta(days=1), tables=1, shoes=2, seed=44,
         false_draw_rate=0.02, table_prefix="Before")
    deal(croupier, DAY1, tables=1, shoes=1, seed=45, false_draw_rate=0.0,
         table_prefix="Now")
    look = live.look_window(DAY1, open_tables=1)
    ref = look.trailing.reference
    assert ref.source == "trailing" and ref.coups > 100 and ref.events > 0
    assert look.tallies["croupier"].q.ravel().tolist() == [ref.rate]
    assert look.trailing.previous["table"] == 1  # the budget's previous day


# -- raised once, in words ---------------------------------------------------------

def test_a_croupier_at_ten_times_the_floor_is_raised_once_in_words(shift):
    from audit.surveillance.tasks import surveillance_live_task

    culprit = shift["culprit"]
    out = surveillance_live_task.apply().get()
    assert out["raised"] >= 1, out
    mine = _flags().filter(code="live_croupier", croupier=culprit)
    assert mine.count() == 1, list(_flags().values_list("ident", "message"))
    flag = mine.get()
    assert not _flags().filter(code="live_croupier").exclude(
        croupier=culprit).exists()  # the honest croupier is not raised
    assert flag.severity == "warning" and flag.status == "open"
    assert flag.ident == f"l:croupier_false_draws:croupier:{culprit.pk}:{DAY1}"
    assert flag.gaming_day == DAY1
    assert flag.table.name.startswith("Bad") and flag.session.closed_at is None
    words = SENTENCE.match(flag.message)
    assert words, flag.message
    assert words["table"] == flag.table.name and words["who"] == culprit.username
    ev = SurveillanceEvidence.objects.get(flag=flag)
    body = ev.evidence
    assert int(words["count"]) == body["count"] and \
        int(words["coups"].replace(",", "")) == body["coups"]
    assert body["count"] > 2 * body["expected"]  # ten times the floor
    assert ev.p_value <= body["level"] and ev.test == "croupier_false_draws"
    assert body["reference"].startswith("tonight's rest of the floor")
    assert body["series"]["labels"] and body["series"]["observed"][-1] == body["count"]
    run = SurveillanceRun.objects.get(pk=ev.run_id)
    assert run.source == "live" and run.status == "done"
    assert FlagEvent.objects.filter(flag=flag, action="raised").count() == 1
    log = ChangeLog.objects.get(action="audit.surveillance.alert",
                                object_id=str(flag.pk))
    assert "audit.surveillanceevidence" in log.ledger  # bound to the trail
    # in French for a French reader (the queue's and the page's words)
    from audit.flag_words import flag_text

    with translation.override("fr"):
        said = flag_text(flag)
    assert said.startswith(f"{flag.table.name} : le croupier {culprit.username} a "
                           f"fait {body['count']} tirages faux"), said
    # looked at again and again: never raised twice
    for _ in range(3):
        again = surveillance_live_task.apply().get()
        assert again["raised"] == 0, again
    assert mine.count() == 1
    assert SurveillanceEvidence.objects.filter(flag=flag).count() == 1


def test_an_honest_floor_raises_nothing(croupier, croupier2):
    deal(croupier, DAY1, tables=2, shoes=4, seed=51, false_draw_rate=0.01,
         table_prefix="H")
    deal(croupier2, DAY1, tables=1, shoes=8, seed=52, false_draw_rate=0.01,
         table_prefix="K")
    out = live.live_look()
    assert out["coups"] > 900 and out["crossed"] == 0, out
    assert not _flags().exists()
    assert not SurveillanceRun.objects.filter(source="live").exists()


def test_a_closed_day_is_not_looked_at(croupier):
    from tables.models import TableSession
    from tests.reports.conftest import close_sessions

    report = deal(croupier, DAY1, tables=1, shoes=1, seed=53,
                  false_draw_rate=0.0, table_prefix="Z")
    assert live.open_days() == [DAY1]
    close_sessions(croupier, report.table_ids, DAY1)
    assert not TableSession.objects.filter(closed_at__isnull=True).exists()
    out = live.live_look()
    assert out["days"] == [] and out["coups"] == 0


# -- who sees it --------------------------------------------------------------------

def _page(user, path):
    client = Client()
    client.force_login(user)
    return client.get(path)


def test_the_pit_boss_sees_it_and_the_croupier_never(shift, pitboss, croupier,
                                                     as_user):
    from django.contrib.auth.models import Group

    live.live_look()
    culprit = shift["culprit"]
    flag = _flags().get(code="live_croupier", croupier=culprit)
    table = flag.table
    # the pit boss: the queue in words, the flag's page with its evidence and
    # chart, the floor's mark on the table, the API
    queue = _page(pitboss, "/floor/queue/?code=live_croupier").content.decode()
    assert f'href="/floor/flags/{flag.pk}/"' in queue
    assert "has false-drawn" in queue
    page = _page(pitboss, f"/floor/flags/{flag.pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="evidence"' in body and 'id="chart-evidence"' in body
    floor = _page(pitboss, "/floor/").content.decode()
    card = re.search(rf'<section class="card" aria-label="{table.name}">.*?</section>',
                     floor, re.S)[0]
    assert 'class="badge live"' in card
    others = re.findall(r'<section class="card" aria-label="Honest[^"]*">.*?</section>',
                        floor, re.S)
    assert others and all('class="badge live"' not in c for c in others)
    api = as_user(pitboss)
    assert flag.pk in [f["id"] for f in api.get(
        "/api/v1/flags/", {"status": "open", "code": "live_croupier"}).data["results"]]
    assert any(r["live"] for r in api.get("/api/v1/floor/").data)

    # the croupier concerned, even holding a pit boss's role beside his own
    # (every path that could show it to him): nothing of it
    culprit.groups.add(Group.objects.get(name="pitboss"))
    culprit = type(culprit).objects.get(pk=culprit.pk)
    queue = _page(culprit, "/floor/queue/?code=live_croupier").content.decode()
    assert f"/floor/flags/{flag.pk}/" not in queue and "false-drawn" not in queue
    assert _page(culprit, f"/floor/flags/{flag.pk}/").status_code == 404
    floor = _page(culprit, "/floor/").content.decode()
    assert 'class="badge live"' not in floor
    session_page = _page(culprit, f"/floor/sessions/{flag.session_id}/")
    assert f"/floor/flags/{flag.pk}/" not in session_page.content.decode()
    api = as_user(culprit)
    listed = api.get("/api/v1/flags/", {"code": "live_croupier"}).data["results"]
    assert flag.pk not in [f["id"] for f in listed]
    counts = api.get("/api/v1/flags/counts/").data
    assert not [o for o in counts["code"] if o["value"] == "live_croupier"]
    assert api.get(f"/api/v1/flags/{flag.pk}/").status_code == 404
    assert api.post(f"/api/v1/flags/{flag.pk}/confirm/",
                    {"reason": "mine"}, format="json").status_code == 404
    assert not any(r["live"] for r in api.get("/api/v1/floor/").data)

    # another table's croupier (his role alone): refused everywhere by role
    for path in ("/floor/queue/", f"/floor/flags/{flag.pk}/", "/floor/"):
        r = _page(croupier, path)
        assert r.status_code in (302, 403), (path, r.status_code)
        assert "false-drawn" not in r.content.decode()
    assert as_user(croupier).get(f"/api/v1/flags/{flag.pk}/").status_code \
        == 403
    # and he may not decide it even so (four eyes: the croupier concerned)
    from audit.services import may_decide

    assert not may_decide(flag, culprit)


# -- the nightly run's word ----------------------------------------------------------

def test_the_nightly_run_confirms_or_leaves_each_live_alert(shift, pitboss):
    from audit.surveillance import runs
    from tables.models import Table
    from tests.reports.conftest import close_sessions

    live.live_look()
    flags = list(_flags())
    assert flags
    close_sessions(pitboss, list(Table.objects.values_list("pk", flat=True)), DAY1)
    run = runs.surveillance_nightly(cutoff=6, day=DAY1, table_ids=[])
    run = runs.surveillance_execute(run_id=run.pk)  # as its task would
    assert run.status == "done", run.error
    for flag in flags:
        steps = list(FlagEvent.objects.filter(
            flag=flag, action__in=("nightly_confirmed", "nightly_left")))
        assert len(steps) == 1, flag.ident
        assert steps[0].detail["run"] == run.pk
        flag.refresh_from_db()
        assert flag.status == "open"  # never closed by the nightly
    culprit = Flag.objects.get(code="live_croupier", croupier=shift["culprit"])
    step = FlagEvent.objects.get(flag=culprit, action__startswith="nightly_")
    nightly = Flag.objects.filter(code="false_draw_rate",
                                  croupier=shift["culprit"]).exists()
    assert step.action == ("nightly_confirmed" if nightly else "nightly_left")
    if nightly:
        assert step.detail["nightly"] == \
            f"croupier:false_draw_rate:croupier:{shift['culprit'].pk}"
    # a manual run over the same day adds nothing
    manual = runs.surveillance_request(user=None, from_day=DAY1, to_day=DAY1)
    runs.surveillance_execute(run_id=manual.pk)
    assert FlagEvent.objects.filter(action__startswith="nightly_").count() == \
        len(flags)


# -- a forged message; concurrent looks -----------------------------------------------

@pytest.mark.parametrize("shoe", ["1", -1, 0, True, 1.5, [1], 2**63])
def test_a_malformed_message_is_refused(shoe, croupier):
    from audit.surveillance.tasks import surveillance_live_task

    out = surveillance_live_task.apply(args=(shoe,)).get()
    assert "refused" in out, out
    assert not SurveillanceRun.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_looks_raise_once(_migration_rows, croupier, croupier2):
    from django.db import connections

    deal(croupier, DAY1, tables=2, shoes=6, seed=31, false_draw_rate=0.01,
         table_prefix="Honest")
    deal(croupier2, DAY1, tables=1, shoes=16, seed=32, false_draw_rate=0.10,
         table_prefix="Bad")
    start = threading.Barrier(4)
    results, errors = [], []

    def one():
        try:
            start.wait()
            results.append(live.live_look())
        except Exception as exc:  # pragma: no cover - shown below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sum(r.get("raised", 0) for r in results) == \
        _flags().count() >= 1, results
    idents = list(_flags().values_list("ident", flat=True))
    assert len(idents) == len(set(idents))
    assert live.live_look()["raised"] == 0



def test_a_broker_down_does_not_fail_the_close(croupier, manager, monkeypatch,
                                               django_capture_on_commit_callbacks):
    """The close asks for a look after its commit (never in it); a broker
    down is logged, the close stands."""
    from decimal import Decimal

    from kombu.exceptions import OperationalError

    import casino.celery
    from casino.celery import app
    from tables.models import Shoe
    from tables.services import session_open, shoe_close, shoe_open, table_create

    sent = []

    def down(signature):
        sent.append(signature)
        raise OperationalError("Error 111 connecting to redis: refused")

    monkeypatch.setattr(casino.celery, "publish", down)
    table = table_create(user=manager, name="Table X", seats=9,
                         minimum_banco=Decimal("100"))
    session = session_open(table=table, user=croupier)
    shoe = shoe_open(session=session, user=croupier, burned=5)
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with django_capture_on_commit_callbacks(execute=False) as after:
            shoe_close(shoe=shoe, user=croupier, cards_left=307)
        assert Shoe.objects.get(pk=shoe.pk).closed_at is not None
        assert len(after) == 1 and not sent  # nothing sent inside the close
        assert after[0].args == (live.live_dispatch, shoe.pk)
        after[0]()  # the commit: the look is sent, the broker is down
        assert len(sent) == 1 and sent[0].task == "audit.surveillance_live"
        assert sent[0].args == (shoe.pk,)
        assert live.live_dispatch(shoe.pk) is False  # said, not raised
    finally:
        app.conf.task_always_eager = eager


def test_the_command_looks_once(shift):
    import json
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("surveillance_live", stdout=out)
    said = json.loads(out.getvalue())
    assert said["days"] == [DAY1.isoformat()] and said["raised"] >= 1
    assert _flags().filter(croupier=shift["culprit"]).count() == 1


def test_the_trailing_figures_are_shared_through_the_signed_cache(
        croupier, monkeypatch):
    """The worker's processes share a day's trailing figures (computed once,
    not once per process); an entry that does not read is computed again,
    never trusted."""
    from datetime import timedelta

    from django.core.cache import cache

    monkeypatch.setattr(live_days, "REFERENCE_MIN_COUPS", 100)
    deal(croupier, DAY1 - timedelta(days=1), tables=1, shoes=2, seed=44,
         false_draw_rate=0.02, table_prefix="Before")
    first = live.trailing(DAY1)
    assert first.reference.source == "trailing" and first.reference.events > 0
    key = f"live:trailing:{DAY1.isoformat()}"
    assert live_days._trailing_decode(cache.get(key)) == first
    # another process (its own memory empty) reads the shared entry: no query
    with live_days._cache_lock:
        live_days._trailing_cache.clear()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        again = live.trailing(DAY1)
    assert again == first and len(queries) == 0
    # an entry that does not read (a bad source) is computed again
    with live_days._cache_lock:
        live_days._trailing_cache.clear()
    cache.set(key, {**cache.get(key), "reference": ["forged", 0, 10**9, 28]})
    assert live.trailing(DAY1) == first
