"""The live path over windows of several gaming days (issue 38;
audit/surveillance/live.py, live_days.py, live_write.py): a croupier who
cheats moderately over three gaming days raised on the third from the
window started on the first (never from the first day's coups alone), an
alert's windows charged once and a fresh window's crossing raised again,
the closed days' groups kept (statements of a second look) and a
correction to a closed day seen, the words in both languages, the live
flag's page.

The coups are dealt through the recording services (tables.simulation); each
day's sessions are closed before the next day's are opened, the last day's
left open (it is being dealt)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import translation
from django.utils.formats import number_format

from audit.models import Flag, SurveillanceEvidence
from audit.surveillance import live, live_days, livetests
from tables.rollups import current_coups
from tests.reports.conftest import DAY3, close_sessions

from .conftest import DAY1, DAY2
from .test_live import deal

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh():
    live.trailing_forget()
    live._budgets.clear()
    yield
    live.trailing_forget()
    live._budgets.clear()


def _flags(user=None):
    qs = Flag.objects.filter(kind=Flag.Kind.SURVEILLANCE, code="live_croupier")
    return qs if user is None else qs.filter(croupier=user)


def _day(honest, culprit, day, k, *, rate, shoes=3, close=True):
    """A gaming day: the honest croupier at two tables (false draws at 0.5 %
    of the forced cells), the culprit at one; closed at its end unless it is
    the day being dealt."""
    h = deal(honest, day, tables=2, shoes=6, seed=100 + k, false_draw_rate=0.005,
             table_prefix=f"Honest{k}-")
    b = deal(culprit, day, tables=1, shoes=shoes, seed=200 + k,
             false_draw_rate=rate, table_prefix=f"Bad{k}-")
    if close:
        close_sessions(honest, h.table_ids + b.table_ids, day)
    return b


# -- a moderate cheat, found over the days ---------------------------------------------

def test_a_moderate_cheat_is_raised_on_a_later_day_since_the_windows_start(
        croupier, croupier2, settings):
    """croupier2 false-draws at 0.03 of the forced cells (about five times
    the floor's false draws per coup), about 190 of his coups a day: the
    first day's coups do not cross, nor the first two days', the three days
    of the window started on day 1 do."""
    culprit = croupier2
    _day(croupier, culprit, DAY1, 0, rate=0.03, close=False)
    first = live.live_look()
    assert first["days"] == [DAY1.isoformat()] and first["raised"] == 0, first
    close_sessions(croupier, list(_tables()), DAY1)
    _day(croupier, culprit, DAY2, 1, rate=0.03, close=False)
    assert live.live_look()["raised"] == 0
    close_sessions(croupier, list(_tables()), DAY2)
    bad = _day(croupier, culprit, DAY3, 2, rate=0.03, close=False)
    assert not _flags().exists()

    # the windows the setting asks for: one day's, or the three days'
    settings.SURVEILLANCE_LIVE_WINDOW_DAYS = 1
    look = live.look_window(DAY3, open_tables=3)
    assert [w.start for w in look.windows["croupier"]] == [DAY3.toordinal()]
    settings.SURVEILLANCE_LIVE_WINDOW_DAYS = 7
    look = live.look_window(DAY3, open_tables=3)
    assert [w.start for w in look.windows["croupier"]] == [
        d.toordinal() for d in (DAY1, DAY2, DAY3)]
    out = live.live_look()
    assert out["days"] == [DAY3.isoformat()] and out["raised"] >= 1, out
    flag = _flags(culprit).get()
    assert not _flags(croupier).exists()  # the honest croupier: nothing
    assert flag.ident == f"l:croupier_false_draws:croupier:{culprit.pk}:{DAY3}"
    assert flag.gaming_day == DAY3
    # where he is now: tonight's table and open session
    assert flag.table_id == bad.table_ids[0] and flag.session.closed_at is None
    ev = SurveillanceEvidence.objects.get(flag=flag).evidence
    assert ev["since"] == DAY1.isoformat() and ev["days"] == 3
    assert ev["windows"] == [DAY1.isoformat(), DAY2.isoformat(), DAY3.isoformat()]
    mine = current_coups().filter(entered_by=culprit,
                                  gaming_day__range=(DAY1, DAY3))
    assert ev["coups"] == mine.count() > 500
    assert ev["count"] == mine.filter(findings__code="false_draw").distinct().count()
    # the chart: shoe by shoe over the three days, each label with its day
    series = ev["series"]
    assert series["labels"][0].startswith(f"{DAY1.isoformat()} n° ")
    assert series["labels"][-1].startswith(f"{DAY3.isoformat()} n° ")
    assert len(series["labels"]) == 9
    assert series["observed"][-1] == ev["count"]
    assert series["expected"][-1] == pytest.approx(ev["expected"], abs=0.01)
    # in words, since the window's first day (DAY1 is a Monday)
    assert flag.message.startswith(
        f"{flag.table.name}: croupier {culprit.username} has false-drawn "
        f"{ev['count']} times in {ev['coups']:,} coups since Monday 3 March "
        "(3 gaming days); the floor's rate would give "), flag.message
    from audit.flag_words import flag_text

    with translation.override("fr"):
        said = flag_text(flag)
    assert said.startswith(
        f"{flag.table.name} : le croupier {culprit.username} a fait "
        f"{ev['count']} tirages faux en "
        f"{number_format(ev['coups'], force_grouping=True)} coups depuis le "
        "lundi 3 mars (3 journées de jeu) ; "), said
    # looked at again: every crossed window is charged, nothing raised
    assert live.live_look()["raised"] == 0
    assert _flags(culprit).count() == 1


def _tables():
    from tables.models import Table

    return Table.objects.values_list("pk", flat=True)


# -- charged once; a fresh crossing raised again ---------------------------------------

@pytest.fixture
def charged(croupier, croupier2):
    """Day 1: croupier2 false-draws grossly and is raised. Day 2: he deals
    a shoe honestly; looked at, the window of day 1 still crossed."""
    _day(croupier, croupier2, DAY1, 0, rate=0.10, shoes=8, close=False)
    assert live.live_look()["raised"] >= 1
    close_sessions(croupier, list(_tables()), DAY1)
    h = deal(croupier, DAY2, tables=2, shoes=2, seed=301, false_draw_rate=0.005,
             table_prefix="Honest2-")
    b = deal(croupier2, DAY2, tables=1, shoes=1, seed=302, false_draw_rate=0.0,
             table_prefix="Quiet2-")
    return {"culprit": croupier2, "tables": h.table_ids + b.table_ids}


def test_a_charged_window_raises_nothing_again_a_fresh_crossing_does(charged):
    culprit = charged["culprit"]
    day1 = _flags(culprit).get()
    ev1 = SurveillanceEvidence.objects.get(flag=day1).evidence
    assert ev1["since"] == DAY1.isoformat() and ev1["windows"] == [DAY1.isoformat()]
    assert ev1["days"] == 1 and "coups tonight;" in day1.message  # one day
    # day 2: the window started on day 1 has crossed, and is charged
    look = live.look_window(DAY2, open_tables=3)
    mine = [a for a in look.crossed if a.subject == f"croupier:{culprit.pk}"]
    assert [a.since for a in mine] == [DAY1.toordinal()]
    out = live.live_look()
    assert out["crossed"] >= 1 and out["raised"] == 0, out
    assert _flags(culprit).count() == 1
    # he cheats again on day 2: the window started on day 2 crosses afresh
    deal(culprit, DAY2, tables=1, shoes=8, seed=303, false_draw_rate=0.10,
         table_prefix="Bad2-")
    out = live.live_look()
    assert out["raised"] >= 1, out
    day2 = _flags(culprit).get(gaming_day=DAY2)
    ev2 = SurveillanceEvidence.objects.get(flag=day2).evidence
    assert ev2["since"] == DAY2.isoformat()
    assert ev2["windows"] == [DAY1.isoformat(), DAY2.isoformat()]
    assert day2.ident.endswith(f":{DAY2}") and _flags(culprit).count() == 2
    assert live.live_look()["raised"] == 0
    # what the flags charged, read back in one query
    with CaptureQueriesContext(connection) as q:
        charged = live.live_charged(DAY1)
    assert len(q) == 1
    assert charged[("croupier", f"croupier:{culprit.pk}")] == {
        DAY1.toordinal(), DAY2.toordinal()}


def test_the_live_flags_page_reads_right_in_both_languages(charged, pitboss):
    """The figures grouped, yes/no in words, the live bound in the footer."""
    flag = _flags(charged["culprit"]).first()
    ev = SurveillanceEvidence.objects.get(flag=flag).evidence
    assert ev["once_in_shifts"] >= 10_000 and ev["over_budget"] is False
    client = Client()
    client.force_login(pitboss)
    page = client.get(f"/floor/flags/{flag.pk}/").content.decode()
    grouped = f"{ev['once_in_shifts']:,}"
    assert f"<dd>{grouped}</dd>" in page
    assert f"<dd>{ev['once_in_shifts']}</dd>" not in page
    assert "<dt>more subjects than budgeted</dt><dd>no</dd>" in page
    assert "<dd>False</dd>" not in page and "<dd>True</dd>" not in page
    assert "false discovery rate" not in page
    assert "at most 3 % of gaming days bring any false live alert" in page
    assert f"<dd>{DAY1.isoformat()}</dd>" in page  # the window's first day
    client.cookies["django_language"] = "fr"
    page = client.get(f"/floor/flags/{flag.pk}/",
                      HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert 'lang="fr"' in page, page[:300]
    with translation.override("fr"):
        grouped = number_format(ev["once_in_shifts"], force_grouping=True)
    assert f"<dd>{grouped}</dd>" in page
    assert "<dt>plus de sujets que prévu</dt><dd>non</dd>" in page
    assert "au plus 3 % des journées de jeu apportent une fausse alerte" in page
    assert "<dd>False</dd>" not in page and "taux de fausses découvertes" not in page


# -- the closed days, kept -----------------------------------------------------

def test_closed_days_groups_are_kept_and_a_correction_is_seen(
        croupier, croupier2, pitboss, monkeypatch):
    from .test_collect import _correct_one

    _day(croupier, croupier2, DAY1, 0, rate=0.01, shoes=2)
    _day(croupier, croupier2, DAY2, 1, rate=0.01, shoes=2, close=False)
    read = []
    real = live_days.day_groups

    def counted(day):
        read.append(day)
        return real(day)

    monkeypatch.setattr(live_days, "day_groups", counted)
    with CaptureQueriesContext(connection) as cold:
        live.live_look()
    assert DAY1 in read  # the first look reads the closed day once
    read.clear()
    with CaptureQueriesContext(connection) as warm:
        live.live_look()
    assert read == []  # kept: not read again
    assert len(warm) < len(cold)
    # tonight's groups, the rollups' key of the closed days, the plays:
    # nothing more reads coups
    coup_reads = [q["sql"] for q in warm if "tables_coup" in q["sql"]]
    assert len(coup_reads) == 1 and "GROUP BY" in coup_reads[0], coup_reads
    # another process (its memory empty) takes them from the shared cache
    with live_days._cache_lock:
        live_days._groups_cache.clear()
    live.live_look()
    assert read == []
    # a correction of a closed day's coup moves its rollups: read again, as
    # the coups are now
    corrected = _correct_one(pitboss)
    assert corrected.gaming_day == DAY1
    live.live_look()
    assert read == [DAY1]
    kept = live_days.closed_groups([DAY1])[DAY1]
    fresh = real(DAY1)
    for name in ("table", "session", "croupier", "n", "wins", "false_draws"):
        assert sorted(getattr(kept, name).tolist()) == \
            sorted(getattr(fresh, name).tolist()), name
    # a shared entry that does not read is computed again, never trusted
    from django.core.cache import cache

    key = live_days.rollup_keys([DAY1])[DAY1]
    name = live_days._shared_key(DAY1, key)
    held = cache.get(name)
    assert held is not None and live_days.groups_decode(held).coups == fresh.coups
    cache.set(name, {**held, "n": [10**6] * len(held["n"]), "wins": [-1]})
    with live_days._cache_lock:
        live_days._groups_cache.clear()
    read.clear()
    again = live_days.closed_groups([DAY1])[DAY1]
    assert read == [DAY1] and again.coups == fresh.coups


# -- the words; the setting ----------------------------------------------------

def test_the_words_tonight_or_since_the_windows_first_day():
    from audit.surveillance.words import live_sentence

    ev = {"table": "Table 4", "who": "X", "count": 21, "coups": 2310,
          "expected": 7.2, "once_in_shifts": 20000}
    with translation.override("en"):
        assert live_sentence("live_croupier", {**ev, "since": "2015-11-30",
                                               "days": 3}) == (
            "Table 4: croupier X has false-drawn 21 times in 2,310 coups since "
            "Monday 30 November (3 gaming days); the floor's rate would give 7.2; "
            "this happens by chance about once in 20,000 shifts.")
        one_day = live_sentence("live_croupier", {**ev, "since": "2015-12-02",
                                                  "days": 1})
        assert "2,310 coups tonight;" in one_day
        assert "since Tuesday 1 December (2 gaming days)" in live_sentence(
            "live_table", {**ev, "since": "2015-12-01", "days": 2})
    with translation.override("fr"):
        said = live_sentence("live_banker", {**ev, "who": "seat 3",
                                             "since": "2015-11-30", "days": 3})
        assert said.startswith(
            "Table 4 : le banquier (place 3) a gagné 21 coups sur 2\u00a0310 "
            "depuis le lundi 30 novembre (3 journées de jeu) ; "), said


@pytest.mark.parametrize("value", ["0", "29", "-1", "seven", "2.5"])
def test_the_window_setting_is_checked_at_start(value):
    from tests.test_settings import start

    result = start(SURVEILLANCE_LIVE_WINDOW_DAYS=value)
    assert result.returncode != 0
    assert "SURVEILLANCE_LIVE_WINDOW_DAYS" in result.stderr


def test_the_window_settings_default_is_the_tests():
    from django.conf import settings

    assert settings.SURVEILLANCE_LIVE_WINDOW_DAYS == livetests.WINDOW_DAYS == 7


# -- the page in Chromium -----------------------------------------------------------


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_two_day_alert_in_chromium_in_both_languages(
        _migration_rows, croupier, croupier2, pitboss, page, live_server, screenshot):
    """A croupier raised on day 2 from the window started on day 1: the
    flag's page in English and French, its chart drawn over both days.
    Screenshots: var/screenshots/live-window-{en,fr}.png."""
    from .test_browser import _drawn, sign_in

    _day(croupier, croupier2, DAY1, 0, rate=0.03, shoes=4)
    _day(croupier, croupier2, DAY2, 1, rate=0.03, shoes=4, close=False)
    live.live_look()
    flag = _flags(croupier2).get()
    ev = SurveillanceEvidence.objects.get(flag=flag).evidence
    assert ev["since"] == DAY1.isoformat() and ev["days"] == 2
    sign_in(page, live_server, pitboss)
    page.set_viewport_size({"width": 1366, "height": 1000})
    for lang, since, once in (("en", "since Monday 3 March (2 gaming days)",
                               "by chance about once in (shifts)"),
                              ("fr", "depuis le lundi 3 mars (2 journées de jeu)",
                               "par hasard environ une fois sur (soirées)")):
        page.context.add_cookies([{"name": "django_language", "value": lang,
                                   "url": live_server.url}])
        page.goto(f"{live_server.url}/floor/flags/{flag.pk}/")
        assert page.locator("html").get_attribute("lang") == lang
        assert since in page.locator("main").inner_text()
        chart = _drawn(page, "chart-evidence")
        assert chart["chart"] and chart["painted"] > 500, chart
        labels = page.evaluate("() => Chart.getChart(document.getElementById("
                               "'chart-evidence')).data.labels")
        assert labels[0].startswith(DAY1.isoformat()) and \
            labels[-1].startswith(DAY2.isoformat())
        figures = dict(zip(page.locator("#evidence dt").all_inner_texts(),
                           page.locator("#evidence dd").all_inner_texts(),
                           strict=True))
        with translation.override(lang):
            assert figures[once] == number_format(ev["once_in_shifts"],
                                                  force_grouping=True)
        screenshot(f"live-window-{lang}")
