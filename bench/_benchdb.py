"""Shared set-up for the PostgreSQL benchmarks: a fresh database, migrated,
and users with a role. Imported by bench_http.py, bench_simulate.py and
profile_coup.py; not a benchmark itself.

The database is dropped and re-created on every run, so its name must say
"bench": a DATABASE_URL that points at another database (the test suite's,
say) is not dropped; its server is used with the name ``<name>_bench``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/bench_casino"
OUT_DIR = ROOT / "var" / "bench"

# The base64 of a 32-byte Ed25519 seed that signs nothing outside a bench.
BENCH_SIGNING_SEED = base64.b64encode(
    hashlib.sha256(b"bench-only-signing").digest()).decode()


def bench_url() -> str:
    url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
    url = url or DEFAULT_URL
    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        sys.exit(f"bench: needs PostgreSQL, got {parts.scheme}:// in DATABASE_URL")
    name = parts.path.lstrip("/")
    if "bench" not in name:
        parts = parts._replace(path=f"/{name}_bench")
    return urlunsplit(parts)


def configure(*, debug: bool = False) -> str:
    """Environment for Django (this process and any child): call before
    django.setup(). Returns the database URL."""
    url = bench_url()
    os.environ.update(
        DJANGO_SETTINGS_MODULE="casino.settings",
        DATABASE_URL=url,
        DEBUG="1" if debug else "0",
        SECRET_KEY=os.environ.get("SECRET_KEY") or "bench-only-" + "x" * 40,
        TRAIL_KEY=os.environ.get("TRAIL_KEY") or "bench-only-trail-" + "k" * 40,
        # DEBUG off needs a signing key (casino/settings.py): a bench-only seed
        TRAIL_SIGNING_KEY=os.environ.get("TRAIL_SIGNING_KEY") or BENCH_SIGNING_SEED,
        ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        SECURE_SSL_REDIRECT="0",  # plain HTTP on loopback
        CONN_MAX_AGE="600",
        BENCH_BARE_ENDPOINT="1",
        LOG_LEVEL="WARNING",
        # One croupier's token posts every coup from loopback: the API's rate
        # limits (casino/throttles.py) must not shape the figures.
        API_THROTTLING="0",
        # This process fills databases with statements far past a request's
        # limit (casino/dbsession.py); gunicorn is started as the web.
        CASINO_PROCESS="worker",
    )
    os.environ.pop("REDIS_URL", None)  # Celery eager, nothing queued
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return url


def recreate_database(url: str) -> None:
    """DROP and CREATE the bench database, then migrate it (quietly)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def make_user(username: str, role: str):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create_user(username, password=username * 2)
    user.groups.add(Group.objects.get(name=role))
    return user


def pg_settings() -> dict:
    """A few server settings worth printing next to the figures."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('synchronous_commit', 'fsync', 'shared_buffers', 'max_connections')"
        )
        return dict(cur.fetchall())


def open_table(user, name: str, *, burned: int = 0):
    """A table with an open session, shoe (6 decks) and banker turn (seat 1,
    bank 100), through the services. Returns (table, session, shoe, turn)."""
    from decimal import Decimal

    from tables import services

    table = services.table_create(user=user, name=name, device="bench")
    session = services.session_open(table=table, user=user, device="bench")
    shoe = services.shoe_open(session=session, user=user, burned=burned, device="bench")
    turn = services.banker_turn_open(
        session=session, user=user, seat=1, bank=Decimal("100.00"), device="bench"
    )
    return table, session, shoe, turn


def machine() -> dict:
    """The figures depend on what else ran and on the code: note both."""
    import platform
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()

    try:  # share of time some runnable task waited for a CPU (Linux PSI)
        with open("/proc/pressure/cpu") as f:
            pressure = float(f.readline().split()[2].split("=")[1])
    except (OSError, IndexError, ValueError):
        pressure = None
    return {
        "cpus": os.cpu_count(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "cpu_pressure_avg60_pct": pressure,
        "python": platform.python_version(),
        "git_head": git("rev-parse", "--short", "HEAD"),
        "app_dirty": bool(git("status", "--porcelain", "--", "tables", "casino")),
    }
