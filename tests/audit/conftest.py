"""Fixtures for the pit boss's work: a second pit boss (four eyes), an admin,
and a few helpers that deal coups through the real services."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.conftest import make_user

D = Decimal
BANKER_WINS = (["2H", "3D"], ["8C", "TS"])  # punter 5 stands, banker natural 8
PUNTER_WINS = (["9H", "KD"], ["5C", "2S"])  # punter natural 9
TIE = (["3H", "4D"], ["2C", "5S"])  # 7 v 7: both stand
# Banker 5 stands against a punter third card 6: the tableau says draw.
FALSE_DRAW = (["2H", "2D", "6C"], ["3S", "2C"])


@pytest.fixture
def pitboss2(db):
    return make_user("pitboss2", "pitboss")


@pytest.fixture
def admin(db):
    from django.contrib.auth.models import User

    return User.objects.create_superuser("admin1", password="pw-admin1")


def stake(amount, seat=2, announcement="none", standing=None):
    from tables.services import StakeInput

    return StakeInput(
        amount=D(str(amount)), seat=seat, standing=standing, announcement=announcement
    )


@pytest.fixture
def deal(croupier):
    """deal(shoe, cards, stakes=..., user=..., declared_bank=...) -> Coup."""
    from tables import services

    def _deal(shoe, cards, stakes=None, user=None, **extra):
        punter, banker = cards
        return services.coup_record(
            shoe_id=shoe.pk,
            user=user or croupier,
            punter=punter,
            banker=banker,
            stakes=stakes or [stake("100")],
            device="tablet-1",
            **extra,
        ).coup

    return _deal


@pytest.fixture
def played(shoe, turn, deal):
    """Four coups at Table 1 (bank 1,000 at seat 1): a banker win, a false
    draw, a tie and a banker win. Returns the list of coups."""
    return [
        deal(shoe, BANKER_WINS, [stake("300")]),
        deal(shoe, FALSE_DRAW, [stake("200", seat=3)]),
        # the tie's stake stays on the table for the next coup (tie_rule stay)
        deal(shoe, TIE, [stake("100", seat=4)]),
        deal(shoe, BANKER_WINS, [stake("100", seat=4)]),
    ]


@pytest.fixture
def clock():
    """clock(start, step) patches timezone.now: each call moves `step` on,
    so simulated coups take realistic time (statistics, screenshots)."""
    from contextlib import contextmanager
    from datetime import timedelta
    from unittest import mock

    @contextmanager
    def _clock(start, step=timedelta(seconds=20)):
        state = {"now": start}

        def now():
            state["now"] += step
            return state["now"]

        with mock.patch("django.utils.timezone.now", now):
            yield state

    return _clock


@pytest.fixture
def nightly(played, settings, tmp_path, django_capture_on_commit_callbacks):
    """What beat's gaming-day close leaves behind, through the real service
    (audit/reports/nightly.py): the played table's nightly commission report
    built (its file, its stamp), the next day's still queued (the task queue
    was down: never dispatched), and the nightly surveillance runs. Nightly
    jobs and runs have no requester (requested_by NULL). Returns the jobs,
    built first."""
    from datetime import timedelta

    from django.utils import timezone

    from audit.reports.models import ReportJob
    from audit.reports.nightly import gaming_day_close
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    now = timezone.now()
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            gaming_day_close(now=now + timedelta(days=1))
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = old
    # the commit that would send it never comes: queued, undispatched
    gaming_day_close(now=now + timedelta(days=2))
    jobs = list(ReportJob.objects.filter(source="nightly").order_by("pk"))
    assert [(j.status, j.requested_by) for j in jobs] == [("done", None),
                                                          ("queued", None)]
    return jobs
