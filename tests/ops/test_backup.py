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
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections import Counter
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


# The previous release's API records a coup (its own views, in-process through
# DRF's test client, as a croupier): the session, shoe and bank opened through
# its services.
OLD_API_COUP = """
from decimal import Decimal
from django.contrib.auth.models import User
from rest_framework.test import APIClient
from tables import services
from tables.models import Table
croupier = User.objects.get(username="croupier")
table = Table.objects.get(name="Salon Privé")
session = services.session_open(table=table, user=croupier, device="upgrade")
shoe = services.shoe_open(session=session, user=croupier, burned=3, device="upgrade")
services.banker_turn_open(session=session, user=croupier, seat=1,
                          bank=Decimal("5000.00"), device="upgrade")
api = APIClient(SERVER_NAME="localhost")
api.force_authenticate(user=croupier)
r = api.post(f"/api/v1/shoes/{shoe.pk}/coups/", {
    "punter": ["2H", "3D"], "banker": ["8C", "TS"],
    "stakes": [{"seat": 2, "amount": "300.00"}]}, format="json", secure=True)
print("api", r.status_code, r.content[:1000])
"""

# Beat's own schedule shortened as tests/insider/test_beat_trail.py does: an
# anchor every 3 s (the checkpoint tick is half a second already).
SERVICES = {"TRAIL_ANCHOR_MINUTES": "0.05", "TRAIL_TSA_RETRY_MINUTES": "0.05",
            "CELERY_TASK_ALWAYS_EAGER": "0", "CONN_MAX_AGE": "0",
            "LOG_LEVEL": "INFO"}
SENT = re.compile(r"Sending due task \S+ \(([\w.]+)\)")
RECEIVED = re.compile(r"Task ([\w.]+)\[[0-9a-f-]+\] received")
SUCCEEDED = re.compile(r"Task ([\w.]+)\[[0-9a-f-]+\] succeeded[^\n]*")


def _broker() -> str:
    """This test process's own Redis database (settings.REDIS_URL, one per
    xdist worker), its Celery queue emptied (as tests/reports/conftest.py's
    start_worker does): the queue the two releases share."""
    from django.conf import settings

    if not settings.REDIS_URL:
        _missing("Redis", "set REDIS_URL=redis://... to run a worker and beat")
    import redis

    redis.Redis.from_url(settings.REDIS_URL).delete(
        "celery", "unacked", "unacked_index")
    return settings.REDIS_URL


