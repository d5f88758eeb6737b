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


def test_every_task_a_service_names_is_a_task():
    """Services name their tasks (casino.celery.by_name): every name written
    in the code is registered, with the arguments its task takes."""
    import inspect
    import re

    from casino.celery import app, by_name

    called = {}
    for path in [*ROOT.glob("audit/**/*.py"), *ROOT.glob("tables/**/*.py"),
                 *ROOT.glob("casino/**/*.py")]:
        for name, args in re.findall(r'by_name\(\s*"([\w.]+)"((?:,[^()]*)?)\)',
                                     path.read_text()):
            called[name] = args.count(",")
    assert len(called) >= 4, called  # reports, re-audits, surveillance
    for name, n_args in called.items():
        task = by_name(name, *range(n_args)).type
        assert task is app.tasks[name]
        inspect.signature(task.run).bind(*range(n_args))
