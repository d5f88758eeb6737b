"""One own-table check for pages and API (issue 11, findings 5 and 9).

Croupier B runs table B. Signed in (a browser session, as the tablet is; the
API accepts the same session), he asks every URL of the project — Django's
resolver walks them, as tests/audit/test_access.py does, so a URL added later
is walked too — for every method casino.access.ROUTES names, with the real
ids of table A's objects: its open session and the one closed before it, the
shoe and banker turn of each, a coup, its flag, the cagnotte count, croupier
A's user. Every object-scoped URL must refuse him (403/404, or the sign-in
page where the role itself is refused) and no request may write: the ledger
tables and the change log are compared row by row around each request.

URLs that are not about one object of a table (lists, his own settings,
signing in and out) and the few table URLs that are his by design (the table
list's row, taking a table over as the relief) are listed below, each with
the reason; a URL in neither list fails the test until someone decides.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.conf import settings
from django.test import Client

from audit.models import CagnotteAttestation, CagnotteCount, Flag, FlagEvent
from audit.services import cagnotte_count, flags_sync
from casino import access
from casino.models import ChangeLog
from tables import services
from tables.models import (
    BankerTurn,
    Coup,
    DailyRollup,
    Finding,
    HouseRules,
    Shoe,
    Stake,
    Table,
    TableauVersion,
    TableSession,
)
from tests.audit.test_access import DUMMY, Url, all_urls
from tests.conftest import make_user

D = Decimal
BANKER_WINS = (["2H", "3D"], ["8C", "TS"])
FALSE_DRAW = (["2H", "2D", "6C"], ["3S", "2C"])
LEDGER = (Table, HouseRules, TableSession, Shoe, BankerTurn, Coup, Stake, Finding,
          DailyRollup, CagnotteCount, CagnotteAttestation, Flag, FlagEvent,
          ChangeLog)

# Not about one object of a table: croupier B may use them. Lists filter to
# his own table (checked below for the API's own lists).
NOT_OBJECT_SCOPED = {
    "home": "the front page",
    "trail-keys": "public: the trail's public keys, for anyone to verify with",
    "trail-checkpoint": "public: the log's latest checkpoint and its cosignatures "
    "(sizes and hashes), for whoever watches the log; no table's data",
    "favicon": "public: the house's icon",
    "health": "public: alive or not, for a load balancer, no detail",
    "health-details": "staff: the services' state, no table's data",
    "metrics": "a token or staff: the floor's counters, no table's coups",
    "set_language": "his own language (a cookie and his settings)",
    "login": "signing in", "logout": "signing out",
    "password_change": "his own password",
    "password_change_done": "his own password",
    "password_reset": "public: a reset e-mail",
    "password_reset_done": "public", "password_reset_complete": "public",
    "password_reset_confirm": "public: the ids in it are a reset token's",
    "api-schema": "public documentation", "api-docs": "public documentation",
    "api-token": "signing in (API)",
    "api-tables": "the table list stays readable: he picks his table there",
    "api-sessions": "a list: his own table's sessions only (checked below)",
    "api-coups": "a list: his own table's coups only (checked below)",
    "api-check": "the tableau engine on cards he sends; nothing stored",
    "tablet:tables": "the table list stays readable",
    "tablet:sw": "the tablet's service worker script",
    "tablet:accept": "no id in the URL: a pit boss signs the request with his "
    "own password, for the coups of his tablet's queue",
    "tablet:lock": "locks his own tablet", "tablet:unlock": "his own PIN",
    "tablet:preferences": "his own settings",
    "audit-api-floor": "refused by role", "audit-api-flags": "refused by role",
    "audit-api-flag-counts": "refused by role", "audit-api-stats": "refused by role",
    "audit-api-trail": "refused by role", "audit-api-trail-verify": "refused by role",
    "floor:index": "refused by role", "floor:tables": "refused by role",
    "floor:queue": "refused by role", "floor:stats": "refused by role",
    "floor:trail": "refused by role",
    "floor:rules": "refused by role",
    "audit-api-surveillance-runs": "refused by role",
    "floor:surveillance": "refused by role",
    "floor:surveillance-start": "refused by role",
    "floor:surveillance-progress": "refused by role",
    "api-tableaux": "the house's tableau versions (not a table's): read by "
    "design; writing them is a manager's (refused by role)",
    "tableaux:list": "refused by role", "tableaux:new": "refused by role",
    "reports-api:jobs": "refused by role", "reports-api:commission": "refused by role",
    "reports-api:odds": "refused by role", "reports-api:reaudits": "refused by role",
    "reports:dashboard": "refused by role", "reports:request": "refused by role",
    "reports:progress": "refused by role", "reports:reaudit-start": "refused by role",
}
# Table URLs that are his by design: answered (as `answered_by_design`
# checks), never with another table's state, and never written.
BY_DESIGN = {
    ("api-table", "GET"): "the table's row of the table list, which stays readable",
    ("api-session-open", "POST"): "opening a free table is how a croupier takes "
    "one; table A's session is open, so this is a 409 and writes nothing",
    ("tablet:session", "GET"): "an open session of another croupier shows the "
    "relief's take-over page (its table and who runs it, as the table list "
    "does), nothing of its shoe, turn or coups",
    ("tablet:coup", "GET"): "sends him to the session page (the take-over "
    "offer); nothing of the shoe is shown",
    ("api-table-rules", "GET"): "the table's house rules, which the table list "
    "shows too (it stays readable)",
    ("api-tableau", "GET"): "a tableau version is the house's, not a table's: "
    "every table's croupier reads the grid his tablet guides him by",
    ("api-tableau-diff", "GET"): "two tableau versions compared: the house's data",
}
# Taking the table over as the relief: allowed to any croupier, logged, and
# it writes (it makes him croupier of table A), so the walk does not ask it.
# tests/audit/test_api.py and tests/tablet cover the relief itself.
RELIEF = {
    ("tablet:session-start", "POST"): "the tablet's relief take-over",
    ("audit-api-croupier", "POST"): "the API's relief: a croupier names himself",
}
# Path ids of objects that belong to no table: report jobs and re-audits.
# A croupier is refused those by role before any lookup
# (tests/audit/test_access.py); an id of nothing stands in.
NO_TABLE = "987654321"


def bodies(tables) -> dict:
    """Valid bodies, so that a write reaches the own-table check (an empty
    body would stop at validation, and hide a missing check behind a 400).
    An object-scoped POST answered 400 fails the walk: add its body here."""
    a = tables["session"].croupier_id
    coup = {"punter": BANKER_WINS[0], "banker": BANKER_WINS[1],
            "stakes": [{"seat": 2, "amount": "300.00"}]}
    return {
        "api-turn-open": {"seat": 2, "bank": "1000.00"},
        "api-shoe-open": {"decks": 6, "burned": 3},
        "api-coup-record": coup,
        "api-token-revoke": {"reason": "lost tablet"},
        "audit-api-flag-confirm": {"reason": "seen it"},
        "audit-api-flag-dismiss": {"reason": "not it"},
        "audit-api-cagnotte": {"counted": "30.00", "reason": "recount"},
        "tablet:shoe-open": {"decks": 6, "burned": 3},
        "tablet:turn-open": {"seat": 2, "bank": "1000.00"},
        "tablet:bank-take": {"seat": 2},
        # Naming croupier A: a croupier names only himself (the relief).
        "floor:session-open": {"croupier": a},
        "floor:croupier": {"croupier": a, "reason": "handing it back"},
        "floor:flag-confirm": {"reason": "seen it"},
        "floor:flag-dismiss": {"reason": "not it"},
        "floor:count": {"counted": "30.00", "reason": "recount"},
    }
DUMMY_ID = DUMMY["id"]  # what the walk puts where a path takes an object's id


def answered_by_design(key: str, path: str, response, tables) -> bool:
    code = response.status_code
    if key in ("api-table", "api-table-rules", "api-tableau"):
        return code == 200
    if key == "api-tableau-diff":
        return code == 400  # against what: it names the parameter it lacks
    if key == "api-session-open":
        return code == 409
    if key == "tablet:session":
        if path != f"/tablet/sessions/{tables['session'].pk}/":
            return refused(response)  # a closed session: no take-over, no page
        return code == 200 and "Take over from" in response.content.decode()
    if key == "tablet:coup":
        shoe = Shoe.objects.get(pk=int(path.strip("/").split("/")[-1]))
        return code == 302 and response.headers["Location"] == (
            f"/tablet/sessions/{shoe.session_id}/")
    return False


@pytest.fixture
def tables(db, manager, pitboss):
    """Table A (croupier A) with a closed, counted session and an open one
    with its shoe, banker turn, coups and a flag; table B (croupier B)."""
    croupier_a = make_user("croupier-a", "croupier")
    croupier_b = make_user("croupier-b", "croupier")
    table_a = services.table_create(user=manager, name="A", seats=9,
                                    minimum_banco=D("100.00"))
    table_b = services.table_create(user=manager, name="B", seats=9,
                                    minimum_banco=D("100.00"))

    def play(session):
        shoe = services.shoe_open(session=session, user=croupier_a, burned=5)
        turn = services.banker_turn_open(session=session, user=croupier_a, seat=1,
                                         bank=D("1000.00"))
        coups = [services.coup_record(
            shoe_id=shoe.pk, user=croupier_a, punter=cards[0], banker=cards[1],
            stakes=[services.StakeInput(amount=D("300"), seat=2)],
            device="tablet-a").coup for cards in (BANKER_WINS, FALSE_DRAW)]
        return shoe, turn, coups

    old = services.session_open(table=table_a, user=croupier_a)
    old_shoe, old_turn, _ = play(old)
    services.session_close(session=old, user=pitboss)
    count = cagnotte_count(session=old, counted=D("29.00"), user=pitboss)
    session = services.session_open(table=table_a, user=croupier_a)
    shoe, turn, coups = play(session)
    services.session_open(table=table_b, user=croupier_b)
    flags_sync()
    flag = Flag.objects.get(coup=coups[1])
    ids = {
        "tables": [table_a.pk],
        "sessions": [session.pk, old.pk],
        "shoes": [shoe.pk, old_shoe.pk],
        "turns": [turn.pk, old_turn.pk],
        "coups": [coups[1].pk],
        "flags": [flag.pk],
        "cagnotte": [count.pk],
        "users": [croupier_a.pk],
        "reports": [NO_TABLE], "jobs": [NO_TABLE], "reaudit": [NO_TABLE],
        "runs": [NO_TABLE],  # surveillance runs: the floor's, refused by role
        # tableau versions are the house's, not a table's: read by design
        "tableaux": [TableauVersion.objects.get(version="chemmy-standard-1").pk],
    }
    return {"b": croupier_b, "ids": ids, "session": session, "coups": coups,
            "shoe": shoe, "turn": turn}


def paths(url: Url, ids: dict) -> list[str]:
    """The URL with table A's ids in place of the walk's id of nothing: one
    path per id of the collection the id follows (/shoes/<id>/ -> shoes)."""
    parts = url.path.strip("/").split("/")
    at = parts.index(DUMMY_ID)
    collection = parts[at - 1] if at else None
    if collection not in ids:
        pytest.fail(f"{url.path}: which table object does an id after "
                    f"{collection!r}/ name? Add it to the `tables` fixture")
    return [url.path.replace(DUMMY_ID, str(pk)) for pk in ids[collection]]


def ledger() -> dict:
    return {m.__name__: list(m._base_manager.order_by("pk").values_list())
            for m in LEDGER}


def changes(before: dict, after: dict) -> list[str]:
    return [f"{name}: {len(before[name])} -> {len(after[name])} rows"
            + ("" if len(before[name]) != len(after[name]) else " (updated)")
            for name in before if before[name] != after[name]]


def refused(response) -> bool:
    if response.status_code in (403, 404):
        return True
    location = response.headers.get("Location", "")
    return response.status_code == 302 and (
        location.startswith(settings.LOGIN_URL) or "/login/" in location)


def ask(user, method: str, path: str, body: dict | None):
    # A client per request: a POST may sign it out (logout, the tablet's lock).
    client = Client(raise_request_exception=False)
    client.force_login(user)
    if method == "GET":
        return client.get(path)
    if path.startswith("/api/"):
        return client.generic(method, path, data=json.dumps(body or {}),
                              content_type="application/json")
    return client.post(path, body or {})  # a page: a form


def test_a_croupier_of_another_table_is_refused_everywhere(tables, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    b, ids, body = tables["b"], tables["ids"], bodies(tables)
    wrong, undecided, asked = [], [], 0
    for url in all_urls():
        key = url.key
        if key.startswith("admin:") or url.path is None:
            continue  # the admin site: staff only (tests/audit/test_access.py)
        rules = access.ROUTES.get(key)
        if rules is None:
            undecided.append(f"{key}: not in casino.access.ROUTES")
            continue
        scoped = DUMMY_ID in url.path.split("/") and key not in NOT_OBJECT_SCOPED
        if not scoped and key not in NOT_OBJECT_SCOPED:
            undecided.append(f"{key} ({url.path}): not object-scoped; list it "
                             "in NOT_OBJECT_SCOPED with the reason")
            continue
        for method in rules:
            if (key, method) in RELIEF:
                continue
            for path in paths(url, ids) if scoped else [url.path]:
                before = ledger()
                r = ask(b, method, path, body.get(key))
                asked += 1
                where = f"{method} {path} ({key})"
                if r.status_code >= 500:
                    wrong.append(f"{where}: {r.status_code}")
                written = changes(before, ledger())
                if written:
                    wrong.append(f"{where} wrote: {'; '.join(written)}")
                if not scoped:
                    continue
                if (key, method) in BY_DESIGN:
                    if not answered_by_design(key, path, r, tables):
                        wrong.append(f"{where}: {r.status_code}, not the answer "
                                     f"by design ({BY_DESIGN[key, method]})")
                elif not refused(r):
                    wrong.append(f"{where}: {r.status_code}, want 403/404")
    assert not undecided, "\n  ".join(["URLs nobody has decided:", *undecided])
    assert not wrong, "\n  ".join(["Croupier B at table A:", *wrong])
    assert asked > 60


def test_what_he_is_answered_by_design_shows_nothing_of_table_a(tables):
    b, session, shoe = tables["b"], tables["session"], tables["shoe"]
    client = Client()
    client.force_login(b)
    r = client.get(f"/tablet/sessions/{session.pk}/")
    page = r.content.decode()
    assert r.status_code == 200 and "Take over from croupier-a" in page
    assert f"/tablet/shoes/{shoe.pk}/" not in page
    r = client.get(f"/tablet/shoes/{shoe.pk}/")
    assert (r.status_code, r.headers["Location"]) == (
        302, f"/tablet/sessions/{session.pk}/")
    r = client.post(f"/api/v1/tables/{session.table_id}/sessions/")
    assert r.status_code == 409


def test_his_lists_show_his_table_only(tables):
    b, session, coups = tables["b"], tables["session"], tables["coups"]
    client = Client()
    client.force_login(b)
    rows = client.get("/api/v1/sessions/").json()["results"]
    assert rows and session.pk not in [row["id"] for row in rows]
    assert client.get(f"/api/v1/sessions/?table={session.table_id}").json()[
        "count"] == 0
    shown = [row["id"] for row in client.get("/api/v1/coups/").json()["results"]]
    assert not {c.pk for c in coups} & set(shown)


def test_the_refusals_name_why(tables):
    """API: JSON naming the session; pages: the tablet's 403 page."""
    b, shoe, turn = tables["b"], tables["shoe"], tables["turn"]
    client = Client()
    client.force_login(b)
    for path in (f"/api/v1/shoes/{shoe.pk}/", f"/api/v1/turns/{turn.pk}/",
                 f"/api/v1/sessions/{shoe.session_id}/"):
        r = client.get(path)
        assert r.status_code == 403 and r.json()["code"] == "forbidden", path
        assert "own table" in r.json()["session"][0]
    r = client.post(f"/tablet/shoes/{shoe.pk}/close/")
    assert r.status_code == 403 and "croupier of this session" in r.content.decode()
    r = client.get(f"/tablet/shoes/{shoe.pk}/recent/")
    assert r.status_code == 403 and "own table" in r.content.decode()


def test_his_own_table_still_works_from_the_tablet(tables):
    """The same check lets croupier A do all of it at his own table."""
    session, shoe, turn = tables["session"], tables["shoe"], tables["turn"]
    a = session.croupier
    client = Client()
    client.force_login(a)
    assert client.get(f"/tablet/shoes/{shoe.pk}/state/").status_code == 200
    assert client.get(f"/tablet/shoes/{shoe.pk}/recent/").status_code == 200
    assert client.get(f"/api/v1/turns/{turn.pk}/").status_code == 200
    assert client.post(f"/tablet/turns/{turn.pk}/pass/").status_code == 302
    turn.refresh_from_db()
    assert turn.end == BankerTurn.End.PASSED
    shoe.refresh_from_db()
    r = client.post(f"/tablet/shoes/{shoe.pk}/close/", {"cards_left": shoe.cards_left})
    assert r.status_code == 302
    r = client.post(f"/tablet/sessions/{session.pk}/shoes/",
                    {"decks": 6, "burned": 3})
    assert r.status_code == 302
    assert Shoe.objects.filter(session=session, closed_at__isnull=True).exists()