class Service:
    """`python -m celery -A casino ...` run from a tree (so that tree's
    code, whatever is installed), in its own session, logging to a file."""

    def __init__(self, tree: Path, env: dict, log: Path, *args: str):
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "casino", *args,
                 "--loglevel=INFO"], cwd=tree, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def fail(self, why: str):
        pytest.fail(f"{why}\n{self.log.name}:\n{self.text()[-4000:]}")

    def tasks(self) -> str:
        """The task names the worker's banner lists (its code's tasks)."""
        return self.text().partition("[tasks]")[2].partition("\n\n")[0]

    def count(self, name: str) -> int:
        return sum(1 for task in SUCCEEDED.findall(self.text()) if task == name)

    def wait_for(self, name: str, times: int = 1, made: bool = False,
                 seconds: float = 60) -> str:
        """The line of the `times`-th success of task `name` (with `made`,
        the first checkpoint that made one)."""
        deadline = time.monotonic() + seconds
        while True:
            lines = [m.group(0) for m in SUCCEEDED.finditer(self.text())
                     if m.group(1) == name
                     and not (made and "'checkpoint': None" in m.group(0))]
            if len(lines) >= times:
                return lines[times - 1]
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.fail(f"{name} did not succeed {times} time(s)")
            time.sleep(0.2)

    def terminate(self, seconds: float = 60) -> int:
        """SIGTERM by its pid (a warm shutdown), and wait for it to exit."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
            self.fail(f"did not exit within {seconds} s of SIGTERM")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def services_stopped():
    """Whatever a failing test left running, killed by its pid."""
    started: list[Service] = []
    yield started
    for service in started:
        service.kill()


def _services(tree: Path, env: dict, logs: Path, started: list) -> tuple:
    """A worker and beat from `tree`; returns once the worker is ready."""
    logs.mkdir()
    worker = Service(tree, env, logs / "worker.log", "worker", "--concurrency=1",
                     "--without-gossip", "--without-mingle", "--without-heartbeat",
                     "-n", f"upgrade-{os.getpid()}-{logs.name}@%h")
    started.append(worker)
    beat = Service(tree, env, logs / "beat.log", "beat", "--pidfile=")
    started.append(beat)
    deadline = time.monotonic() + 60
    while "ready." not in worker.text():
        if worker.proc.poll() is not None or time.monotonic() > deadline:
            worker.fail("the worker did not start")
        if beat.proc.poll() is not None:
            beat.fail("beat did not start")
        time.sleep(0.2)
    return worker, beat


def _stop_in_order(beat: Service, worker: Service, broker: str) -> None:
    """docs/operations.md, "Upgrade": beat stopped first (no task sent
    half-way), then the worker once beat has exited (a warm shutdown: the
    tasks at hand finish). Every task beat sent was received and executed by
    the worker, and the queue holds nothing for the next release."""
    import redis

    for service in (beat, worker):
        if service.proc.poll() is not None:
            service.fail("exited before its stop")
    if beat.terminate() != 0:
        beat.fail(f"beat exited {beat.proc.returncode} on SIGTERM")
    # beat has exited (terminate waited for it); the worker still runs
    if worker.proc.poll() is not None:
        worker.fail("the worker exited before beat's stop was over")
    sent = Counter(SENT.findall(beat.text()))
    if not sent:
        beat.fail("beat sent nothing")
    if worker.terminate() != 0:
        worker.fail(f"the worker exited {worker.proc.returncode} on SIGTERM")
    text = worker.text()
    if "Warm shutdown" not in text:
        worker.fail("not a warm shutdown")
    for done in (RECEIVED, SUCCEEDED):
        if Counter(done.findall(text)) != sent:
            worker.fail(f"beat sent {dict(sent)}; the worker: "
                        f"{dict(Counter(done.findall(text)))} ({done.pattern})")
    queue = redis.Redis.from_url(broker)
    assert queue.llen("celery") == 0 and queue.hlen("unacked") == 0, (
        queue.llen("celery"), queue.hlen("unacked"))


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


@pytest.mark.redis
def test_upgrade_from_the_previous_release(casino, tmp_path, services_stopped):
    """docs/operations.md, "Upgrade": the previous release installed and
    played (its own code and migrations, `manage.py demo`), its worker and
    beat running (its own code) and anchoring, its API recording a coup;
    beat stopped, then the worker (a warm shutdown: every task beat sent
    was executed, nothing left on the queue); this release's `migrate` as
    the owner, then `db_roles`; this release's worker and beat started,
    anchoring and making a checkpoint of the trail the previous release
    left; stopped in the same order; the checks pass and the next coup is
    recorded."""
    broker = _broker()
    old = _previous_release(tmp_path / "previous")
    casino.create()
    casino.anchors.mkdir()
    casino.media.mkdir()

    def old_run(*args: str, owner: bool = False) -> str:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=old,
            env=casino.env(owner=owner), capture_output=True, text=True,
            timeout=600)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
        return proc.stdout

    old_run("migrate", "--noinput", owner=True)
    old_run("db_roles", "--app-role", casino.app, owner=True)
    old_run("demo")
    before = casino.manage("showmigrations", "--plan", owner=True).stdout
    assert "[ ]" in before, "the previous release has no migration this one adds"

    # the previous release runs: its worker and beat, its API
    services = casino.env(REDIS_URL=broker, **SERVICES)
    worker, beat = _services(old, services, tmp_path / "old", services_stopped)
    worker.wait_for("trail.anchor")
    out = old_run("shell", "-c", OLD_API_COUP)
    assert "api 201" in out, out
    worker.wait_for("trail.anchor", times=worker.count("trail.anchor") + 1)
    assert "trail.checkpoint" not in worker.tasks(), "the previous release's code"
    _stop_in_order(beat, worker, broker)

    casino.manage("migrate", "--noinput", owner=True)
    casino.manage("db_roles", "--app-role", casino.app, owner=True)
    assert "[ ]" not in casino.manage("showmigrations", "--plan").stdout

    # this release's worker and beat, on the trail the previous one left
    worker, beat = _services(ROOT, services, tmp_path / "new", services_stopped)
    assert "trail.checkpoint" in worker.tasks(), "this release's code"
    worker.wait_for("trail.anchor")
    checkpoint = worker.wait_for("trail.checkpoint", made=True)
    assert "'checkpoint': None" not in checkpoint, checkpoint
    _stop_in_order(beat, worker, broker)

    checks_pass(casino)
    next_coup(casino)
    checks_pass(casino)
