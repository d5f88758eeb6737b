"""Manager pages: the dashboard (charts, latest reports, running tasks, odds),
a report's page, the re-audit button; and what a manager sees in a browser."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.reports.models import ReauditRun, ReportJob
from tables.services import gaming_day_for

from .conftest import play

TODAY = gaming_day_for(timezone.now(), 6)


@pytest.fixture
def recent(croupier, croupier2):
    for back in range(1, 4):
        play(croupier if back % 2 else croupier2, TODAY - timedelta(days=back),
             tables=2, shoes=1, seed=50 + back, rate=0.05, prefix="T")


@pytest.mark.django_db
def test_dashboard_for_managers_and_auditors(recent, manager, auditor, croupier,
                                             client):
    client.force_login(manager)
    r = client.get("/reports/")
    assert r.status_code == 200
    chart = json.loads(r.context["chart"] and json.dumps(r.context["chart"]))
    assert len(chart["days"]) == 3 and len(chart["tables"]) == 6
    html = r.content.decode()
    for needle in ("Commission by gaming day", "Running tasks", "Latest reports",
                   "Exact odds", "chart.umd.min.js", "Re-audit"):
        assert needle in html, needle
    assert [o["decks"] for o in r.context["odds"]] == [6]  # one rule set
    assert len(r.context["odds"][0]["tables"]) == 6
    client.force_login(auditor)
    r = client.get("/reports/")
    assert r.status_code == 200 and "Re-audit</button>" not in r.content.decode()
    client.force_login(croupier)
    assert client.get("/reports/").status_code == 403
    client.logout()
    assert client.get("/reports/").status_code == 302


@pytest.mark.django_db
def test_request_form_then_the_job_page(recent, manager, client,
                                        django_capture_on_commit_callbacks):
    client.force_login(manager)
    day = (TODAY - timedelta(days=2)).isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/reports/request/", {"kind": "commission", "format": "xlsx",
                                              "from_day": day, "to_day": day,
                                              "group_by": "banker"})
    job = ReportJob.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/reports/jobs/{job.pk}/"
    page = client.get(r["Location"]).content.decode()
    assert "done" in page and "Download" in page and "manager1" in page
    download = client.get(f"/reports/jobs/{job.pk}/download/")
    assert download.status_code == 200
    progress = client.get("/reports/progress.json", {"job": job.pk}).json()
    assert progress["jobs"][0]["percent"] == 100
    bad = client.post("/reports/request/", {"kind": "commission", "format": "csv",
                                            "from_day": "nope", "to_day": day},
                      follow=True)
    assert "from_day: must be a gaming day" in bad.content.decode()


@pytest.mark.django_db
def test_reaudit_button(recent, manager, auditor, client,
                        django_capture_on_commit_callbacks):
    client.force_login(auditor)
    body = {"from_day": (TODAY - timedelta(days=3)).isoformat(),
            "to_day": TODAY.isoformat()}
    assert client.post("/reports/reaudit/", body).status_code == 403
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/reports/reaudit/", body)
    run = ReauditRun.objects.get()
    assert r["Location"] == f"/reports/reaudit/{run.pk}/"
    page = client.get(r["Location"]).content.decode()
    assert "done" in page
    shown = f'<span class="rows">{run.coups_checked}</span> / {run.coups_expected}'
    assert shown in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_what_a_manager_sees(_migration_rows, live_server, page, screenshot,
                             croupier, croupier2, manager):
    for back in range(1, 8):
        play(croupier if back % 2 else croupier2, TODAY - timedelta(days=back),
             tables=3, shoes=1, seed=60 + back, rate=0.03, prefix="Table")
    page.set_viewport_size({"width": 1366, "height": 900})
    from django.test import Client

    client = Client()
    client.force_login(manager)
    page.context.add_cookies([{"name": "sessionid", "url": live_server.url,
                               "value": client.cookies["sessionid"].value}])
    page.goto(f"{live_server.url}/reports/")
    page.wait_for_function("document.querySelectorAll('canvas').length == 2 && "
                           "window.Chart && Chart.getChart('chart-days')")
    screenshot("reports-dashboard")
    page.select_option("select[name=format]", "pdf")
    page.select_option("select[name=group_by]", "table")
    page.fill("input[name=from_day]", (TODAY - timedelta(days=7)).isoformat())
    page.click("text=Build")
    page.wait_for_url("**/reports/jobs/*/")
    page.wait_for_selector("#job-download:not([hidden])", timeout=30000)
    assert page.inner_text("#job-status") == "done"
    screenshot("reports-job")


@pytest.mark.django_db
def test_the_odds_show_what_each_table_plays_today_and_what_comes(
        table, manager, client):
    """A tableau assigned from tomorrow is not shown as in force today: the
    table is listed with today's rules, and again, marked, from the day its
    new version takes effect."""
    from audit.reports.views import table_odds
    from tables import services
    from tables.models import TableauVersion

    before = table_odds()
    assert [(o["tables"], o["from_day"]) for o in before] == [([table.name], None)]
    tomorrow = gaming_day_for(timezone.now(), 6) + timedelta(days=1)
    services.house_rules_change(
        table=table, user=manager, reason="punto banco, 8 decks, from tomorrow",
        tableau_version=TableauVersion.objects.get(version="punto-banco-1").version,
        decks=8, effective_from=tomorrow)
    odds = table_odds()
    assert [(o["tables"], o["tableau"], o["from_day"]) for o in odds] == [
        ([table.name], before[0]["tableau"], None),
        ([table.name], "punto-banco-1", tomorrow),
    ]
    assert (odds[0]["decks"], odds[0]["banker"]) == (6, before[0]["banker"])
    assert odds[1]["decks"] == 8 and odds[1]["banker"] != odds[0]["banker"]
    client.force_login(manager)
    html = client.get("/reports/").content.decode()
    assert f"from {tomorrow.strftime('%b')}" in html or f"from {tomorrow}" in html
