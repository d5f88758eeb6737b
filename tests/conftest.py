"""Plain fixtures: one user per role, a table, an open shoe with a banker turn.

Tests marked `postgres`, `redis` or `browser` skip with a reason on a laptop
that lacks the service, and FAIL under CI (CI=true), where the service must be
there.
"""

from __future__ import annotations

import os
import shutil
from decimal import Decimal

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Django's live_server runs in a thread beside Playwright's sync loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _missing(what: str, reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{what} is required under CI: {reason}", pytrace=False)
    pytest.skip(f"{what} not available: {reason}")


@pytest.fixture(autouse=True)
def _service_markers(request):
    if request.node.get_closest_marker("postgres"):
        from django.db import connection

        if connection.vendor != "postgresql":
            _missing("PostgreSQL", "set DATABASE_URL=postgres://... to run this test")
    if request.node.get_closest_marker("browser") and not os.path.exists(CHROMIUM):
        _missing("Chromium", f"{CHROMIUM} not found (apt-get install chromium)")
    if request.node.get_closest_marker("poppler") and not shutil.which("pdftotext"):
        _missing("poppler-utils", "pdftotext not found (apt-get install poppler-utils)")
    if request.node.get_closest_marker("redis"):
        from django.conf import settings

        if not settings.REDIS_URL:
            _missing("Redis", "set REDIS_URL=redis://... to run this test")


# On PostgreSQL the app under test connects as the runtime role that
# `db_roles` makes (casino/dbroles.py): it owns nothing and may not TRUNCATE,
# UPDATE an append-only row or touch a trigger, so every test proves the app
# works with only those privileges. The test database itself is created and
# migrated by DATABASE_URL's user (the owner).
# One role per worker when the suite runs in parallel (roles are the
# cluster's, databases the worker's own); TEST_ROLE_TAG keeps two checkouts
# that test against one cluster at once apart (e.g. two git worktrees).
APP_ROLE = "casino_app_test" + "".join(
    f"_{part}" for part in (os.environ.get("TEST_ROLE_TAG", ""),
                            os.environ.get("PYTEST_XDIST_WORKER", ""))
    if part)


def _as_app_role(sender, connection, **kwargs):
    if connection.vendor == "postgresql":
        with connection.connection.cursor() as cursor:
            cursor.execute(f"SET ROLE {APP_ROLE}")


def _flush_as_owner(original):
    """Django's flush between transactional tests TRUNCATEs every table: the
    owner's work, past the append-only tables' TRUNCATE triggers (a
    superuser's replication mode skips triggers)."""

    def flush(self, sql_list):
        with self.connection.cursor() as cursor:
            cursor.execute("RESET ROLE")
            cursor.execute("SET session_replication_role = replica")
        try:
            return original(self, sql_list)
        finally:
            with self.connection.cursor() as cursor:
                cursor.execute("SET session_replication_role = origin")
                cursor.execute(f"SET ROLE {APP_ROLE}")

    return flush


# What migrate left in the test database, read before any test runs (a
# transactional test's flush empties it, and in a parallel run one may come
# first in a worker): tests/insider/test_anchors.py.
FRESH_INSTALL: dict = {}


def _fresh_install() -> None:
    from casino.models import ChangeLog

    head = ChangeLog.objects.order_by("-id").first()
    FRESH_INSTALL["head_action"] = head.action if head else None
    FRESH_INSTALL["rows"] = ChangeLog.objects.count()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    from django.core.management import call_command
    from django.db import connection, connections
    from django.db.backends.signals import connection_created

    with django_db_blocker.unblock():
        _fresh_install()
    if connection.vendor != "postgresql":
        yield
        return
    import io

    from django.db.backends.postgresql.operations import DatabaseOperations

    with django_db_blocker.unblock():
        call_command("db_roles", app_role=APP_ROLE, stdout=io.StringIO())
        for c in connections.all():
            c.close()
    original = DatabaseOperations.execute_sql_flush
    DatabaseOperations.execute_sql_flush = _flush_as_owner(original)
    connection_created.connect(_as_app_role)
    try:
        yield
    finally:
        connection_created.disconnect(_as_app_role)
        DatabaseOperations.execute_sql_flush = original
        with django_db_blocker.unblock():
            for c in connections.all():
                c.close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, never a downloaded browser (RECIPES.md). Checked
    here, before pytest-playwright launches it: without Chromium a browser
    test skips naming it (a failure under CI) instead of erroring."""
    if not os.path.exists(CHROMIUM):
        _missing("Chromium", f"{CHROMIUM} not found (apt-get install chromium)")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture
def screenshot(page):
    """screenshot("name") keeps a PNG of the page under var/screenshots/ —
    the artifact people look at to see what croupiers and pit bosses see."""
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "var" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)

    def _shot(name: str):
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return _shot


def _uses_db(request) -> bool:
    """Whether the test uses the database (by its marker, or through a
    fixture); if so, its database fixture is set up (transactional or not)."""
    marker = request.node.get_closest_marker("django_db")
    names = set(request.fixturenames)
    transactional = "transactional_db" in names or "live_server" in names or (
        marker is not None
        and (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    )
    if transactional:
        request.getfixturevalue("transactional_db")
    elif "db" in names or marker is not None:
        request.getfixturevalue("db")
    else:
        return False
    return True


@pytest.fixture(autouse=True)
def _trail_holds(request):
    """After every test that writes, the trail must still verify: chain, keys
    and every ledger row bound to the log row that wrote it. A service that
    changes a ledger row without binding it to its log row fails here, in
    whatever test uses it. Tests that tamper on purpose are marked `tampers`."""
    if not _uses_db(request):
        yield
        return
    yield
    if request.node.get_closest_marker("tampers"):
        return
    from casino.trail import trail_verify

    check = trail_verify(anchors=False)
    assert check.ok, f"the trail does not verify after this test: {check.problem}"


@pytest.fixture(autouse=True)
def _anchor_dir(tmp_path):
    """Each test its own anchors (casino/anchors.py): an anchor names a row of
    one database, and verify_trail reads every anchor on file."""
    from django.conf import settings

    saved = settings.TRAIL_ANCHOR_DIR
    settings.TRAIL_ANCHOR_DIR = tmp_path / "anchors"
    yield
    settings.TRAIL_ANCHOR_DIR = saved


@pytest.fixture(autouse=True)
def _clear_cache():
    # Throttle counters live in the cache; tests must not leak them.
    from django.core.cache import cache

    from tables.services.facts import tableau_by_id, tableau_for

    cache.clear()
    # Parsed tableaux are cached by id; a rolled-back SQLite id can come back.
    tableau_by_id.cache_clear()
    tableau_for.cache_clear()
    yield


@pytest.fixture(autouse=True)
def _no_policy_violation(request):
    """Every browser test is also a test of the Content-Security-Policy
    (casino/settings.py): a script, style or request the policy blocked is
    a console error naming it, and fails the test."""
    if "page" not in request.fixturenames:
        yield
        return
    page = request.getfixturevalue("page")
    blocked = []

    def seen(message) -> None:
        if "Content Security Policy" in message.text:
            blocked.append(message.text)

    page.on("console", seen)
    request.node.csp_blocked = blocked  # (a test that blocks on purpose clears it)
    yield
    assert not blocked, "blocked by the Content-Security-Policy:\n" + "\n".join(
        blocked)


@pytest.fixture(autouse=True)
def _migration_rows(request):
    """Put back what the data migrations wrote (roles, the two tableaux): a
    transactional test's flush empties every table, and the browser tests are
    transactional (serialized_rollback cannot help: it would UPDATE the
    append-only tableau rows, which PostgreSQL refuses). For every test that
    uses the database, by its marker or through a fixture: in a parallel run
    a worker's earlier file may have been a transactional one."""
    if not _uses_db(request):
        return
    import importlib

    from django.contrib.auth.models import Group

    from casino.roles import ROLES
    from tables.models import TableauVersion

    for name in ROLES:
        Group.objects.get_or_create(name=name)
    seeds = importlib.import_module("tables.migrations.0002_seed_tableaux")
    for version, rows in (
        ("chemmy-standard-1", seeds.CHEMMY),
        ("punto-banco-1", seeds.PUNTO_BANCO),
    ):
        if not TableauVersion.objects.filter(version=version).exists():
            seed_tableau(version, rows)


def seed_tableau(version: str, rows: dict, **extra):
    """A tableau version written as the app writes one (bound to the trail),
    for fixtures that need a variant without the manager's service."""
    from django.db import transaction

    from casino.changelog import log_action
    from tables.models import TableauVersion

    with transaction.atomic():
        row = TableauVersion.objects.create(version=version, rows=rows, **extra)
        log_action(action="tables.tableau.created", device="test", obj=row,
                   new={"version": version})
    return row


def app_update(obj, **fields):
    """A change the app makes to a row it updates, as its services make one
    (checked against the row's sealed state, then bound to a log row): for
    tests that set up a state no service reaches (a table taken out of
    play)."""
    from django.db import transaction

    from casino.changelog import log_action
    from casino.continuity import seal_check

    with transaction.atomic():
        row = type(obj).objects.select_for_update(no_key=True).get(pk=obj.pk)
        seal_check(row)
        for name, value in fields.items():
            setattr(row, name, value)
        row.save(update_fields=list(fields))
        log_action(action="test.changed", device="test", obj=row, new=fields)
    return row


def make_user(username: str, role: str | None, **extra):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(
        username=username, password="pw-" + username, **extra
    )
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def croupier(db):
    return make_user("croupier1", "croupier")


@pytest.fixture
def croupier2(db):
    return make_user("croupier2", "croupier")


@pytest.fixture
def pitboss(db):
    return make_user("pitboss1", "pitboss")


@pytest.fixture
def manager(db):
    return make_user("manager1", "manager")


@pytest.fixture
def auditor(db):
    return make_user("auditor1", "auditor")


@pytest.fixture
def outsider(db):
    return make_user("outsider", None)


@pytest.fixture
def api():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def as_user(api):
    """as_user(user) -> an APIClient authenticated as that user."""

    def _as(user):
        api.force_authenticate(user=user)
        return api

    return _as


@pytest.fixture
def table(db, manager):
    from tables.services import table_create

    return table_create(
        user=manager, name="Table 1", seats=9, minimum_banco=Decimal("100.00")
    )


@pytest.fixture
def session(table, croupier):
    from tables.services import session_open

    return session_open(table=table, user=croupier)


@pytest.fixture
def shoe(session, croupier):
    from tables.services import shoe_open

    return shoe_open(session=session, user=croupier, burned=5)


@pytest.fixture
def turn(session, shoe, croupier):
    """A banker at seat 1 with a bank of 1,000."""
    from tables.services import banker_turn_open

    return banker_turn_open(
        session=session, user=croupier, seat=1, bank=Decimal("1000.00")
    )


# The long statistical proofs (marker `proof`: a minute or more of seeded
# runs each) belong to CI and `make calibrate`: a laptop's default run leaves
# them out, saying so; CI=true (or PROOFS=1) runs them.
RUN_PROOFS = IN_CI or os.environ.get("PROOFS", "").lower() in {"1", "true", "yes"}


def pytest_collection_modifyitems(config, items):
    if not RUN_PROOFS:
        left_out = pytest.mark.skip(
            reason="a long statistical proof: run under CI (CI=true) and by "
                   "`make calibrate`; PROOFS=1 runs it here")
        for item in items:
            if item.get_closest_marker("proof"):
                item.add_marker(left_out)


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("django"):
        return  # tests/chemmy can run with -p no:django: no settings to touch
    from django.conf import settings

    # The suite reads "default" only: a REPORTS_DATABASE_URL in the
    # environment is set aside (its test mirror would be a second connection,
    # blind to a test's open transaction). tests/replica/ starts a real
    # primary and streaming replica of its own.
    settings.DATABASES.pop("reports", None)

    # A page brings the flags up to date at every read (production: at most
    # every few seconds per process; tests/audit/test_floor_scale.py).
    settings.FLAGS_PAGE_SYNC_SECONDS = 0

    # Real hashing costs ~0.3 s a user; the tests are about the casino, not PBKDF2.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    # The sign-in lockout (axes) refuses authenticate() without a request, and
    # Django's test Client.login() passes none: give it a blank one (as axes'
    # docs advise), so client.login(...) works and counts like a real sign-in.
    from django.http import HttpRequest
    from django.test import Client

    plain_login = Client.login

    def login(self, **credentials):
        credentials.setdefault("request", HttpRequest())
        return plain_login(self, **credentials)

    Client.login = login
