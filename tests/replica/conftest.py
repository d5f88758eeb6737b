"""A real primary and streaming replica for the tests of this directory.

`replica_pair` (once per test session) starts two PostgreSQL clusters of its
own (bench/_pgcluster.py: initdb, ports 5441 and 5442 on 127.0.0.1, or
CASINO_REPLICA_PORTS=p,r): the primary with wal_level=replica and a
replication entry in pg_hba.conf, a database migrated with the project's
migrations by the owner and the runtime role granted (`db_roles`, as
tests/conftest.py does for the suite), then the replica made by
pg_basebackup -R, streaming from it. Both are removed at the end, their
directories with them.

`on_pair` points "default" at the primary and "reports" at the replica for
one test, both as the runtime role, and puts the suite's connection back
after. The tests here are not `django_db` tests: the replica only ever sees
what the primary committed, so nothing may stay in a test's transaction.
Each test makes its own tables and asks its reports for those only.

On a laptop without PostgreSQL's server binaries the tests skip; under CI a
pair that cannot start fails them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import APP_ROLE, _missing

ROOT = Path(__file__).resolve().parents[2]
DATABASE = "casino_replica"
PORTS = os.environ.get("CASINO_REPLICA_PORTS", "5441,5442")
# Throwaway clusters: durability buys nothing here, speed does.
FAST = {"fsync": "off"}


def _admin(port: int, dbname: str = "postgres"):
    import psycopg

    return psycopg.connect(host="127.0.0.1", port=port, user="postgres",
                           dbname=dbname, autocommit=True, connect_timeout=5)


@dataclass
class Pair:
    primary: object  # bench._pgcluster.Cluster
    replica: object

    def sql(self, where: str, query: str, params=()):
        """One statement as the superuser on "primary" or "replica"."""
        port = getattr(self, where).port
        with _admin(port, DATABASE) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else None

    def pause(self) -> None:
        self.sql("replica", "SELECT pg_wal_replay_pause()")
        deadline = time.monotonic() + 15
        while self.sql("replica", "SELECT pg_get_wal_replay_pause_state()")[0][0] \
                != "paused":
            if time.monotonic() > deadline:
                raise AssertionError("the replica's replay did not pause")
            time.sleep(0.05)

    def resume(self) -> None:
        self.sql("replica", "SELECT pg_wal_replay_resume()")

    def catch_up(self, timeout: float = 30) -> None:
        """Wait until the replica has replayed all the primary has written."""
        lsn = self.sql("primary", "SELECT pg_current_wal_insert_lsn()")[0][0]
        deadline = time.monotonic() + timeout
        while not self.sql("replica", "SELECT pg_last_wal_replay_lsn() >= %s",
                           [lsn])[0][0]:
            if time.monotonic() > deadline:
                raise AssertionError(f"the replica did not reach {lsn}")
            time.sleep(0.05)


def _manage(url: str, *args: str) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in {"REPORTS_DATABASE_URL", "MIGRATE_DATABASE_URL", "REDIS_URL"}}
    env["DATABASE_URL"] = url
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    if result.returncode:
        raise RuntimeError(f"manage.py {' '.join(args)} on {url} failed:\n"
                           f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}")


@pytest.fixture(scope="session")
def replica_pair():
    from django.db import connection

    if connection.vendor != "postgresql":
        _missing("PostgreSQL", "set DATABASE_URL=postgres://... to run this test")
    from bench._pgcluster import PGBIN, Cluster

    if not (PGBIN / "pg_basebackup").exists():
        _missing("PostgreSQL's server binaries",
                 f"{PGBIN}/pg_basebackup not found (set PGBIN)")
    primary_port, replica_port = (int(p) for p in PORTS.split(","))
    primary = Cluster(primary_port, database=DATABASE, prefix="casino-pgprimary-",
                      options={**Cluster.PRIMARY_OPTIONS, **FAST})
    replica = None
    try:
        primary.create()
        primary.allow_replication()
        with _admin(primary_port) as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
        _manage(primary.url, "migrate", "--noinput")
        _manage(primary.url, "db_roles", f"--app-role={APP_ROLE}")
        replica = primary.replica(replica_port, prefix="casino-pgreplica-",
                                  options={"hot_standby": "on", **FAST})
        pair = Pair(primary, replica)
        pair.catch_up()
        yield pair
    finally:
        if replica is not None:
            replica.remove()
        primary.remove()


@contextmanager
def pointing(primary_port: int, replica_port: int | None):
    """"default" on the primary (and "reports" on the replica) for the block;
    the suite's own connection settings are put back after."""
    from django.conf import settings
    from django.db import connections

    default = connections["default"]
    saved = dict(default.settings_dict)
    default.close()
    default.settings_dict.update(
        NAME=DATABASE, HOST="127.0.0.1", PORT=primary_port, USER="postgres",
        PASSWORD="",
        # the runtime role from the first statement (the suite's own signal
        # does the same when it is connected)
        OPTIONS={**saved["OPTIONS"], "options": f"-c role={APP_ROLE}"},
    )
    if replica_port is not None:
        settings.DATABASES["reports"] = {
            **default.settings_dict, "PORT": replica_port,
            "TEST": {**saved["TEST"], "MIRROR": "default"},
        }
    try:
        yield
    finally:
        if "reports" in settings.DATABASES:
            connections["reports"].close()
            del connections["reports"]
            settings.DATABASES.pop("reports")
        default.close()
        default.settings_dict.clear()
        default.settings_dict.update(saved)


@pytest.fixture
def on_pair(replica_pair, django_db_blocker, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    with django_db_blocker.unblock(), pointing(replica_pair.primary.port,
                                               replica_pair.replica.port):
        yield replica_pair


@pytest.fixture
def on_primary_only(replica_pair, django_db_blocker, settings, tmp_path):
    """The same primary, with no REPORTS_DATABASE_URL."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    with django_db_blocker.unblock(), pointing(replica_pair.primary.port, None):
        yield replica_pair
