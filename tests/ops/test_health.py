"""The health endpoint (casino/health.py): anyone gets 200/503 and no detail;
staff get every check. Each dependency is taken away for real: the database
(its connection pointed at a closed port, or an SQLite file that cannot
exist), Redis (REDIS_URL at a closed port), a Celery worker (a real one,
stopped, then killed), beat's runs, the anchors and the ledger check (their
age, by Django's clock moved ahead)."""

from __future__ import annotations

import os
import signal
import socket
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client, RequestFactory
from django.utils import timezone

from casino.health import HEARTBEAT_PREFIX, health_details, health_run
from tests.reports.conftest import start_worker  # noqa: F401 (a fixture)


def closed_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checks(results) -> dict:
    return {r.name: r for r in results}


def staff_details():
    """The staff view, for a staff user who needs no database to be known
    (the database may be down)."""
    request = RequestFactory().get("/health/details/")
    request.user = User(username="ops", is_staff=True, is_active=True)
    return health_details(request)


@pytest.mark.django_db
def test_liveness_says_ok_and_nothing_more(client):
    r = client.get("/health/")
    assert r.status_code == 200
    assert r.content == b"ok\n"
    assert "no-cache" in r["Cache-Control"]


@pytest.mark.django_db
def test_details_are_for_staff(client, manager, auditor):
    assert Client().get("/health/details/").status_code == 401
    for user in (manager, auditor):
        client.force_login(user)
        assert client.get("/health/details/").status_code == 403
    admin = User.objects.create_superuser("ops-admin", password="pw-ops-admin-1")
    client.force_login(admin)
    r = client.get("/health/details/")
    body = r.json()
    assert set(body["checks"]) == {"database", "redis", "worker", "beat",
                                   "anchors", "ledger_check", "role_settings",
                                   "witnesses"}
    assert body["checks"]["database"]["ok"] is True
    assert r.status_code == 200  # a report: "ok" in it says
    assert body["ok"] is all(c["ok"] for c in body["checks"].values())


def test_database_down(django_db_blocker, settings, tmp_path):
    """The database's connection pointed where nothing answers: /health/ 503
    with no detail; the details name the database, and the checks that read
    it say why they cannot tell."""
    conn = connections["default"]
    saved = dict(conn.settings_dict)
    kept = None
    with django_db_blocker.unblock():
        if conn.vendor == "postgresql":
            conn.close()
            conn.settings_dict.update(HOST="127.0.0.1", PORT=str(closed_port()))
            conn.settings_dict.setdefault("OPTIONS", {})["connect_timeout"] = 2
        else:  # SQLite: a file in a folder that does not exist. The test's
            # in-memory database must not be closed (it would be gone): it
            # is set aside and put back.
            kept, conn.connection = conn.connection, None
            conn.settings_dict["NAME"] = str(tmp_path / "no" / "such" / "db.sqlite3")
        try:
            r = Client().get("/health/")
            assert r.status_code == 503
            assert r.content == b"unavailable\n"
            details = staff_details()
            assert details.status_code == 200
            import json

            body = json.loads(details.content)
            assert body["ok"] is False
            assert body["checks"]["database"]["ok"] is False
            for name in ("beat", "anchors", "ledger_check"):
                assert body["checks"][name]["ok"] is False
                assert "database" in body["checks"][name]["message"]
        finally:
            if kept is None:
                conn.close()
            else:
                conn.connection = kept
            conn.settings_dict.clear()
            conn.settings_dict.update(saved)
    with django_db_blocker.unblock():
        assert checks(health_run())["database"].ok


