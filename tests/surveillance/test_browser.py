"""The surveillance pages in Chromium: the funnel and every table's CUSUM
canvas draw (Chart.js has data on them and pixels are painted), in the day
and the night theme; the flag's page draws its evidence chart for the pit
boss. Screenshots: var/screenshots/surveillance*.png."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import Flag
from audit.surveillance import runs
from tables.tablet.theme import NIGHT, SESSION_KEY

from .conftest import DAY1

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# How many pixels of a canvas are painted (not transparent), and whether
# Chart.js holds a chart with data there.
DRAWN = """(id) => {
  const c = document.getElementById(id);
  if (!c || !window.Chart) return {chart: false, painted: 0};
  const chart = Chart.getChart(c);
  const ctx = c.getContext("2d");
  const px = ctx.getImageData(0, 0, c.width, c.height).data;
  let painted = 0;
  for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
  const points = chart ? chart.data.datasets.reduce((n, d) => n + d.data.length, 0) : 0;
  return {chart: !!chart, points: points, painted: painted, width: c.width};
}"""


def sign_in(page, live_server, user, theme=None):
    client = Client()
    client.force_login(user)
    if theme:
        s = client.session
        s[SESSION_KEY] = theme
        s.save()
    page.context.clear_cookies()
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])


@pytest.fixture
def done_run(floor_night, manager):
    # croupiers who false-draw now and then: the rest of the floor
    # has a rate the power is stated against (issue 35)
    from tests.conftest import make_user

    from .conftest import play

    for n in (3, 4):  # two alike: neither stands out from the other
        play(make_user(f"croupier{n}", "croupier"), DAY1, tables=1, shoes=2,
             seed=10 + n, rate=0.05, prefix=f"Some{n}")
    run = runs.surveillance_request(user=manager, from_day=DAY1, to_day=DAY1)
    return runs.surveillance_execute(run_id=run.pk)


def _drawn(page, canvas_id):
    page.wait_for_function("(id) => window.Chart && document.getElementById(id) "
                           "&& Chart.getChart(document.getElementById(id))",
                           arg=canvas_id, timeout=10_000)
    return page.evaluate(DRAWN, canvas_id)


@pytest.mark.parametrize("theme", [None, NIGHT])
def test_the_funnel_and_cusum_canvases_draw(page, live_server, done_run, manager,
                                            screenshot, theme):
    sign_in(page, live_server, manager, theme)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(live_server.url + "/floor/surveillance/")
    assert page.locator("html").get_attribute("data-theme") == (theme or "day")
    funnel = _drawn(page, "chart-funnel")
    assert funnel["chart"] and funnel["points"] >= 3 and funnel["painted"] > 500, \
        funnel
    cusums = page.locator("canvas.cusum")
    # a falling and a rising CUSUM for each table
    assert cusums.count() == 2 * len(done_run.summary["tables"]) >= 6
    assert page.locator("#cusums-up canvas.cusum").count() == len(
        done_run.summary["tables"])
    for i in range(cusums.count()):
        cid = cusums.nth(i).get_attribute("id")
        drawn = _drawn(page, cid)
        assert drawn["chart"] and drawn["points"] > 2 and drawn["painted"] > 200, \
            (cid, drawn)
    assert page.locator("#alerts a[href^='/floor/flags/']").count() >= 1
    if theme == NIGHT:  # panels dark, text light: the night theme holds
        bg = page.evaluate("getComputedStyle(document.querySelector('.panel'))"
                           ".backgroundColor")
        assert bg == "rgb(24, 29, 27)", bg
        color = page.evaluate("Chart.defaults.color")
        assert color == "#cfd6d2"
    screenshot("surveillance" + ("-night" if theme else ""))
    # the floor's free choices and the croupier test's power, in view
    page.locator("#power").scroll_into_view_if_needed()
    assert page.locator("#power-table tbody tr").count() == 3
    assert page.locator("#mix tbody tr").count() >= 1
    screenshot("surveillance-power-mix" + ("-night" if theme else ""))


def test_the_flag_page_draws_its_evidence(page, live_server, done_run, pitboss,
                                          screenshot):
    flag = Flag.objects.get(kind="surveillance", code="false_draw_rate")
    sign_in(page, live_server, pitboss)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/floor/flags/{flag.pk}/")
    drawn = _drawn(page, "chart-evidence")
    assert drawn["chart"] and drawn["points"] >= 3 and drawn["painted"] > 500, drawn
    assert page.locator("#evidence dl.evidence dt").count() > 5
    screenshot("surveillance-flag")
    # he decides it there, with his reason
    page.fill("#confirm-reason", "seen on camera: draws on 6")
    page.click("form[action$='/confirm/'] button[type=submit]")
    page.wait_for_url(f"**/floor/flags/{flag.pk}/")
    flag.refresh_from_db()
    assert flag.status == "confirmed" and flag.decided_by == pitboss
