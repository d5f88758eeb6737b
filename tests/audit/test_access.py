"""Segregation of duties: every URL of the project, every role, one table.

The URL patterns come from Django's resolver, so a URL another engineer adds
tomorrow is walked tomorrow. Each must appear in casino.access.ROUTES (or a
namespace rule) with the capability its view checks; casino.roles.PERMISSIONS
says which roles hold it. Every (URL, method, role) is then requested and the
answer must be "allowed" (anything but 401/403/a sign-in redirect) or "denied"
exactly as the tables say. Path ids are ids of nothing: an allowed request
ends in a 404 or a validation error and changes nothing, and a denied one must
be refused before the view looks anything up.

Then no 5xx: every GET again as every role, with real objects behind the ids
(a played table, its flag, the nightly close's reports with no requester...),
plain and with a NUL byte in every query parameter a view reads; and every
answer carries the Content-Security-Policy (casino/settings.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

from casino import access
from casino.roles import PERMISSIONS, ROLES
from tests.conftest import make_user

WHO = ("anonymous", "outsider", *ROLES, "admin")
DUMMY = {"int": "987654321", "id": "987654321", "str": "zz", "slug": "zz",
         "path": "zz", "uuid": "00000000-0000-0000-0000-000000000000"}
# Walked as one rule: the admin site guards itself (staff only); one page of it
# stands for the rest.
SAMPLED_NAMESPACES = {"admin": "/admin/"}


@dataclass(frozen=True)
class Url:
    key: str  # "namespace:name", a bare name, or the route of an unnamed URL
    path: str | None  # a requestable path with dummy ids, None if regex-only
    route: str | None = None  # the route itself, "floor/flags/<id:pk>/"


def walk(resolver=None, prefix="", namespace=""):
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            ns = namespace
            if p.namespace:
                ns = f"{namespace}:{p.namespace}" if namespace else p.namespace
            yield from walk(p, prefix + _route(p.pattern), ns)
        elif isinstance(p, URLPattern):
            route = prefix + _route(p.pattern)
            key = p.name or route
            if p.name and namespace:
                key = f"{namespace}:{p.name}"
            elif namespace:
                key = f"{namespace}:{route}"
            requestable = route is not None and isinstance(p.pattern, RoutePattern)
            yield Url(key, "/" + _fill(route) if requestable else None,
                      route if requestable else None)


def _route(pattern) -> str:
    return str(pattern.pattern if hasattr(pattern, "pattern") else pattern)


def _fill(route: str) -> str:
    def sub(m):
        return DUMMY.get(m.group(1) or "str", "zz")

    return re.sub(r"<(?:(\w+):)?\w+>", sub, route)


def all_urls() -> list[Url]:
    return list(walk())


def test_every_url_is_in_the_permission_table():
    missing = []
    for url in all_urls():
        root = url.key.split(":", 1)[0] if ":" in url.key else None
        if url.key in access.ROUTES or root in access.NAMESPACES:
            continue
        missing.append(url.key)
    assert not missing, (
        "These URLs are not in the permission table. Add each to "
        "casino.access.ROUTES with the capability its view checks, per method "
        "(see casino/access.py):\n  " + "\n  ".join(sorted(missing))
    )


def test_the_table_names_no_stale_url_and_no_unknown_capability():
    access.check_table()
    keys = {u.key for u in all_urls()}
    stale = sorted(k for k in access.ROUTES if k not in keys)
    assert not stale, "casino.access.ROUTES names URLs that no longer exist: " + (
        ", ".join(stale))


@pytest.fixture
def people(db):
    from django.contrib.auth.models import User

    out = {"anonymous": None, "outsider": make_user("nobody", None)}
    for role in ROLES:
        out[role] = make_user(f"walk-{role}", role)
    out["admin"] = User.objects.create_superuser("walk-admin", password="pw")
    return out


def expected(need: str | None, who: str, user) -> bool:
    if need == access.PUBLIC:
        return True
    if who == "anonymous":
        return False
    if need == access.SIGNED_IN:
        return True
    if who == "admin":
        return True
    if need == access.STAFF:
        return False
    return who in PERMISSIONS[need]


def answer(client: Client, method: str, path: str):
    if method == "GET":
        return client.get(path)
    return client.generic(method, path, data=b"{}", content_type="application/json")


def denied(response) -> bool:
    if response.status_code in (401, 403):
        return True
    location = response.headers.get("Location", "")
    return response.status_code == 302 and (
        location.startswith(settings.LOGIN_URL) or "/login/" in location
    )


def test_every_url_answers_every_role_as_the_table_says(people, nightly, settings):
    """With a played table and what the nightly close leaves (reports with no
    requester, one built, one queued) on every list and dashboard."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    wrong = []
    seen = set()
    clients = {}

    def client_for(who: str) -> Client:
        # One signed-in client per role; a POST may sign it out (logout, the
        # tablet's lock), so the client is dropped after one.
        if who not in clients:
            client = Client(raise_request_exception=False)
            if people[who] is not None:
                client.force_login(people[who])
            clients[who] = client
        return clients[who]

    for url in all_urls():
        root = url.key.split(":", 1)[0] if ":" in url.key else None
        if root in SAMPLED_NAMESPACES:
            if root in seen:
                continue
            seen.add(root)
            path, rules = SAMPLED_NAMESPACES[root], access.NAMESPACES[root]
        elif url.path is None:
            continue
        else:
            path, rules = url.path, access.ROUTES.get(url.key, {})
        for method, need in rules.items():
            for who in WHO:
                r = answer(client_for(who), method, path)
                if method != "GET":
                    clients.pop(who)
                if r.status_code >= 500:
                    wrong.append(f"{method} {path} as {who}: {r.status_code}")
                    continue
                want = expected(need, who, people[who])
                if want == denied(r):
                    verdict = "allowed" if want else "denied"
                    wrong.append(
                        f"{method} {path} ({url.key}, needs {need}) as {who}: "
                        f"should be {verdict}, got {r.status_code}"
                    )
    assert not wrong, "Answers that differ from the table:\n  " + "\n  ".join(wrong)


