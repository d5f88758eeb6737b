"""The surveillance pages without a browser: the manager's and the auditor's
page with its charts' data, tables and alerts; the run form (202-like:
redirect to the run's page, progress); who opens what; the flag's page shows
the evidence to the pit boss, who decides it there with a reason; French."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from audit.models import Flag, SurveillanceRun
from audit.surveillance import runs

from .conftest import DAY1

pytestmark = pytest.mark.django_db


def client_for(user, lang="en"):
    c = Client(HTTP_ACCEPT_LANGUAGE=lang)
    c.force_login(user)
    return c


@pytest.fixture
def done_run(floor_night, manager):
    run = runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1)
    return runs.surveillance_execute(run_id=run.pk)


def _json(html: str, name: str):
    start = html.index(f'id="{name}"')
    body = html[html.index(">", start) + 1:html.index("</script>", start)]
    return json.loads(body)


def test_the_page_shows_the_latest_run(done_run, manager, auditor, floor_night):
    for user in (manager, auditor):
        r = client_for(user).get("/floor/surveillance/")
        assert r.status_code == 200
        html = r.content.decode()
        assert f"Run #{done_run.pk}" in html
        for part in ('id="chart-funnel"', 'id="alerts"', 'id="bankers"',
                     'id="tables"', 'id="shoes"', 'id="runs"', "chart.umd.min.js"):
            assert part in html, part
        data = _json(html, "surveillance-data")
        culprit = floor_night["culprit"]
        labels = {p["label"] for p in data["funnel"]["points"]}
        assert culprit.username in labels
        assert data["funnel"]["hi998"] and data["cusums"]
        for c in data["cusums"]:
            assert f'id="cusum-{c["key"]}"' in html and c["limit"] > 0
        # a falling and a rising CUSUM for each table (issue 27)
        assert {c["up"] for c in data["cusums"]} == {False, True}
        flag = Flag.objects.get(kind="surveillance", code="false_draw_rate")
        assert f'href="/floor/flags/{flag.pk}/"' in html
    # the form is the manager's
    assert 'id="run-form"' in client_for(manager).get("/floor/surveillance/") \
        .content.decode()
    assert 'id="run-form"' not in client_for(auditor).get("/floor/surveillance/") \
        .content.decode()


@pytest.fixture
def run_with_rest(floor_night, manager):
    """floor_night and two croupiers who false-draw now and then: the rest
    of the floor has a rate of its own (the honest croupier's is 0)."""
    from tests.conftest import make_user

    from .conftest import play

    for n in (3, 4):  # two alike: neither stands out from the other
        play(make_user(f"croupier{n}", "croupier"), DAY1, tables=1, shoes=2,
             seed=10 + n, rate=0.05, prefix=f"Some{n}")
    run = runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1)
    return runs.surveillance_execute(run_id=run.pk)


def test_the_page_shows_the_floors_mix_and_the_power(run_with_rest, manager):
    """Issue 27: the free choices the expectation was weighed with, and how
    soon a croupier at 3x this floor's rate is found, from its own figures."""
    done_run = run_with_rest
    s = done_run.summary
    html = client_for(manager).get("/floor/surveillance/").content.decode()
    mix = {c["cell"]: c for c in s["mix"]["cells"]}
    five = mix["punter"]
    assert five["draws"] + five["stands"] > 0
    assert 'id="mix"' in html and "punter on 5" in html
    assert f'<td class="num">{five["draws"]}</td>' in html
    p = s["power"]
    lead = next(r for r in p["rows"] if r["factor"] == 3.0)
    # against the rest of the floor: the croupier alerted on false draws is
    # not in the rate a "3x" is measured by (issue 35)
    assert p["left_out"] >= 1 and p["tests"] > 0
    assert p["coups"] < done_run.coups
    assert lead["coups"]
    assert f"within {lead['coups']} coups with 90 % probability" in html
    assert "Against the rest of your floor (a false-draw rate of" in html
    # the table in the order of the factors
    table = html[html.index('id="power-table"'):]
    table = table[:table.index("</table>")]
    assert [int(f) for f in re.findall(r"<td>(\d)× the rest", table)] == [2, 3, 5]
    # a factor out of reach says so in words, not "—"
    for row in p["rows"]:
        if row["coups"] is None:
            assert "not within 2,000,000" in table
    assert "—" not in table


def test_no_power_is_stated_when_the_rest_never_false_draws(done_run, manager):
    """The culprit alone false-draws: against the rest of the floor (rate 0)
    no figure can be given, and the page says so instead of a table."""
    assert done_run.summary["power"]["floor_rate"] == 0
    html = client_for(manager).get("/floor/surveillance/").content.decode()
    assert "too few false draws" in html and 'id="power-table"' not in html


def test_each_alert_reads_as_one_sentence(done_run, manager, floor_night):
    """Issue 35: the manager reads what was found; p and q one click away."""
    html = client_for(manager).get("/floor/surveillance/").content.decode()
    alerts = html[html.index('id="alerts"'):]
    alerts = alerts[:alerts.index("</table>")]
    culprit = floor_night["culprit"].get_username()
    assert re.search(
        rf"Croupier {culprit} false-(draws [\d.]+ times as often as the rest of "
        rf"the floor over|drew \d+ times in) [\d,]+ coups", alerts), alerts[:2000]
    assert "this happens by chance less than once in" in alerts
    assert '<details class="alert-figures"><summary>The statistics</summary>' in alerts
    assert "<th class=\"num\">p</th>" not in alerts


