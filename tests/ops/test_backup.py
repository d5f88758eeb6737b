"""docs/operations.md's runbooks, run (issue 36): a backup dumped by the
owner and restored into a new database, then `verify_trail` and
`verify_ledger` pass and the app records the next coup; the same backup
restored after the casino played on is seen by `verify_trail` (its anchors
name rows the backup does not hold); and an upgrade from the previous
release's code and schema, forward with `migrate` then `db_roles`.

Every step is a separate process with DEBUG off, as an operator runs it.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import _missing
from tests.ops.installed import ROOT, Casino

pytestmark = pytest.mark.postgres

# The previous release: the lead's last merge of the round before (issue 36's
# round). Move it forward at each release; the upgrade test then runs that
# release's code and migrations, then this checkout's.
PREVIOUS_RELEASE = "90622bf"

NEXT_COUP = """
from decimal import Decimal
from django.contrib.auth.models import User
from tables import services
from tables.models import Table
from tables.services.ledger import StakeInput
croupier = User.objects.get(username="croupier")
table = Table.objects.get(name="Salon Rouge 2")
session = services.session_open(table=table, user=croupier, device="runbook")
shoe = services.shoe_open(session=session, user=croupier, burned=3, device="runbook")
services.banker_turn_open(session=session, user=croupier, seat=1,
                          bank=Decimal("1000.00"), device="runbook")
result = services.coup_record(
    shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
    stakes=[StakeInput(amount=Decimal("300.00"), seat=2)], device="runbook")
print("coup", result.coup.pk, result.coup.outcome, result.coup.commission)
"""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        _missing("PostgreSQL's client programs", f"{name} not found")
    return path


def dump(casino: Casino, into: Path) -> None:
    """docs/operations.md, "Backup": the owner dumps (custom format)."""
    subprocess.run([_tool("pg_dump"), "--format=custom", "--file", str(into),
                    casino.url(casino.owner)], check=True, capture_output=True)


def restore(casino: Casino, archive: Path, database: str) -> None:
    """docs/operations.md, "Restore": a new database owned by the owner, the
    archive restored as the owner, then `db_roles`."""
    casino.drop(database)
    with casino.admin() as conn:
        conn.execute(f'CREATE DATABASE "{database}" OWNER "{casino.owner}"')
    proc = subprocess.run(
        [_tool("pg_restore"), "--exit-on-error", "--dbname",
         casino.url(casino.owner, database), str(archive)],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def checks_pass(casino: Casino, **env: str) -> None:
    trail = casino.manage("verify_trail", check=False, **env)
    assert trail.returncode == 0, trail.stdout + trail.stderr
    ledger = casino.manage("verify_ledger", check=False, **env)
    assert ledger.returncode == 0, ledger.stdout + ledger.stderr


def next_coup(casino: Casino, **env: str) -> str:
    out = casino.manage("shell", "-c", NEXT_COUP, **env).stdout
    assert "coup " in out and " banker 15.00" in out, out
    return out


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A casino installed and played (`manage.py demo`: users, tables, a
    shoe of coups, an anchor), and its backup: the owner's dump with a copy
    of the anchors taken with it."""
    tmp = tmp_path_factory.mktemp("backup")
    casino = Casino(tmp, "backup")
    casino.install()
    casino.manage("demo")
    archive = tmp / "casino.dump"
    dump(casino, archive)
    saved = tmp / "saved-anchors"
    shutil.copytree(casino.anchors, saved)
    yield casino, archive, saved
    for suffix in ("_r", "_late"):
        casino.drop(casino.name + suffix)
    casino.drop()


def test_backup_then_restore_into_a_new_database(played):
    casino, archive, saved = played
    restored = casino.name + "_r"
    restore(casino, archive, restored)
    there = {"DATABASE_URL": casino.url(casino.app, restored),
             "TRAIL_ANCHOR_DIR": str(saved)}
    casino.manage("db_roles", "--app-role", casino.app, owner=True,
                  MIGRATE_DATABASE_URL=casino.url(casino.owner, restored), **there)
    checks_pass(casino, **there)
    next_coup(casino, **there)
    checks_pass(casino, **there)


def test_a_restore_older_than_the_anchors_is_seen(played):
    """The casino plays on after the backup and beat anchors it; the backup
    restored with today's anchors: verify_trail names the rows it lost."""
    casino, archive, _ = played
    next_coup(casino)
    casino.manage("trail_anchor")
    late = casino.name + "_late"
    restore(casino, archive, late)
    trail = casino.manage("verify_trail", check=False,
                          DATABASE_URL=casino.url(casino.app, late))
    assert trail.returncode == 1, trail.stdout + trail.stderr
    assert "rows were removed from the trail" in trail.stderr, trail.stderr


@pytest.fixture
def casino(tmp_path):
    casino = Casino(tmp_path, "upgrade")
    yield casino
    casino.drop()


def _previous_release(into: Path) -> Path:
    """The previous release's files, from git (no checkout is touched)."""
    git = subprocess.run(["git", "archive", "--format=tar", PREVIOUS_RELEASE],
                         cwd=ROOT, capture_output=True)
    if git.returncode != 0:
        _missing("the previous release", f"git archive {PREVIOUS_RELEASE}: "
                 f"{git.stderr.decode()[:200]} (a shallow clone?)")
    with tarfile.open(fileobj=io.BytesIO(git.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def test_upgrade_from_the_previous_release(casino, tmp_path):
    """docs/operations.md, "Upgrade": the previous release installed and
    played (its own code and migrations); its processes stopped; this
    release's `migrate` as the owner, then `db_roles`; the checks pass and
    the next coup is recorded."""
    old = _previous_release(tmp_path / "previous")
    casino.create()
    casino.anchors.mkdir()
    casino.media.mkdir()

    def old_run(*args: str, owner: bool = False) -> None:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=old,
            env=casino.env(owner=owner), capture_output=True, text=True,
            timeout=600)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])

    old_run("migrate", "--noinput", owner=True)
    old_run("db_roles", "--app-role", casino.app, owner=True)
    old_run("demo")
    before = casino.manage("showmigrations", "--plan", owner=True).stdout
    assert "[ ]" in before, "the previous release has no migration this one adds"

    casino.manage("migrate", "--noinput", owner=True)
    casino.manage("db_roles", "--app-role", casino.app, owner=True)
    assert "[ ]" not in casino.manage("showmigrations", "--plan").stdout
    checks_pass(casino)
    next_coup(casino)
    checks_pass(casino)
