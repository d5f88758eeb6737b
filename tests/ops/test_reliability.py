"""The reliability benches still pass (issue 33, item 12): a short run of
bench/load.py (tablets through gunicorn on PostgreSQL, a shared table
among them) and of bench/faults.py (PostgreSQL restarted and crashed under
the tablets, two tablets racing for one shoe) must each end OK: exit status
0, and the database holds exactly what the tablets were told (acknowledged
= stored, nothing lost, doubled or unresolved), with no coup a tablet could
not record. A house rule the benches' tablets do not play by fails here
(they failed on main once, refused for a tie's stakes).

Both runs start together (one fixture for the module), each a process of
its own, and each test waits for its own run. Nothing they use is shared with
another worker of the suite or another checkout at the same time:
load.py's database is `load_<TEST_ROLE_TAG>_<xdist worker>` on DATABASE_URL's
server (re-created, then dropped); faults.py's throwaway cluster takes a free
port in 5460-5899 picked from the same two names (never 5432, nor the
replica tests' 5441-5442); gunicorn takes free ports; neither touches Redis
(bench/_harness.configure drops REDIS_URL: Celery eager, the local cache).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import zlib
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import _missing

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300  # s: a run takes well under a minute; a hung one is stopped
WHO = "_".join(p for p in (os.environ.get("TEST_ROLE_TAG", ""),
                           os.environ.get("PYTEST_XDIST_WORKER", "")) if p)


def _name(prefix: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", f"{prefix}_{WHO or 'suite'}".lower())[:60]


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _cluster_port() -> int:
    start = 5460 + zlib.crc32(WHO.encode()) % 400
    return next((p for p in range(start, start + 40) if _free(p)), 0)  # 0: any


class Run:
    """One bench run in its own process group, its output in a file."""

    def __init__(self, name: str, args: list[str], out: Path):
        self.name, self.json = name, out
        self.log = out.with_suffix(".log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, f"bench/{name}.py", *args, "--out", str(out)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)

    def wait(self) -> tuple[int, dict]:
        try:
            self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{self.name}.py did not end in {TIMEOUT} s:\n{self.tail()}")
        figures = json.loads(self.json.read_text()) if self.json.exists() else {}
        return self.proc.returncode, figures

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])

    def stop(self) -> None:
        """SIGTERM: the bench stops its gunicorn and removes its cluster."""
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        _missing("PostgreSQL", "set DATABASE_URL=postgres://... to run the "
                 "reliability benches")
    from bench._pgcluster import PGBIN

    out = tmp_path_factory.mktemp("reliability")
    load_url = urlunsplit(urlsplit(url)._replace(path="/" + _name("load")))
    started = {"load": Run("load", [
        "--clients", "4", "--duration", "3", "--workers", "2", "--threads", "4",
        "--database-url", load_url], out / "load.json")}
    if (PGBIN / "initdb").exists():
        started["faults"] = Run("faults", [
            "--tablets", "4", "--duration", "4", "--rounds", "4",
            "--port", str(_cluster_port())], out / "faults.json")
    yield started
    for run in started.values():
        run.stop()


def _stored_as_acknowledged(verify: dict) -> None:
    assert verify["acknowledged"] > 0, verify
    assert verify["coups"] == verify["acknowledged"], verify
    assert (verify["rows_lost"], verify["rows_duplicated"],
            verify["unresolved"]) == (0, 0, 0), verify
    assert verify["problems"] == [], verify


def test_load_run_ends_ok(runs):
    run = runs["load"]
    status, figures = run.wait()
    assert status == 0, run.tail()
    assert figures.get("client_errors") == [], run.tail()
    _stored_as_acknowledged(figures["verify"])
    assert figures["verify"]["ok"], run.tail()
    (level,) = figures["results"]
    assert level["shared_table_clients"] >= 2  # a table two tablets post to


def test_faults_run_ends_ok(runs):
    if "faults" not in runs:
        from bench._pgcluster import PGBIN

        _missing("PostgreSQL's server binaries",
                 f"{PGBIN}/initdb not found (set PGBIN)")
    run = runs["faults"]
    status, figures = run.wait()
    assert status == 0, run.tail()
    assert figures["ok"], run.tail()
    _stored_as_acknowledged(figures["verify"])
    assert figures["restart"]["errors"] == [], run.tail()
    assert len(figures["events"]) == 2  # a clean restart, then a crash
    race = figures["race"]
    assert race["problems"] == [], run.tail()
    assert race["one_winner"] == race["both_recorded_without_seq"] == 4, race