def test_the_queue_offers_no_table_it_cannot_filter_by(done_run, pitboss):
    """An alert about a person (a croupier's rate, a banker) has no table:
    the queue's Table filter has no "None" entry for it."""
    assert Flag.objects.filter(kind="surveillance", table=None).exists()
    html = client_for(pitboss).get("/floor/queue/").content.decode()
    start = html.index('name="table"')
    table_filter = html[start:html.index("</select>", start)]
    assert 'value="None"' not in table_filter and "<option" in table_filter
    assert 'value="None"' not in html


def test_who_opens_it(done_run, pitboss, croupier, outsider, manager):
    for user in (pitboss, croupier, outsider):
        c = client_for(user)
        assert c.get("/floor/surveillance/").status_code == 403
        assert c.get(f"/floor/surveillance/runs/{done_run.pk}/").status_code == 403
        assert c.post("/floor/surveillance/run/", {}).status_code == 403
    # the menu shows it to those who may open it only
    assert "/floor/surveillance/" in client_for(manager).get("/floor/rules/") \
        .content.decode()
    assert "/floor/surveillance/" not in client_for(pitboss).get("/floor/") \
        .content.decode()
    assert Client().get("/floor/surveillance/").status_code == 302


def test_the_form_starts_a_run_and_shows_progress(
        floor_night, manager, django_capture_on_commit_callbacks):
    c = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        r = c.post("/floor/surveillance/run/", {"from_day": str(DAY1),
                                                "to_day": str(DAY1), "fdr": "0.02"})
    run = SurveillanceRun.objects.get()
    assert r.status_code == 302
    assert r["Location"] == f"/floor/surveillance/runs/{run.pk}/"
    assert str(run.fdr) == "0.0200" and run.status == "done"
    p = c.get(f"/floor/surveillance/progress.json?run={run.pk}").json()
    assert p["runs"][0]["percent"] == 100 and p["runs"][0]["status"] == "done"
    page = c.get(r["Location"]).content.decode()
    assert "0.0200" in page and 'id="chart-funnel"' in page
    # a refusal names the field, on the page
    r = c.post("/floor/surveillance/run/", {"from_day": str(DAY1),
                                            "to_day": "nope"}, follow=True)
    assert "to_day" in r.content.decode()
    assert SurveillanceRun.objects.count() == 1


def test_a_queued_run_polls_its_progress(manager):
    run = SurveillanceRun.objects.create(
        from_day=DAY1, to_day=DAY1, fdr="0.05", requested_by=manager,
        requested_at="2025-03-04T10:00:00Z", status="running", stage="detect",
        percent=45)
    html = client_for(manager).get(f"/floor/surveillance/runs/{run.pk}/") \
        .content.decode()
    assert 'data-live="1"' in html and "detect" in html and "45" in html


def test_the_flag_page_shows_the_evidence_to_the_pit_boss(
        done_run, pitboss, floor_night):
    flag = Flag.objects.get(kind="surveillance", code="false_draw_rate")
    c = client_for(pitboss)
    queue = c.get("/floor/queue/").content.decode()
    assert f'href="/floor/flags/{flag.pk}/"' in queue and ">surveillance<" in queue
    assert c.get("/floor/").status_code == 200
    html = c.get(f"/floor/flags/{flag.pk}/").content.decode()
    assert 'id="evidence"' in html and 'id="chart-evidence"' in html
    chart = _json(html, "evidence-data")
    assert chart["type"] == "funnel" and chart["subject"]["n"] > 0
    assert "False draws above the floor&#x27;s rate" in html
    assert "confirm-reason" in html  # he may decide it
    # the run's page is not his: its number without a link
    assert f"/floor/surveillance/runs/{done_run.pk}/" not in html
    # a decision without a reason is refused, with one it is taken
    assert c.post(f"/floor/flags/{flag.pk}/dismiss/", {"reason": ""}) \
        .status_code == 400
    r = c.post(f"/floor/flags/{flag.pk}/dismiss/",
               {"reason": "a trainee's first night, retrained"})
    assert r.status_code == 302
    flag.refresh_from_db()
    assert flag.status == "dismissed" and flag.decided_by == pitboss
    # the croupier it is about never decides it (four eyes)
    from audit.services import may_decide

    assert not may_decide(flag, floor_night["culprit"])


def test_french(done_run, manager, pitboss):
    html = client_for(manager, "fr").get("/floor/surveillance/").content.decode()
    assert "Surveillance" in html and "Lancer" in html
    assert "Croupiers : faux tirages" in html
    flag = Flag.objects.get(kind="surveillance", code="false_draw_rate")
    html = client_for(pitboss, "fr").get(f"/floor/flags/{flag.pk}/").content.decode()
    assert "Éléments" in html


def test_the_bankers_are_named_and_the_default_period_has_today(
        done_run, manager):
    """A banker reads as a person would say him (his player card, or his seat
    at a table on a gaming day), never as "seat:4@session:2"; the form's
    default period ends today, so that a first run sees today's play."""
    from datetime import timedelta

    from audit.pages.surveillance import subject_label
    from audit.reports.views import current_gaming_day
    from tables.models import TableSession

    r = client_for(manager).get("/floor/surveillance/")
    html = r.content.decode()
    bankers = r.context["bankers"]
    assert bankers
    for b in bankers:
        assert "@" not in b["label"] and "session:" not in b["label"], b
    session = TableSession.objects.select_related("table").first()
    assert subject_label(f"seat:4@session:{session.pk}", {}, {}, {
        session.pk: (session.table.name, session.gaming_day.isoformat())}) == (
        f"seat 4, {session.table.name}, {session.gaming_day.isoformat()}")
    assert subject_label("card:P0105", {}, {}) == "card P0105"
    table = bankers[0]["label"]
    assert f"<td>{table}</td>" in html
    today, _ = current_gaming_day()
    assert f'name="to_day" value="{today.isoformat()}"' in html
    start = (today - timedelta(days=6)).isoformat()
    assert f'name="from_day" value="{start}"' in html
