"""Fixtures for the reports tests: nights of simulated play on chosen gaming
days, eager Celery (unless the test runs a real worker), files in a tmp dir."""

from __future__ import annotations

from contextlib import contextmanager
from datetime import date, datetime, timedelta
from unittest import mock
from zoneinfo import ZoneInfo

import pytest


@pytest.fixture(autouse=True)
def _reports_env(request, settings, tmp_path):
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    if request.node.get_closest_marker("redis"):
        yield  # a real broker and worker: leave Celery as configured
        return
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


@contextmanager
def at(moment: datetime):
    """Make "now" a fixed moment (the coups' gaming day follows from it)."""
    with mock.patch("django.utils.timezone.now", return_value=moment):
        yield


def evening(day: date, hour: int = 22) -> datetime:
    """A moment inside gaming day `day` (cut-off 06:00, Europe/Paris)."""
    return datetime(day.year, day.month, day.day, hour, tzinfo=ZoneInfo("Europe/Paris"))


def play(user, day: date, *, tables=1, shoes=1, seed=1, rate=0.0, prefix="Sim"):
    """Simulated shoes recorded through the services on gaming day `day`."""
    from tables.simulation import simulate

    with at(evening(day)):
        report = simulate(user=user, tables=tables, shoes=shoes, seed=seed,
                          false_draw_rate=rate, table_prefix=prefix)
    close_sessions(user, report.table_ids, day)
    return report


def close_sessions(user, table_ids, day):
    from tables.models import TableSession
    from tables.services import session_close

    with at(evening(day, 23)):
        for s in TableSession.objects.filter(table_id__in=table_ids,
                                             closed_at__isnull=True):
            session_close(session=s, user=user)


DAY1 = date(2025, 3, 3)
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY1 + timedelta(days=2)


@pytest.fixture
def nights(croupier, croupier2):
    """Three gaming days, two tables, two croupiers, a few false draws."""
    a = play(croupier, DAY1, tables=2, shoes=1, seed=1, rate=0.03)
    b = play(croupier2, DAY2, tables=2, shoes=1, seed=2, rate=0.03)
    c = play(croupier, DAY3, tables=1, shoes=2, seed=1, rate=0.03)
    return [a, b, c]


@pytest.fixture
def _migration_rows(transactional_db):
    """Put back what data migrations wrote (roles, tableaux): a transactional
    test before this one flushed every table (serialized_rollback cannot help:
    it would UPDATE append-only tableau rows, which PostgreSQL refuses)."""
    import importlib

    from django.contrib.auth.models import Group

    from casino.roles import ROLES
    from tables.models import TableauVersion

    for name in ROLES:
        Group.objects.get_or_create(name=name)
    seeds = importlib.import_module("tables.migrations.0002_seed_tableaux")
    for version, rows in (("chemmy-standard-1", seeds.CHEMMY),
                          ("punto-banco-1", seeds.PUNTO_BANCO)):
        if not TableauVersion.objects.filter(version=version).exists():
            TableauVersion.objects.create(version=version, rows=rows)


@pytest.fixture
def beat_rows(db):
    """The schedules migration 0002 writes, put back if a transactional test
    elsewhere flushed them (the migration's own function, idempotent)."""
    import importlib

    from django.apps import apps

    importlib.import_module("audit.reports.migrations.0002_schedules").create(
        apps, None)
