"""Reports read from a real streaming replica (REPORTS_DATABASE_URL) and say
how far its data goes; writes stay on the primary.

The pair of clusters is this directory's conftest's (one per test session).
Every report here is asked for and built through the real task path
(services.report_request, the task sent on commit, run by Celery eagerly).
"""

from __future__ import annotations

import csv
import io
import re
from contextlib import ExitStack, contextmanager
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from unittest import mock

import pytest
from django.conf import settings
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from casino import replica

# One worker runs this file when the suite runs in parallel (`make test`
# hands out whole files): the pair of clusters starts once, on its own ports.
pytestmark = pytest.mark.postgres

DAY1 = date(2025, 6, 2)
DAY2 = DAY1 + timedelta(days=1)
TABLES = re.compile(r'(?:FROM|JOIN|INTO|UPDATE)\s+"(\w+)"')


@pytest.fixture(autouse=True)
def _eager():
    from casino.celery import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


def _user(name: str, role: str | None = "manager"):
    from django.contrib.auth.models import User

    from tests.conftest import make_user

    return User.objects.filter(username=name).first() or make_user(name, role)


def _play(tag: str, day: date, seed: int) -> int:
    """A shoe played (some false draws) and its session closed on gaming day
    `day`, at table "<tag> <seed>-1" (the same table again for the same tag
    and seed)."""
    from tests.reports.conftest import play

    user = _user(f"sim-{tag}", None)
    return play(user, day, seed=seed, prefix=tag, rate=0.1).table_ids[0]


def _capture() -> tuple[CaptureQueriesContext, CaptureQueriesContext]:
    """The queries on the primary and on the replica."""
    return (CaptureQueriesContext(connections["default"]),
            CaptureQueriesContext(connections["reports"]))


def _report(kind: str, table_id: int, start=DAY1, end=DAY2, fmt="csv",
            around=()):
    """Asked for (on the primary), then built by the task as the request's
    commit sends it; the contexts `around` are entered around the build."""
    from audit.reports import services

    params = {"group_by": "table"} if kind == "commission" else {}
    with mock.patch.object(services, "report_dispatch"):
        job = services.report_request(
            user=_user("reports-manager"), kind=kind, format=fmt, from_day=start,
            to_day=end, table_ids=[table_id], **params)
    with ExitStack() as stack:
        for context in around:
            stack.enter_context(context)
        assert services.report_dispatch(job=job)
    job.refresh_from_db()
    assert job.status == "done", job.error
    return job


def _file(job) -> str:
    with open(Path(settings.MEDIA_ROOT) / job.file, newline="") as f:
        return f.read()


def _body(text: str) -> str:
    """The file without its stamp (the lines before the first blank one)."""
    return text.split("\r\n\r\n", 1)[1]


def _stamp(text: str) -> dict:
    head = text.split("\r\n\r\n", 1)[0]
    return dict(csv.reader(io.StringIO(head)))


def _tables(captured) -> set[str]:
    return {t for q in captured.captured_queries for t in TABLES.findall(q["sql"])}


def _data_read(captured) -> list[str]:
    """The statements that touched the floor's tables (tables_*)."""
    return [q["sql"] for q in captured.captured_queries
            if any(t.startswith("tables_") for t in TABLES.findall(q["sql"]))]


@contextmanager
def _no_replica():
    """REPORTS_DATABASE_URL unset for the block (the same primary)."""
    saved = settings.DATABASES.pop("reports")
    try:
        yield
    finally:
        settings.DATABASES["reports"] = saved


def _coups(table_id: int) -> int:
    from tables.rollups import current_coups

    return current_coups().filter(shoe__session__table_id=table_id).count()


def _last_coup() -> int:
    from tables.models import Coup

    return Coup.objects.order_by("-id").values_list("id", flat=True).first()


@pytest.mark.parametrize("kind", ["findings", "coups"])
def test_a_report_reads_the_replica_and_equals_the_primarys(on_pair, kind):
    table = _play(f"Rep {kind}", DAY1, seed=11)
    on_pair.catch_up()
    primary, standby = _capture()
    job = _report(kind, table, around=(primary, standby))
    # the data on the standby, none of it on the primary (which keeps the
    # job's rows, its progress and the trail)
    read = _tables(standby)
    assert "tables_coup" in read
    assert not _data_read(primary), _data_read(primary)
    assert {"reports_reportjob", "casino_changelog"} <= _tables(primary)
    assert not {t for t in read if t.startswith(("reports_", "casino_"))}, read
    with connections["reports"].cursor() as cur:
        cur.execute("SELECT pg_is_in_recovery()")
        assert cur.fetchone() == (True,)
    # it says so, and how far its data goes
    last = _last_coup()
    assert job.data_position["alias"] == "reports"
    assert job.data_position["replica"] is True
    assert job.data_position["coup"] == last
    assert job.data_position["lag_seconds"] == "0.0"
    text = _file(job)
    line = _stamp(text)["data"]
    assert line.startswith(f"Data up to coup #{last}, recorded at ")
    assert line.endswith("; read from the reports copy, 0.0 s behind the main database")
    assert job.stamp["data_position"] == line
    # the same report read on the primary: the same rows
    with _no_replica():
        again = _report(kind, table)
    assert again.data_position["replica"] is False
    assert again.data_position["alias"] == "default"
    assert _stamp(_file(again))["data"].endswith("; read from the main database")
    assert _body(_file(again)) == _body(text)
    assert again.rows == job.rows > 0


def test_the_commission_report_reads_the_replica(on_pair, as_user):
    table = _play("Rep commission", DAY1, seed=12)
    on_pair.catch_up()
    primary, standby = _capture()
    job = _report("commission", table, fmt="xlsx", around=(primary, standby))
    assert job.data_position["replica"] is True
    assert [t for t in _tables(standby) if t.endswith("rollup")]
    assert not _data_read(primary), _data_read(primary)
    # the API's answer, read at once
    client = as_user(_user("reports-manager"))
    primary, standby = _capture()
    with primary, standby:
        answer = client.get(reverse("reports-api:commission"),
                            {"from_day": DAY1, "to_day": DAY2, "tables": table})
    assert answer.status_code == 200, answer.content
    assert answer.json()["data_position"]["replica"] is True
    assert answer.json()["total"]["coups"] == _coups(table)
    assert [t for t in _tables(standby) if t.endswith("rollup")]
    assert not _data_read(primary), _data_read(primary)


def test_a_lagging_replica_says_up_to_which_coup_it_read(on_pair, as_user):
    table = _play("Rep lag", DAY1, seed=13)
    on_pair.catch_up()
    first, seen = _last_coup(), _coups(table)
    on_pair.pause()
    try:
        later = _play("Rep lag", DAY2, seed=13)  # the same table, the next day
        assert later == table and _coups(table) > seen  # on the primary
        behind = _report("coups", table)
        findings = _report("findings", table, fmt="pdf")
    finally:
        on_pair.resume()
    # what the replica had replayed, and it says so
    assert behind.data_position["replica"] is True
    assert behind.data_position["coup"] == first < _last_coup()
    assert Decimal(behind.data_position["lag_seconds"]) > 0
    assert behind.rows == seen
    days = {row[0] for row in csv.reader(io.StringIO(_body(_file(behind))))}
    assert days == {"gaming_day", DAY1.isoformat()}  # none of DAY2's coups
    line = _stamp(_file(behind))["data"]
    assert line.startswith(f"Data up to coup #{first}, recorded at ")
    assert re.search(r"; read from the reports copy, \d+\.\d s behind the main "
                     r"database$", line), line
    assert findings.data_position["coup"] == first
    # the job's API and page show it
    manager = _user("reports-manager")
    api = as_user(manager).get(reverse("reports-api:job", args=[behind.pk]))
    assert api.json()["data_position"]["coup"] == first
    # caught up: everything, and the last coup
    on_pair.catch_up()
    caught = _report("coups", table)
    assert caught.rows == _coups(table)
    assert caught.data_position["coup"] == _last_coup()
    assert caught.data_position["lag_seconds"] == "0.0"


def test_job_page_shows_the_position(on_pair, client):
    table = _play("Rep page", DAY1, seed=14)
    on_pair.catch_up()
    job = _report("findings", table)
    client.force_login(_user("reports-manager"))
    page = client.get(reverse("reports:job", args=[job.pk])).content.decode()
    assert f"Data up to coup #{job.data_position['coup']}" in page
    assert "read from the reports copy, 0.0 s behind" in page


def test_a_write_in_the_reading_block_goes_to_the_primary(on_pair):
    from tables.models import Table
    from tables.services import table_create
    from tests.conftest import app_update

    manager = _user("reports-manager")
    on_pair.catch_up()
    on_pair.pause()
    try:
        with replica.reading() as alias:
            assert alias == replica.read_alias() == "reports"
            table = table_create(user=manager, name="Rep written in the block")
            # written on the primary; the paused replica has not seen it
            assert Table.objects.using("default").filter(pk=table.pk).exists()
            assert not Table.objects.filter(pk=table.pk).exists()
            # a transaction open on the primary reads the primary: what it
            # reads may decide what it writes
            with transaction.atomic():
                assert replica.read_alias() == "default"
                assert Table.objects.filter(pk=table.pk).exists()
                # as the app changes a row it updates (checked, then logged)
                table = app_update(table, name="Rep renamed in the block")
            # an instance read from the replica is saved on the primary (the
            # same values: a save no trail row needs to cover)
            other = Table.objects.exclude(pk=table.pk).first()
            assert other._state.db == "reports"
            other.save(update_fields=["name"])
        # outside the block every read is on the primary
        assert replica.read_alias() == "default"
        assert Table.objects.get(pk=table.pk).name == "Rep renamed in the block"
    finally:
        on_pair.resume()
    on_pair.catch_up()
    with replica.reading():
        assert Table.objects.get(pk=table.pk).name == "Rep renamed in the block"


def test_without_reports_database_everything_reads_default(on_primary_only):
    assert "reports" not in settings.DATABASES
    assert replica.reports_alias() == "default"
    table = _play("Rep primary", DAY1, seed=15)
    with replica.reading() as alias:
        assert alias == replica.read_alias() == "default"
    primary = CaptureQueriesContext(connections["default"])
    job = _report("findings", table, around=(primary,))
    assert "tables_coup" in _tables(primary)
    assert job.data_position["alias"] == "default"
    assert job.data_position["replica"] is False
    assert job.data_position["lag_seconds"] is None
    assert job.data_position["coup"] == _last_coup()
    assert _stamp(_file(job))["data"].endswith("; read from the main database")


def test_surveillance_collects_from_the_replica(on_pair):
    from audit.surveillance import runs

    table = _play("Rep surveillance", DAY1, seed=16)
    on_pair.catch_up()
    run = runs.surveillance_request(user=_user("reports-manager"), from_day=DAY1,
                                    to_day=DAY1, table_ids=[table])
    run.refresh_from_db()
    assert run.status == "done", run.error
    position = run.summary["data_position"]
    assert position["replica"] is True and position["coup"] == _last_coup()
    assert run.coups == _coups(table)


def test_the_trail_holds_on_the_primary(on_pair):
    from casino.trail import trail_verify

    check = trail_verify(anchors=False)
    assert check.ok, check.problem


def test_a_replica_down_is_logged_and_the_primary_read(on_pair, caplog):
    table = _play("Rep down", DAY1, seed=17)
    on_pair.catch_up()
    assert _report("findings", table).data_position["replica"] is True
    on_pair.replica.crash()  # its kept connection is dead from now on
    try:
        down = _report("findings", table)
    finally:
        on_pair.replica.start()
    assert down.data_position["alias"] == "default"
    assert _stamp(_file(down))["data"].endswith("; read from the main database")
    assert "the reports replica (reports) cannot be reached" in caplog.text
    on_pair.catch_up()
    back = _report("findings", table)
    assert back.data_position["replica"] is True
    assert _body(_file(back)) == _body(_file(down))


