"""The floor with many tables (issue 15, bench/bench_floor.py): the same
queries for 5 tables as for 50, a closing list that reads only the sessions
with work left, each table's coups counted once whatever its corrections, and
a card rendered again whenever what it shows changes (audit_tags.floor_card
keeps the cards it rendered)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit import selectors
from tables.rollups import current_coups

from .conftest import BANKER_WINS, PUNTER_WINS, stake

D = Decimal
PAGES = ("/floor/", "/floor/tables/", "/api/v1/floor/", "/floor/queue/")


def open_tables(manager, croupier, counter, first: int, n: int) -> None:
    """n more tables, each open with a shoe and a banker, and one closed
    session each with its box counted and attested (the days before)."""
    from audit.services import cagnotte_attest, cagnotte_count
    from tables import services

    for i in range(first, first + n):
        table = services.table_create(user=manager, name=f"Floor {i:03d}")
        done = services.session_open(table=table, user=manager, croupier=croupier)
        services.session_close(session=done, user=manager)
        count = cagnotte_count(session=done, counted=D("0.00"), user=counter)
        cagnotte_attest(count=count, user=manager)
        session = services.session_open(table=table, user=manager,
                                        croupier=croupier)
        services.shoe_open(session=session, user=croupier, burned=5)
        services.banker_turn_open(session=session, user=croupier, seat=1,
                                  bank=D("500.00"))


def queries(client, path: str) -> list[str]:
    with CaptureQueriesContext(connection) as q:
        r = client.get(path)
    assert r.status_code == 200, path
    return [x["sql"] for x in q.captured_queries]


def test_the_floor_reads_as_many_queries_for_50_tables_as_for_5(
        client, pitboss, manager, croupier, settings):
    settings.FLOOR_SHARE_SECONDS = 0  # every read renders (what is counted)
    client.force_login(pitboss)
    open_tables(manager, croupier, pitboss, 0, 5)
    for path in PAGES:
        client.get(path)  # the session, the flags synced once
    few = {path: queries(client, path) for path in PAGES}
    open_tables(manager, croupier, pitboss, 5, 45)
    many = {path: queries(client, path) for path in PAGES}
    page = client.get("/floor/").content.decode()
    assert page.count('class="card"') == 50 and "Floor 049" in page
    for path in PAGES:
        assert len(many[path]) == len(few[path]), (path, many[path])


def test_the_closing_list_reads_only_the_sessions_with_work_left(
        manager, croupier, pitboss, pitboss2):
    from audit.services import cagnotte_attest, cagnotte_count
    from tables import services

    open_tables(manager, croupier, pitboss, 0, 3)  # closed, counted and attested
    table = services.table_create(user=manager, name="Busy")
    sessions = []
    for _ in range(3):
        s = services.session_open(table=table, user=manager, croupier=croupier)
        sessions.append(services.session_close(session=s, user=manager))
    uncounted, counted, recounted = sessions
    cagnotte_count(session=counted, counted=D("5.00"), user=pitboss)
    cagnotte_count(session=recounted, counted=D("5.00"), user=pitboss)
    # a second pit boss's recount (his own would leave the flag to review)
    latest = cagnotte_count(session=recounted, counted=D("0.00"), user=pitboss2,
                            reason="recount")
    with CaptureQueriesContext(connection) as q:
        work = selectors.closing_work()
    assert len(q) == 2
    todo = {w["session"].pk: (w["todo"], w["count"]) for w in work}
    assert todo[uncounted.pk] == ("count", None)
    assert todo[counted.pk][0] == "attest"
    assert todo[recounted.pk] == ("attest", latest)  # the latest count
    assert len(todo) == 3  # the attested sessions are not read
    cagnotte_attest(count=latest, user=manager)
    assert recounted.pk not in {w["session"].pk for w in selectors.closing_work()}


def test_a_corrected_coup_counts_once_on_the_floor(shoe, turn, deal, pitboss):
    from tables import services

    coups = [deal(shoe, BANKER_WINS, [stake("100")]) for _ in range(3)]
    services.coup_correct(
        coup=coups[1], user=pitboss, reason="the punter had a natural 9",
        punter=PUNTER_WINS[0], banker=PUNTER_WINS[1], stakes=[stake("100")],
    )
    [row] = selectors.floor_tables()
    assert row["coups"] == 3 == current_coups().filter(shoe=shoe).count()


def test_a_card_is_rendered_again_when_its_table_changes(
        client, pitboss, shoe, turn, deal, settings):
    settings.FLOOR_SHARE_SECONDS = 0  # no shared copy: the card's own cache
    client.force_login(pitboss)
    part = client.get("/floor/tables/").content.decode()
    assert "<dd>0</dd>" in part and "<dd>1000.00</dd>" in part
    coup = deal(shoe, BANKER_WINS, [stake("300")])
    part = client.get("/floor/tables/").content.decode()
    assert coup.bank_after != D("1000.00")
    assert "<dd>1</dd>" in part and f"<dd>{coup.bank_after}</dd>" in part
    assert "<dd>0</dd>" not in part and "<dd>1000.00</dd>" not in part
    # in the reader's language, also when the card was just rendered in another
    part = client.get("/floor/tables/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    english = client.get("/floor/tables/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Croupier" in english and "Coups this session" in english
    assert "Coups this session" not in part


@pytest.mark.django_db
def test_a_card_escapes_what_it_shows(client, pitboss, manager, croupier):
    from tables import services

    table = services.table_create(user=manager, name="<b>Salon</b>")
    services.session_open(table=table, user=manager, croupier=croupier)
    client.force_login(pitboss)
    for _ in range(2):  # rendered, then from the cards kept
        part = client.get("/floor/tables/").content.decode()
        assert "&lt;b&gt;Salon&lt;/b&gt;" in part and "<b>Salon" not in part


def test_pages_sync_the_flags_at_most_every_few_seconds_per_process(
        client, pitboss, settings, monkeypatch):
    from audit.services import flags as flags_module

    calls = []
    real = flags_module._raise_new
    monkeypatch.setattr(flags_module, "_raise_new",
                        lambda: calls.append(1) or real())
    clock = [1000.0]
    monkeypatch.setattr(flags_module, "monotonic", lambda: clock[0])
    monkeypatch.setattr(flags_module, "_page_synced", 0.0)
    client.force_login(pitboss)
    settings.FLAGS_PAGE_SYNC_SECONDS = 5
    for path in ("/floor/", "/floor/queue/", "/floor/tables/", "/api/v1/floor/"):
        assert client.get(path).status_code == 200
    assert len(calls) == 1  # the first read synced, the others within 5 s not
    clock[0] += 5
    client.get("/floor/queue/")
    assert len(calls) == 2
    flags_module.flags_sync()  # a correction's sync: never skipped
    assert len(calls) == 3
    settings.FLAGS_PAGE_SYNC_SECONDS = 0
    client.get("/floor/")
    client.get("/floor/")
    assert len(calls) == 5


def test_the_queue_keeps_the_chosen_filters_selected(client, pitboss, played):
    from audit.services import flags_sync

    flags_sync()
    client.force_login(pitboss)
    table = played[0].shoe.session.table
    page = client.get(f"/floor/queue/?table={table.pk}&severity=warning").content
    page = page.decode()
    assert re.search(rf'<option value="{table.pk}" selected>Table 1 \(1\)', page)
    assert re.search(r'<option value="warning" selected>warning \(1\)', page)
    assert re.search(r'<option value="open" selected>open \(1\)', page)
    assert not re.search(r'<option value="false_draw" selected>', page)


def test_a_queue_row_is_rendered_again_when_what_it_shows_changes(played):
    """The queue's rows are kept as rendered (audit_tags.queue_row), by
    everything a row shows: its age, its status, its coup's revision..."""
    from datetime import timedelta

    from audit.models import Flag
    from audit.services import flags_sync
    from audit.templatetags.audit_tags import queue_row

    flags_sync()
    flag = selectors.flags_by_id([Flag.objects.get(code="false_draw").pk])[0]
    first = queue_row(flag)
    assert "false draw" in first and f"/floor/flags/{flag.pk}/" in first
    assert queue_row(flag) is first  # kept
    flag.raised_at -= timedelta(hours=3)
    older = queue_row(flag)
    assert older != first and "3\xa0hours" in older
    flag.status = Flag.Status.CONFIRMED
    assert 'data-code="confirmed"' in queue_row(flag)
