"""No link a role is shown answers 403 for that role (issue "a real shift",
item 10). Every role walks every page it can open from the front door, the
floor, the tablet and the reports — collecting every <a href> shown, menus
included — and GETs each link as itself. The menus ask the permission table
(casino_tags.may_open), so a capability taken from a role takes its link with
it; the pit boss, who does not read the trail (casino.roles: trail.read is
the manager's and the auditor's), is not shown the Trail tab."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from audit.services import flags_sync
from tests.conftest import make_user

START = ("/", "/floor/", "/floor/queue/", "/floor/stats/", "/floor/trail/",
         "/tablet/", "/tablet/preferences/", "/reports/")
# Not pages: the API's own links, the admin site (staff), files.
SKIP = ("/api/", "/admin/", "/static/", "/media/")
LIMIT = 250


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        # a link shown, or what the page GETs by itself (htmx: the tablet's
        # recent coups, the floor's refresh)
        href = attrs.get("href") if tag == "a" else None
        for url in (href, attrs.get("hx-get")):
            if url:
                self.hrefs.append(url)


def links_of(html: str, base: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    out = []
    for href in parser.hrefs:
        url = urljoin("http://testserver" + base, href)
        parts = urlsplit(url)
        if parts.netloc != "testserver" or href.startswith(("#", "data:")):
            continue
        out.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return out


def walk(user, extra=()) -> tuple[dict[str, int], dict[str, str]]:
    """Every page `user` can open from START (and `extra`) by following the
    links shown: ({url: status}, {link shown: the first page that showed it})."""
    client = Client()
    client.force_login(user)
    status: dict[str, int] = {}
    shown: dict[str, str] = {}
    todo = [*START, *extra]
    while todo and len(status) < LIMIT:
        url = todo.pop(0)
        if url in status or url.startswith(SKIP):
            continue
        answer = client.get(url)
        status[url] = answer.status_code
        if answer.status_code != 200 or "html" not in answer.get("Content-Type", ""):
            continue
        for link in links_of(answer.content.decode(), url):
            shown.setdefault(link, url)
            todo.append(link)
    return status, shown


def refused_links(user, extra=()) -> dict[str, str]:
    status, shown = walk(user, extra)
    assert len(status) < LIMIT
    return {link: origin for link, origin in shown.items()
            if status.get(link) == 403}


@pytest.fixture
def world(played, nightly, croupier, pitboss, manager,
          django_capture_on_commit_callbacks, settings, tmp_path):
    """The played shoe with its flags, its session closed and its box
    counted; a second table in play (the tablet's session and coup screens);
    a report built and a re-audit run, and what the nightly close leaves (its
    reports, which nobody asked for, and its surveillance runs): something
    behind every kind of link.
    Returns the pages reached by a form's redirect, not by a link."""
    from audit.reports.reaudit import reaudit_request
    from audit.reports.services import report_request
    from audit.services import cagnotte_count
    from casino.celery import app
    from tables import services
    from tables.services import gaming_day_for

    settings.MEDIA_ROOT = str(tmp_path / "media")
    flags_sync()
    session = played[0].shoe.session
    services.session_close(session=session, user=pitboss)
    # a short box: a variance flag too
    cagnotte_count(session=session, user=pitboss, counted=Decimal("1.00"))
    day = gaming_day_for(timezone.now(), 6)
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            report_request(user=manager, kind="commission", format="csv",
                           from_day=day - timedelta(days=1), to_day=day)
            reaudit_request(user=manager, from_day=day - timedelta(days=1),
                            to_day=day)
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = old
    table2 = services.table_create(user=manager, name="Table 2", seats=9,
                                   minimum_banco=Decimal("100.00"))
    live = services.session_open(table=table2, user=croupier)
    shoe = services.shoe_open(session=live, user=croupier, burned=5)
    services.banker_turn_open(session=live, user=croupier, seat=1,
                              bank=Decimal("1000.00"))
    return (f"/tablet/sessions/{live.pk}/", f"/tablet/shoes/{shoe.pk}/")


ROLES = ("croupier", "pitboss", "manager", "auditor", None)


@pytest.mark.parametrize("role", ROLES, ids=[r or "no-role" for r in ROLES])
def test_no_link_shown_to_a_role_answers_403(world, role, croupier, pitboss,
                                             manager):
    user = {"croupier": croupier, "pitboss": pitboss, "manager": manager}.get(
        role) or make_user(f"walker-{role or 'none'}", role)
    status, shown = walk(user, world)
    assert shown, "the walk found no link at all"
    refused = {link: origin for link, origin in shown.items()
               if status.get(link) == 403}
    assert not refused, f"{role}: links shown that answer 403: {refused}"
    assert len(status) < LIMIT


def test_the_pit_boss_is_not_shown_the_trail(world, pitboss, manager):
    floor = Client()
    floor.force_login(pitboss)
    assert "/floor/trail/" not in floor.get("/floor/").content.decode()
    assert floor.get("/floor/trail/").status_code == 403
    floor.force_login(manager)
    assert "/floor/trail/" in floor.get("/floor/").content.decode()
    assert floor.get("/floor/trail/").status_code == 200


def test_the_walk_finds_a_link_that_answers_403(world, pitboss, monkeypatch):
    """The test can fail: with the menu's check switched off, the pit boss is
    shown the Trail tab again, and the walk names it."""
    from casino.templatetags import casino_tags

    monkeypatch.setattr(casino_tags, "allows", lambda user, need: True)
    assert "/floor/trail/" in refused_links(pitboss, world)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role,start", [("pitboss", "/floor/"),
                                        ("manager", "/reports/"),
                                        ("croupier", "/tablet/preferences/")])
def test_every_menu_link_opens_in_the_browser(page, live_server, role, start):
    """The menus as Chromium shows them: the header's and the floor's tabs,
    each clicked through as that role; none answers 403."""
    user = make_user(f"{role}-menu", role)
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid",
                               "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    page.goto(live_server.url + start)
    menu = page.locator("header a, nav.subnav a")
    hrefs = [menu.nth(i).get_attribute("href") for i in range(menu.count())]
    assert hrefs
    if role == "pitboss":
        assert page.get_by_role("link", name="Trail").count() == 0
        assert page.get_by_role("link", name="Review queue").is_visible()
    for href in hrefs:
        answer = page.goto(urljoin(live_server.url + start, href))
        assert answer.status != 403, (role, href)