def test_a_reaudit_reads_the_replica(on_pair):
    from audit.reports.reaudit import reaudit_request

    table = _play("Rep reaudit", DAY1, seed=18)
    on_pair.catch_up()
    primary, standby = _capture()
    with primary, standby:
        run = reaudit_request(user=_user("reports-manager"), from_day=DAY1,
                              to_day=DAY1, tableau_version="punto-banco-1",
                              table_ids=[table])
    run.refresh_from_db()
    assert run.status == "done", run.error
    assert run.coups_checked == _coups(table) > 0
    assert "tables_coup" in _tables(standby)
    assert not [q for q in _data_read(primary) if '"tables_coup"' in q]
    assert run.data_position["replica"] is True
    assert run.data_position["coup"] == _last_coup()


def _engine_changes(table_id: int, days) -> tuple[int, int, int]:
    """Independently, on the primary: the table's current coups of `days`
    judged by the engine under punto-banco-1 against the findings each was
    recorded with: (new, kept, cleared)."""
    from tables import chemmy
    from tables.models import Finding
    from tables.rollups import current_coups
    from tables.services.coups import tableau_for

    codes = ("false_draw", "draw_after_natural")
    tableau = tableau_for("punto-banco-1")
    new = kept = cleared = 0
    for coup in current_coups().filter(shoe__session__table_id=table_id,
                                       gaming_day__in=days):
        now = {(f.code, f.side or "") for f in chemmy.evaluate(
            coup.punter_cards, coup.banker_cards, tableau=tableau).findings
            if f.code in codes}
        before = set(Finding.objects.filter(coup=coup, code__in=codes)
                     .values_list("code", "side"))
        new, kept, cleared = (new + len(now - before), kept + len(now & before),
                              cleared + len(before - now))
    return new, kept, cleared


def _reaudit(table_id: int, start=DAY1, end=DAY2, around=()):
    """Asked for on the primary, its chunks and finish run eagerly on its
    commit, with the contexts `around` entered around the whole run."""
    from audit.reports.reaudit import reaudit_request

    with ExitStack() as stack:
        for context in around:
            stack.enter_context(context)
        run = reaudit_request(user=_user("reports-manager"), from_day=start,
                              to_day=end, tableau_version="punto-banco-1",
                              table_ids=[table_id])
    run.refresh_from_db()
    assert run.status == "done", run.error
    return run


