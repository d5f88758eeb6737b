"""/metrics (audit/metrics.py, casino/metrics.py): scraped as Prometheus
does, after coups recorded over the API, and read back with
prometheus-client's own parser."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.django_db
TOKEN = "metrics-token-for-the-tests-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def scrape(client, token: str | None = TOKEN) -> dict:
    """{(name, frozenset(labels)): value} of every sample."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    r = client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.content
    assert r["Content-Type"].startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(r.content.decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture(autouse=True)
def _token(settings):
    settings.METRICS_TOKEN = TOKEN


def test_metrics_need_the_token_or_staff(client, manager, auditor):
    assert client.get("/metrics").status_code == 401
    r = client.get("/metrics", headers={"Authorization": "Bearer wrong-token-x"})
    assert r.status_code == 403
    for user in (manager, auditor):
        client.force_login(user)
        assert client.get("/metrics").status_code == 403
    client.logout()
    admin = User.objects.create_superuser("ops-admin", password="pw-ops-admin-1")
    client.force_login(admin)
    assert client.get("/metrics").status_code == 200
    client.logout()
    assert client.get("/metrics", headers={
        "Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_no_token_configured_means_staff_only(client, settings):
    settings.METRICS_TOKEN = ""
    r = client.get("/metrics", headers={"Authorization": "Bearer "})
    assert r.status_code == 403


def test_a_coup_shows_in_the_counters(client, api, croupier, shoe, turn):
    before = scrape(client)
    r = api.post("/api/v1/auth/token/", {"username": "croupier1",
                                          "password": "pw-croupier1"},
                 format="json")
    api.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    url = f"/api/v1/shoes/{shoe.pk}/coups/"
    # a punter on 4 who stands: a false draw, a warning flag in the queue
    body = {"punter": ["2H", "2D"], "banker": ["TC", "7S"],
            "stakes": [{"seat": 2, "amount": "300.00"}]}
    r = api.post(url, body, format="json", headers={"Idempotency-Key": "m1"})
    assert r.status_code == 201, r.content
    again = api.post(url, body, format="json", headers={"Idempotency-Key": "m1"})
    assert again.status_code == 200  # a replay: no new coup
    refused = api.post(url, {"punter": ["2H"]}, format="json")
    assert refused.status_code == 400
    after = scrape(client)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("casino_coups_recorded_total", path="record") == 1
    assert delta("casino_coup_request_seconds_count", status="2xx") == 2
    assert delta("casino_coup_request_seconds_count", status="4xx") == 1
    assert delta("casino_coup_request_seconds_bucket", status="2xx", le="+Inf") == 2
    assert value(after, "casino_coup_request_seconds_sum", status="2xx") > value(
        before, "casino_coup_request_seconds_sum", status="2xx")
    # read from the database: the whole floor's
    assert value(after, "casino_coups_total") == 1
    assert value(after, "casino_findings", code="false_draw") == 1
    assert value(after, "casino_flags_open", severity="warning", kind="all") == 1
    assert value(after, "casino_flags_open", severity="warning", kind="finding") == 1
    assert value(after, "casino_flags_open", severity="critical", kind="all") == 0
    assert value(after, "casino_shoes_held") == 0
    assert value(after, "casino_health_up", check="database") == 1


def test_a_held_shoe_and_the_ledger_check(client, as_user, manager, croupier):
    from casino.changelog import log_action

    # a table holding on error, and a coup whose declared bank the ledger does
    # not carry: critical, the shoe held (tests/test_hold_on_error.py)
    m = as_user(manager)
    table = m.post("/api/v1/tables/", {"name": "Salon Held"}, format="json").json()
    r = m.post(f"/api/v1/tables/{table['id']}/rules/",
               {"reason": "stop at the mistake", "hold_on_error": True},
               format="json")
    assert r.status_code == 201, r.content
    c = as_user(croupier)
    session = c.post(f"/api/v1/tables/{table['id']}/sessions/", {},
                     format="json").json()
    shoe = c.post(f"/api/v1/sessions/{session['id']}/shoes/", {"burned": 3},
                  format="json").json()
    c.post(f"/api/v1/sessions/{session['id']}/turns/",
           {"seat": 1, "bank": "1000.00"}, format="json")
    r = c.post(f"/api/v1/shoes/{shoe['id']}/coups/",
               {"punter": ["2S", "3H"], "banker": ["9C", "KD"],
                "stakes": [{"seat": 2, "amount": "100.00"}],
                "declared_bank": "900.00"}, format="json")
    assert r.status_code == 201, r.content
    log_action(action="audit.ledger.verified", device="test",
               new={"coups": 10, "differences": 3})
    samples = scrape(client)
    assert value(samples, "casino_shoes_held") == 1
    assert value(samples, "casino_shoe_held", table="Salon Held",
                 shoe=str(shoe["id"])) == 1
    assert value(samples, "casino_flags_open", severity="critical", kind="all") == 1
    assert value(samples, "casino_ledger_differences") == 3
    assert 0 <= value(samples, "casino_ledger_check_age_seconds") < 60


def test_report_jobs_and_their_durations(client, manager, croupier,
                                         django_capture_on_commit_callbacks):
    from datetime import date

    from audit.reports.services import report_request
    from casino.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True  # built here, as the reports tests do
    try:
        with django_capture_on_commit_callbacks(execute=True):
            report_request(user=manager, kind="commission", format="csv",
                           from_day=date(2025, 3, 3), to_day=date(2025, 3, 3))
    finally:
        app.conf.task_always_eager = eager
    samples = scrape(client)
    assert value(samples, "casino_jobs_total", kind="commission_csv",
                 status="done") == 1
    assert value(samples, "casino_job_duration_seconds_count",
                 kind="commission_csv") == 1
    assert value(samples, "casino_job_duration_seconds_bucket",
                 kind="commission_csv", le="+Inf") == 1
    assert value(samples, "casino_jobs_total", kind="surveillance",
                 status="failed") == 0


def test_anchor_age_and_interval(client, table):
    from casino.anchors import trail_anchor

    trail_anchor(reason="test")
    samples = scrape(client)
    assert 0 <= value(samples, "casino_anchor_age_seconds") < 60
    assert value(samples, "casino_anchor_interval_seconds") == 15 * 60
    assert value(samples, "casino_anchors_stale") == 0


def test_multiprocess_mode_sums_the_processes(tmp_path):
    """Under gunicorn each process writes its figures to
    PROMETHEUS_MULTIPROC_DIR; a scrape answered by any of them sums all."""
    script = (
        "import os, django; django.setup()\n"
        "from casino import metrics\n"
        "assert metrics.MULTIPROCESS\n"
        "metrics.COUPS_RECORDED.labels(path='record').inc()\n"
        "metrics.COUP_SECONDS.labels(status='2xx').observe(0.02)\n"
    )
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "casino.settings"}
    env.pop("DATABASE_URL", None)
    for _ in range(3):  # three "gunicorn workers", one after the other
        subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                       check=True)
    reader = (
        "import os, django; django.setup()\n"
        "from prometheus_client import CollectorRegistry, generate_latest\n"
        "from prometheus_client.multiprocess import MultiProcessCollector\n"
        "r = CollectorRegistry(); MultiProcessCollector(r)\n"
        "print(generate_latest(r).decode())\n"
    )
    out = subprocess.run([sys.executable, "-c", reader], env=env, cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    samples = {}
    for family in text_string_to_metric_families(out):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    assert value(samples, "casino_coups_recorded_total", path="record") == 3
    assert value(samples, "casino_coup_request_seconds_count", status="2xx") == 3
    assert Decimal(str(value(samples, "casino_coup_request_seconds_sum",
                             status="2xx"))).quantize(Decimal("0.01")) == \
        Decimal("0.06")