def test_segregation_of_duties_in_the_table():
    """The issue's rules, read straight off the table."""
    p = PERMISSIONS
    assert p["coup.record"] == {"croupier"}  # no coup entry for the others
    assert "manager" not in p["coup.record"] and "pitboss" not in p["coup.record"]
    assert p["flag.review"] == {"pitboss"} and p["coup.correct"] == {"pitboss"}
    assert p["session.close"] == {"pitboss"}
    assert p["cagnotte.count"] == {"pitboss"} and p["cagnotte.attest"] == {"manager"}
    assert "manager" in p["table.manage"] and "manager" in p["report.read"]
    writes = [cap for cap in p if not cap.endswith((".read", ".view", ".check"))]
    for cap in writes:  # the auditor reads everything and changes nothing
        assert "auditor" not in p[cap] or cap == "report.request", cap
    for cap in ("table.read", "coup.read", "flag.read", "cagnotte.read",
                "stats.read", "trail.read", "report.read"):
        assert "auditor" in p[cap], cap


def test_the_reports_pages_name_the_nightly_schedule(nightly, manager, auditor):
    """A nightly report has no requester: the dashboard says "nightly" where
    it names who asked (it answered 500 once a nightly report existed), and
    the report's own page shows its stamp."""
    built, queued = nightly
    for user in (manager, auditor):
        client = Client()
        client.force_login(user)
        page = client.get("/reports/")
        assert page.status_code == 200
        rows = re.findall(r"<tr><td><a href=\"/reports/jobs/(\d+)/\">.*?</tr>",
                          page.content.decode(), re.S)
        assert {int(pk) for pk in rows} >= {built.pk, queued.pk}
        for job in (built, queued):
            row = re.search(rf'<tr><td><a href="/reports/jobs/{job.pk}/">.*?</tr>',
                            page.content.decode(), re.S)[0]
            assert "<td>nightly</td>" in row
            assert client.get(f"/reports/jobs/{job.pk}/").status_code == 200
    assert built.stamp["generated_by"] == "nightly schedule"


# -- no 5xx: real objects behind the ids, and NUL bytes in the query string ---

# A path id names an object of the kind its collection names (the segment
# before it): /floor/flags/<id>/ a flag. A collection not listed here gets a
# dummy id (the walk still requests it: a 404, never a 5xx).
COLLECTION = re.compile(r"([\w-]+)/<(?:(\w+):)?\w+>")


def real_path(route: str, ids: dict[str, int]) -> str:
    def sub(m):
        if m.group(1) in ids:
            return f"{m.group(1)}/{ids[m.group(1)]}"
        return f"{m.group(1)}/{DUMMY.get(m.group(2) or 'str', 'zz')}"

    return "/" + _fill(COLLECTION.sub(sub, route))


@pytest.fixture
def furnished(nightly, played, turn, manager) -> dict[str, int]:
    """An object behind every kind of path id: the played table with its
    session, shoe, turn, a coup with a finding and its flag, the table's
    tableau, a nightly report (no requester) and surveillance run, a re-audit
    run and a user."""
    from audit.models import Flag, SurveillanceRun
    from audit.reports.reaudit import reaudit_request

    coup = played[1]  # the false draw
    session = coup.shoe.session
    run = reaudit_request(user=manager, from_day=coup.gaming_day,
                          to_day=coup.gaming_day)
    return {
        "tables": session.table_id, "sessions": session.pk, "shoes": coup.shoe_id,
        "turns": turn.pk, "coups": coup.pk,
        "flags": Flag.objects.filter(coup=coup).get().pk,
        "tableaux": session.table.rules.tableau_id,
        "runs": SurveillanceRun.objects.filter(source="nightly").first().pk,
        "reports": nightly[0].pk, "jobs": nightly[0].pk, "reaudit": run.pk,
        "users": manager.pk,
    }


# Where the views read their query parameters (the API's are in its schema).
READS = re.compile(r"""(?:GET|query_params)\.get(?:list)?\(\s*["'](\w+)["']""")


def query_names() -> list[str]:
    """Every query parameter a view reads: those the API schema documents, and
    those the apps' code reads off request.GET or query_params (a parameter
    added tomorrow is walked tomorrow)."""
    from pathlib import Path

    from drf_spectacular.generators import SchemaGenerator

    names = set()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for item in schema["paths"].values():
        for operation in item.values():
            names |= {p["name"] for p in operation.get("parameters", [])
                      if p.get("in") == "query"}
    root = Path(settings.BASE_DIR)
    for app in ("casino", "tables", "audit"):
        for source in (root / app).rglob("*.py"):
            names |= set(READS.findall(source.read_text(encoding="utf-8")))
    return sorted(names)


def get_urls() -> list[tuple[str, str]]:
    """(key, route) of every GET the permission table lists, the admin site
    sampled by its front page."""
    out, seen = [], set()
    for url in all_urls():
        root = url.key.split(":", 1)[0] if ":" in url.key else None
        if root in SAMPLED_NAMESPACES:
            if root not in seen:
                seen.add(root)
                out.append((url.key, SAMPLED_NAMESPACES[root].lstrip("/")))
        elif url.route is not None and "GET" in access.ROUTES.get(url.key, {}):
            out.append((url.key, url.route))
    return out


def server_errors(people, ids: dict[str, int], query: str = "") -> list[str]:
    """GET every URL, with real objects behind its ids, as every role: the
    answers 5xx, and those without the Content-Security-Policy."""
    wrong = []
    clients = {}
    for who in WHO:
        clients[who] = Client(raise_request_exception=False)
        if people[who] is not None:
            clients[who].force_login(people[who])
    urls = get_urls()
    assert len(urls) > 50
    for key, route in urls:
        path = real_path(route, ids) + query
        for who in WHO:
            r = clients[who].get(path)
            if r.status_code >= 500:
                wrong.append(f"GET {path.split('?')[0]} ({key}) as {who}: "
                             f"{r.status_code}")
            # and every answer, whatever its status, carries the policy
            policy = r.headers.get("Content-Security-Policy", "")
            if "script-src 'self';" not in policy + ";":
                wrong.append(f"GET {path.split('?')[0]} ({key}) as {who}: "
                             f"no Content-Security-Policy ({r.status_code})")
    return wrong


def test_no_url_answers_5xx_with_real_objects(people, furnished, settings):
    """Every GET as every role, with real objects behind its ids (a nightly
    report with no requester among them), not only ids of nothing."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    wrong = server_errors(people, furnished)
    assert not wrong, "Server errors:\n  " + "\n  ".join(wrong)


NUL = "%00"


def test_no_url_answers_5xx_to_a_nul_byte_in_its_query(people, furnished,
                                                         settings):
    """PostgreSQL refuses a NUL byte in text: every query parameter a view
    reads, an unknown one and a name with a NUL in it, each sent as a NUL,
    to every GET as every role, with real objects behind the ids. Refused
    with a 400 naming the parameter (casino/nul.py), never a 5xx."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    names = query_names()
    assert {"against", "action", "table", "from_day", "status"} <= set(names)
    query = "?" + "&".join(f"{n}={NUL}" for n in ["x", *names]) + f"&{NUL}=1"
    wrong = server_errors(people, furnished, query)
    assert not wrong, f"Server errors to {query}:\n  " + "\n  ".join(wrong)