def test_a_reaudit_behind_says_up_to_which_coup_it_read(on_pair, as_user,
                                                        monkeypatch):
    from audit.reports import reaudit_check
    from audit.reports.models import ReauditChunk, ReauditFinding

    table = _play("Rep reaudit lag", DAY1, seed=19)
    on_pair.catch_up()
    first, seen = _last_coup(), _coups(table)
    # the chunk reads with no transaction open on the primary, on the replica
    read_rows, reads = reaudit_check.read_rows, []

    def watched(*args, **kwargs):
        reads.append((connections["default"].in_atomic_block, replica.read_alias()))
        yield from read_rows(*args, **kwargs)

    monkeypatch.setattr(reaudit_check, "read_rows", watched)
    on_pair.pause()
    try:
        later = _play("Rep reaudit lag", DAY2, seed=19)  # the next day
        assert later == table and _coups(table) > seen  # on the primary
        primary, standby = _capture()
        run = _reaudit(table, around=(primary, standby))
    finally:
        on_pair.resume()
    assert reads and set(reads) == {(False, "reports")}
    # planned from the primary's rollups (both days), judged on what the
    # replica had replayed (the first day's coups only)
    assert run.coups_expected == _coups(table) > run.coups_checked == seen
    assert "tables_coup" in _tables(standby)
    assert not [q for q in _data_read(primary)
                if '"tables_coup"' in q or '"tables_shoe"' in q]
    # the findings are those of the coups the replica had
    judged = (run.findings_new, run.findings - run.findings_new,
              run.findings_cleared)
    assert judged == _engine_changes(table, [DAY1]) != _engine_changes(
        table, [DAY1, DAY2])
    assert not ReauditFinding.objects.filter(run=run, coup_id__gt=first).exists()
    # each chunk, and the run, say how far the data they read goes
    for chunk in ReauditChunk.objects.filter(run=run):
        assert (chunk.data_position["alias"], chunk.data_position["replica"],
                chunk.data_position["coup"]) == ("reports", True, first)
    position = run.data_position
    assert (position["alias"], position["replica"], position["coup"]) == (
        "reports", True, first)
    assert first < _last_coup()
    assert Decimal(position["lag_seconds"]) > 0
    assert position["text"] == replica.position_text(position)
    assert position["text"].startswith(f"Data up to coup #{first}, recorded at ")
    assert re.search(r"; read from the reports copy, \d+\.\d s behind the main "
                     r"database$", position["text"]), position
    api = as_user(_user("reports-manager")).get(
        reverse("reports-api:reaudit", args=[run.pk])).json()
    assert api["data_position"] == position
    # caught up: every coup, up to the last
    on_pair.catch_up()
    caught = _reaudit(table)
    assert caught.coups_checked == caught.coups_expected == _coups(table)
    assert caught.data_position["coup"] == _last_coup()
    assert caught.data_position["lag_seconds"] == "0.0"


def test_a_reaudit_without_replica_reads_the_primary(on_primary_only):
    table = _play("Rep reaudit primary", DAY1, seed=20)
    primary = CaptureQueriesContext(connections["default"])
    run = _reaudit(table, around=(primary,))
    assert run.coups_checked == _coups(table) > 0
    assert "tables_coup" in _tables(primary)
    position = run.data_position
    assert (position["alias"], position["replica"], position["coup"]) == (
        "default", False, _last_coup())
    assert position["text"].endswith("; read from the main database")


def test_the_statistics_read_the_replica_and_say_how_far(on_pair, as_user, client):
    """The pit boss's statistics (per croupier, per seat, per table and hour)
    read whole ranges of coups: from the replica, in one snapshot, saying up
    to which coup; behind when it lags."""
    table = _play("Rep stats", DAY1, seed=18)
    on_pair.catch_up()
    first, seen = _last_coup(), _coups(table)
    pitboss = _user("stats-pitboss", "pitboss")
    query = {"from": DAY1, "to": DAY2, "table": table}

    def coups_in(body) -> int:
        return sum(c["coups"] for c in body["croupiers"])

    primary, standby = _capture()
    with primary, standby:
        answer = as_user(pitboss).get(reverse("audit-api-stats"), query)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["data_position"]["replica"] is True
    assert body["data_position"]["coup"] == first
    assert coups_in(body) == seen > 0
    assert "tables_coup" in _tables(standby)
    assert not _data_read(primary), _data_read(primary)

    on_pair.pause()
    try:
        _play("Rep stats", DAY2, seed=18)  # the same table, the next day
        behind = as_user(pitboss).get(reverse("audit-api-stats"), query).json()
        client.force_login(pitboss)
        page = client.get(reverse("floor:stats"), {
            "day_from": DAY1, "day_to": DAY2, "table": table}).content.decode()
    finally:
        on_pair.resume()
    assert _coups(table) > seen  # on the primary
    assert coups_in(behind) == seen and behind["data_position"]["coup"] == first
    assert Decimal(behind["data_position"]["lag_seconds"]) > 0
    assert f"Data up to coup #{first}" in page and "s behind the main database" in page

    on_pair.catch_up()
    caught = as_user(pitboss).get(reverse("audit-api-stats"), query).json()
    assert coups_in(caught) == _coups(table)
    assert caught["data_position"]["coup"] == _last_coup()
