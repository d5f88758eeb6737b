"""A witness (tools/witness) as a real process on a port of its own, and a
log's key to push to it."""

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


__all__ = ["Log", "post", "base64"]
