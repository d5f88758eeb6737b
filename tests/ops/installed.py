"""A casino installed as docs/operations.md says, for the tests that run it
as separate processes (tests/ops/test_nginx.py, test_backup.py): its own
PostgreSQL database owned by an owner role that is not a superuser, migrated
as that owner (MIGRATE_DATABASE_URL), the runtime role made by `db_roles`,
DEBUG off with keys of its own, and every command a `manage.py` process.

Names carry TEST_ROLE_TAG and the xdist worker, so two checkouts or two
workers on one PostgreSQL server never meet. Roles and databases left by a
run that was killed are dropped first.
"""

from __future__ import annotations

import base64
import http.client
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from tests.conftest import _missing

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WHO = "_".join(p for p in (os.environ.get("TEST_ROLE_TAG", ""),
                           os.environ.get("PYTEST_XDIST_WORKER", "")) if p)
PASSWORD = "a-long-enough-secret-42"


def _ident(text: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", text.lower())[:60]


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        _missing("PostgreSQL", "set DATABASE_URL=postgres://... to install a casino")
    return url


class Casino:
    """One installation: database `<purpose>_<who>`, roles named after it."""

    def __init__(self, tmp: Path, purpose: str, *, database: str | None = None):
        self.tmp = tmp
        self.server = server_url()
        self.name = _ident(database or f"{purpose}_{WHO or 'suite'}")
        self.owner = _ident(f"{self.name}_owner")
        self.app = _ident(f"{self.name}_app")
        self.anchors = tmp / "anchors"
        self.media = tmp / "media"
        self.keys = {
            "SECRET_KEY": secrets.token_hex(32),
            "TRAIL_KEY": secrets.token_hex(32),
            "TRAIL_SIGNING_KEY": base64.b64encode(os.urandom(32)).decode(),
            "METRICS_TOKEN": secrets.token_hex(16),
        }
        self.extra: dict[str, str] = {}

    def url(self, role: str, database: str | None = None) -> str:
        parts = urlsplit(self.server)
        netloc = f"{role}@{parts.hostname}:{parts.port or 5432}"
        return urlunsplit(parts._replace(netloc=netloc,
                                         path="/" + (database or self.name)))

    def admin(self):
        import psycopg

        return psycopg.connect(urlunsplit(urlsplit(self.server)._replace(
            path="/postgres")), autocommit=True)

    # -- the environment, as deploy/casino.env sets it --------------------------

    def env(self, *, owner: bool = False, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DJANGO_", "PYTEST_", "CASINO_"))
               and k not in {"REDIS_URL", "MIGRATE_DATABASE_URL",
                             "REPORTS_DATABASE_URL", "DEBUG"}}
        env.update(self.keys)
        env.update(
            DJANGO_SETTINGS_MODULE="casino.settings",
            DEBUG="false",
            DATABASE_URL=self.url(self.app),
            ALLOWED_HOSTS="127.0.0.1,localhost",
            TRAIL_ANCHOR_DIR=str(self.anchors),
            MEDIA_ROOT=str(self.media),
            LOG_LEVEL="WARNING",
            CASINO_WARM="0",
        )
        if owner:
            env["MIGRATE_DATABASE_URL"] = self.url(self.owner)
        env.update(self.extra)
        env.update(extra)
        return env

    def manage(self, *args: str, owner: bool = False, check: bool = True,
               timeout: float = 300, **extra: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True,
            text=True, timeout=timeout, env=self.env(owner=owner, **extra),
            stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc

    # -- install and remove ------------------------------------------------------

    def drop(self, database: str | None = None) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database or self.name}" '
                         "WITH (FORCE)")
            if database is None:
                for role in (self.app, self.owner):
                    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                          [role]).fetchone()
                    if exists:
                        conn.execute(f'DROP OWNED BY "{role}"')
                        conn.execute(f'DROP ROLE "{role}"')

    def create(self) -> None:
        """The DBA's part: an owner role (CREATEROLE, not a superuser) and
        its database."""
        self.drop()
        with self.admin() as conn:
            conn.execute(f'CREATE ROLE "{self.owner}" LOGIN CREATEROLE')
            conn.execute(f'CREATE DATABASE "{self.name}" OWNER "{self.owner}"')

    def install(self, *users: tuple[str, str]) -> None:
        """docs/operations.md, "Install": migrate and db_roles as the owner,
        then the first people with `manage.py user add`."""
        self.create()
        self.anchors.mkdir(exist_ok=True)
        self.media.mkdir(exist_ok=True)
        self.manage("migrate", "--noinput", owner=True)
        self.manage("db_roles", "--app-role", self.app, owner=True)
        for name, role in users:
            self.add_user(name, role)

    def add_user(self, name: str, role: str) -> None:
        secret = self.tmp / f"pw-{name}"
        secret.write_text(PASSWORD + "\n")
        self.manage("user", "add", name, "--role", role, "--password-file",
                    str(secret))


def start(cmd: list[str], env: dict, log: Path, *, ready: str) -> subprocess.Popen:
    """A server in its own process group; waits until GET `ready` (a plain
    http://host:port/path) answers, or fails with its log."""
    out = open(log, "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)
    host_port, _, path = ready.removeprefix("http://").partition("/")
    host, _, port = host_port.partition(":")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{cmd[0]} exited {proc.returncode}:\n"
                                 f"{log.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection(host, int(port), timeout=5)
            conn.request("GET", "/" + path)
            conn.getresponse().read()
            conn.close()
            return proc
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise AssertionError(f"{cmd} did not answer within 60 s:\n{log.read_text()}")


def stop(proc: subprocess.Popen) -> None:
    """Its process group, by its pid, never by a name."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