@pytest.mark.django_db
def test_redis_down_is_named_and_the_node_still_serves(settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    started = time.monotonic()
    results = checks(health_run())
    assert time.monotonic() - started < 5  # short timeouts, no hang
    assert not results["redis"].ok
    assert not results["worker"].ok and "Redis" in results["worker"].message
    assert results["database"].ok
    # the floor records coups without Redis: the load balancer keeps the node
    assert Client().get("/health/").status_code == 200
    import json

    assert json.loads(staff_details().content)["ok"] is False


@pytest.mark.django_db
def test_embedded_setup_needs_no_redis_worker_or_beat(settings):
    settings.REDIS_URL = ""
    results = checks(health_run())
    for name in ("redis", "worker", "beat"):
        assert results[name].ok and "not used" in results[name].message


@pytest.mark.django_db
def test_beat_last_run(settings):
    import importlib

    from django.apps import apps
    from django_celery_beat.models import PeriodicTask

    # the schedules migrations leave (a transactional test may have flushed
    # them): the migrations' own functions, idempotent
    for name in ("audit.reports.migrations.0002_schedules",
                 "audit.migrations.0004_gaming_day_close"):
        importlib.import_module(name).create(apps, None)
    settings.REDIS_URL = settings.REDIS_URL or "redis://127.0.0.1:1/0"
    PeriodicTask.objects.update(last_run_at=None)
    beat = checks(health_run())["beat"]
    assert not beat.ok and "no schedule yet" in beat.message
    PeriodicTask.objects.filter(enabled=True).update(
        last_run_at=timezone.now() - timedelta(seconds=30))
    beat = checks(health_run())["beat"]
    assert beat.ok, beat.message
    # the sweep runs every 2 minutes: twice that plus beat's 3-minute save
    PeriodicTask.objects.update(last_run_at=timezone.now() - timedelta(minutes=8))
    beat = checks(health_run())["beat"]
    assert not beat.ok and "is `celery -A casino beat` running" in beat.message
    assert beat.values["age_seconds"] >= 480


@pytest.mark.django_db
def test_anchor_age(table, manager):
    from casino.anchors import trail_anchor
    from tables.services import table_create

    trail_anchor(reason="test")
    anchors = checks(health_run())["anchors"]
    assert anchors.ok and anchors.values["stale"] == 0
    table_create(user=manager, name="Table 2")  # a row after the anchor
    later = timezone.now() + timedelta(minutes=31)  # > 2 x 15 minutes
    with mock.patch("django.utils.timezone.now", return_value=later):
        anchors = checks(health_run())["anchors"]
    assert not anchors.ok and anchors.values["stale"] == 1
    assert anchors.values["age_seconds"] >= 31 * 60
    assert "anchored nowhere" in anchors.message
    trail_anchor(reason="again")  # a new file: the listing is read again
    with mock.patch("django.utils.timezone.now", return_value=later):
        anchors = checks(health_run())["anchors"]
    assert anchors.ok and anchors.values["stale"] == 0


@pytest.mark.django_db
def test_ledger_check_age(settings):
    from casino.changelog import log_action

    log_action(action="audit.ledger.verified", device="test",
               new={"coups": 12, "differences": 2})
    ledger = checks(health_run())["ledger_check"]
    assert ledger.ok and ledger.values["differences"] == 2
    later = timezone.now() + timedelta(hours=settings.LEDGER_CHECK_MAX_HOURS, minutes=1)
    with mock.patch("django.utils.timezone.now", return_value=later):
        ledger = checks(health_run())["ledger_check"]
    assert not ledger.ok and "LEDGER_CHECK_MAX_HOURS" in ledger.message


def _clear_heartbeats(settings) -> None:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in client.scan_iter(f"{HEARTBEAT_PREFIX}*"):
        client.delete(key)


def _wait(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = checks(health_run())["worker"]
        if predicate(result):
            return result
        time.sleep(0.3)
    pytest.fail(f"the worker check stayed: {result.message}")


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_worker_up_stopped_and_killed(start_worker, settings):  # noqa: F811
    settings.WORKER_HEARTBEAT_SECONDS = 1
    _clear_heartbeats(settings)
    assert not checks(health_run())["worker"].ok  # none yet
    worker = start_worker(env={"WORKER_HEARTBEAT_SECONDS": "1"})
    up = _wait(lambda r: r.ok)
    assert up.values["workers"] == 1
    worker.stop()  # a warm shutdown takes its heartbeat away at once
    down = checks(health_run())["worker"]
    assert not down.ok and "no Celery worker" in down.message
    assert Client().get("/health/").status_code == 200  # not the web's to fix

    worker = start_worker(env={"WORKER_HEARTBEAT_SECONDS": "1"})
    _wait(lambda r: r.ok)
    os.killpg(worker.pid, signal.SIGKILL)  # no goodbye: the beat goes stale
    worker.proc.wait(timeout=10)
    stale = _wait(lambda r: not r.ok, timeout=10)
    assert "no Celery worker" in stale.message


@pytest.mark.django_db
def test_probes_are_not_redirected_to_https(settings):
    """Behind TLS the app redirects plain HTTP to https; a load balancer's
    probe and Prometheus reach the node in plain HTTP and must get their
    answer, not a redirect."""
    settings.SECURE_SSL_REDIRECT = True
    client = Client()
    assert client.get("/health/").status_code == 200
    assert client.get("/metrics").status_code == 401  # answered, not redirected
    assert client.get("/floor/").status_code == 301  # everything else is
