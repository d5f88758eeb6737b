"""The live surveillance through a real Celery worker on Redis, against the
same PostgreSQL test database: the beat-scheduled look (the message beat
sends for CELERY_BEAT_SCHEDULE's entry) and the look a shoe's close asks for
after its commit."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from .conftest import DAY1, wait_for
from .test_live import SENTENCE, deal

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(autouse=True)
def _rows(_migration_rows):
    pass


@pytest.fixture
def quiet_closes(monkeypatch):
    """Shoes closed while dealing send no look (the test sends its own)."""
    from tables.services import hooks

    monkeypatch.setattr(hooks, "_shoe_closed", [])


def _shift(croupier, croupier2):
    deal(croupier, DAY1, tables=2, shoes=6, seed=31, false_draw_rate=0.01,
         table_prefix="Honest")
    deal(croupier2, DAY1, tables=1, shoes=16, seed=32, false_draw_rate=0.10,
         table_prefix="Bad")


def _live(culprit):
    from audit.models import Flag

    return Flag.objects.filter(kind="surveillance", code="live_croupier",
                               croupier=culprit)


def test_the_beat_scheduled_look_raises_the_croupier_once(
        quiet_closes, worker, croupier, croupier2):
    from audit.models import Flag
    from casino.celery import app

    _shift(croupier, croupier2)
    assert not Flag.objects.filter(code__startswith="live_").exists()
    entry = settings.CELERY_BEAT_SCHEDULE["surveillance-live"]
    assert entry["schedule"].total_seconds() == settings.SURVEILLANCE_LIVE_SECONDS
    for _ in range(3):  # as beat sends it, tick after tick
        app.send_task(entry["task"], args=entry.get("args", ()),
                      kwargs=entry.get("kwargs", {}))
    flag, _ = wait_for(lambda: _live(croupier2).first(), lambda f: f is not None)
    assert SENTENCE.match(flag.message), flag.message
    wait_for(lambda: worker.read_text().count("audit.surveillance_live") >= 6,
             bool)  # three received, three succeeded
    assert _live(croupier2).count() == 1
    assert not Flag.objects.filter(code="live_croupier", croupier=croupier).exists()
    assert "Traceback" not in worker.read_text(), worker.read_text()[-3000:]


def test_a_shoe_close_sends_a_look_after_its_commit(worker, croupier, croupier2,
                                                    monkeypatch):
    from tables.models import TableSession
    from tables.services import hooks, shoe_close, shoe_open

    monkeypatch.setattr(hooks, "_shoe_closed", [])
    _shift(croupier, croupier2)
    monkeypatch.undo()  # closes send looks again from here
    assert hooks._shoe_closed, "audit registers the live look at start-up"
    session = TableSession.objects.get(closed_at__isnull=True,
                                       table__name__startswith="Bad")
    assert not _live(croupier2).exists()
    shoe = session.shoes.filter(closed_at__isnull=True).first() or shoe_open(
        session=session, user=croupier2, burned=5)
    shoe_close(shoe=shoe, user=croupier2)  # commits, then sends the look
    flag, _ = wait_for(lambda: _live(croupier2).first(), lambda f: f is not None)
    assert flag.session_id == session.pk
    assert re.search(rf"'shoe': {shoe.pk}", worker.read_text())

