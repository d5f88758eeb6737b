"""The layering (README, "Layout") holds: import-linter's contracts in
pyproject.toml are kept and no modules of ours import each other round about
(tools/import_circles.py); and the circle finder finds circles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import import_circles  # noqa: E402


def test_the_circle_finder_finds_a_circle_and_only_circles():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"},
             "f": {"g"}, "g": {"f"}}
    found = import_circles.strongly_connected(set("abcdefg"), edges)
    assert sorted(found) == [["a", "b", "c"], ["f", "g"]]


def test_no_circle_among_our_modules():
    found = import_circles.circles()
    assert found == [], "\n".join(
        f"{group}: {ties}" for group, ties in found)


def test_no_upward_import():
    lint = Path(sys.executable).parent / "lint-imports"
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout
