"""A witness (tools/witness) as a real process on a port of its own, and a
log's key to push to it; the app's set-up the witness tests share: rows
written, two witnesses of the app's log, a database restored to an older
checkpoint, a write refused while the trail is stopped."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.audit.conftest import deal, played  # noqa: F401 (fixtures)
from tools.evidence_verifier import tlog

ROOT = Path(__file__).resolve().parents[2]
# Ports for witnesses: WITNESS_PORT_BASE (a range of ten) keeps parallel
# sessions apart.
PORT_BASE = int(os.environ.get("WITNESS_PORT_BASE", "18030"))
_next = [0]


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    n = int(worker[2:] or 0) if worker.startswith("gw") else 0
    port = PORT_BASE + (n % 2) * 5 + _next[0] % 5
    _next[0] += 1
    return port


class WitnessProcess:
    def __init__(self, tmp: Path, name: str, logs: list[str]):
        self.tmp, self.name, self.logs = tmp, name, logs
        self.keyfile = tmp / f"{name.replace('/', '_')}.key"
        out = subprocess.run(
            [sys.executable, "-m", "tools.witness", "--name", name, "--new-key",
             str(self.keyfile)], cwd=ROOT, capture_output=True, text=True, check=True)
        self.vkey = out.stdout.strip()
        self.store = tmp / f"{name.replace('/', '_')}.sqlite3"
        self.port = free_port()
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> WitnessProcess:
        args = [sys.executable, "-m", "tools.witness", "--name", self.name, "--key",
                str(self.keyfile), "--store", str(self.store), "--port",
                str(self.port)]
        for log in self.logs:
            args += ["--log", log]
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("witness "):
            self.proc.kill()
            raise RuntimeError(f"the witness did not start: {self.proc.stderr.read()}")
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None

    def state(self) -> list[dict]:
        with urllib.request.urlopen(self.url + "/state", timeout=5) as r:
            return json.loads(r.read())

    def evidence(self) -> list[tuple]:
        import sqlite3

        db = sqlite3.connect(self.store)
        try:
            return db.execute("SELECT status, reason, request FROM evidence"
                              " ORDER BY id").fetchall()
        finally:
            db.close()


@pytest.fixture
def witness_factory(tmp_path):
    started: list[WitnessProcess] = []

    def make(name: str, logs: list[str]) -> WitnessProcess:
        w = WitnessProcess(tmp_path, name, logs).start()
        started.append(w)
        return w

    yield make
    for w in started:
        w.stop()


class Log:
    """A log outside the app (a list of leaves and a key), for the witness's
    own tests."""

    def __init__(self, origin: str = "casino.example/trail"):
        self.origin = origin
        self.key = Ed25519PrivateKey.generate()
        self.tree = tlog.MemoryTree()

    @property
    def vkey(self) -> str:
        return tlog.vkey(self.origin, tlog.public_raw(self.key.public_key()))

    def add(self, n: int, tag: bytes = b"") -> None:
        for _ in range(n):
            self.tree.append(tlog.leaf_hash(tag + self.tree.size.to_bytes(8, "big")))

    def note(self, size: int | None = None, key=None) -> str:
        size = self.tree.size if size is None else size
        text = tlog.Checkpoint(self.origin, size, self.tree.root(size)).text()
        return text + "\n" + tlog.note_sign(text, self.origin, key or self.key)


def post(url: str, body: bytes) -> tuple[int, str, str]:
    req = urllib.request.Request(url + "/add-checkpoint", data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def wait_port(port: int, up: bool = True) -> None:
    import socket

    for _ in range(100):
        with socket.socket() as s:
            ok = s.connect_ex(("127.0.0.1", port)) == 0
        if ok == up:
            return
        time.sleep(0.05)


def write(n: int, tag: str = "row") -> None:
    """n change-log rows, each in its own transaction (as writes come)."""
    from django.db import transaction

    from casino.changelog import log_action

    for i in range(n):
        with transaction.atomic():
            log_action(action="tests.witness.note", reason=f"{tag} {i}")


@pytest.fixture
def witnesses(settings, witness_factory):
    """Two witnesses of the app's log, as WITNESS_URLS names them."""
    from casino.merkle import log_vkey

    started = [witness_factory(f"witness.example/w{i}", [log_vkey()])
               for i in (1, 2)]
    settings.WITNESSES = [{"url": w.url, "name": w.name, "vkey": w.vkey}
                          for w in started]
    settings.WITNESS_QUORUM = 2
    return started


def restore_to(size: int) -> None:
    """What a dump of the database taken at tree size `size` restores: the
    change log, the tree, the checkpoints and cosignatures as they were."""
    from casino.models import TreeNode
    from tests.insider.test_tampering import superuser

    row = TreeNode.objects.get(level=0, index=size - 1).row
    with superuser() as c:
        c.execute("DELETE FROM casino_cosignature WHERE checkpoint_id IN (SELECT id "
                  "FROM casino_checkpoint WHERE size > %s)", [size])
        c.execute("DELETE FROM casino_checkpoint WHERE size > %s", [size])
        c.execute('DELETE FROM casino_treenode WHERE ("index" + 1) * '
                  "(CAST(1 AS BIGINT) << level) > %s", [size])
        c.execute("DELETE FROM casino_seal WHERE log_id > %s", [row])
        c.execute("DELETE FROM casino_changelog WHERE id > %s", [row])


def cosigned_then_restored(before: int, after: int) -> tuple[int, int]:
    """`before` rows cosigned, `after` more cosigned, then the database put
    back as a dump taken between them holds it: (rows kept, rows the
    witnesses cosigned)."""
    from casino.checkpoints import checkpoint_publish
    from casino.models import ChangeLog

    write(before)
    checkpoint_publish()
    old = ChangeLog.objects.count()
    write(after)
    checkpoint_publish()
    lost = ChangeLog.objects.count()
    restore_to(old)
    return old, lost


def cosigned_then_rewritten() -> None:
    """Rows cosigned, then the first one's link changed as a superuser: the
    row count holds, the cosigned root does not."""
    from casino.checkpoints import checkpoint_publish
    from casino.models import ChangeLog
    from tests.insider.test_tampering import superuser

    write(5)
    checkpoint_publish()
    first = ChangeLog.objects.order_by("id").first()
    with superuser() as c:
        c.execute("UPDATE casino_changelog SET link = %s WHERE id = %s",
                  ["ab" * 32, first.pk])


def stopped_behind(out: dict, old: int, lost: int) -> None:
    """w1 answered that it holds `lost` rows, and writes stop naming both
    numbers."""
    from casino.trailstop import stop_reason_event

    assert out["witnesses"]["witness.example/w1"] == f"behind: the witness holds {lost}"
    stop = stop_reason_event()
    assert stop.kind == "behind"
    assert (f"the database holds {old:,} rows; witness witness.example/w1 cosigned "
            f"{lost:,}") in stop.detail


def table_created(api, user):
    """A write through the API (a table created) as `user`: its response."""
    api.force_authenticate(user=user)
    return api.post("/api/v1/tables/", {"name": "Privé", "minimum_banco": "200.00"},
                    format="json")


__all__ = ["Log", "post", "base64"]
