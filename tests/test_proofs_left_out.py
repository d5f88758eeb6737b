"""The long statistical proofs (marker `proof`, tests/conftest.py) are left
out of a laptop's default run, saying where they run, and kept under CI and
with PROOFS=1: the newcomer's `make test` stays short and CI still proves the
detector's calibration (issue 26)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parent.parent
CALIBRATION = "tests/surveillance/test_calibration.py"


def _run(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in {"CI", "PROOFS", "PYTEST_XDIST_WORKER",
                          "PYTEST_ADDOPTS"}}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-q", "-rs", CALIBRATION],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=300)


def test_a_laptops_run_leaves_the_proofs_out_saying_where_they_run():
    result = _run()
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert "skipped" in last and "passed" not in last, result.stdout
    assert "run under CI (CI=true) and by `make calibrate`" in result.stdout


def test_the_calibration_is_marked_a_proof():
    import tests.surveillance.test_calibration as calibration

    assert calibration.pytestmark.name == "proof"


class _Item:
    def __init__(self, proof: bool):
        self.proof, self.added = proof, []

    def get_closest_marker(self, name):
        return object() if name == "proof" and self.proof else None

    def add_marker(self, mark):
        self.added.append(mark)


@pytest.mark.parametrize("run_proofs", [True, False])
def test_ci_or_proofs_1_keeps_them(monkeypatch, run_proofs):
    monkeypatch.setattr(conftest, "RUN_PROOFS", run_proofs)
    proof, plain = _Item(True), _Item(False)
    conftest.pytest_collection_modifyitems(None, [proof, plain])
    assert plain.added == []
    assert bool(proof.added) is not run_proofs


@pytest.mark.parametrize("env,expected", [
    ({}, False), ({"CI": "true"}, True), ({"PROOFS": "1"}, True)])
def test_who_runs_the_proofs(env, expected):
    code = "import tests.conftest as c; print(c.RUN_PROOFS)"
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "PROOFS"}}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env},
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == str(expected), out.stderr
