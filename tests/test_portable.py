"""The project runs from any directory: no file names a path of one machine."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {
    ".venv",
    "var",
    ".git",
    "__pycache__",
    "node_modules",
    ".pytest_cache",
    ".ruff_cache",
    "staticfiles",
}
TEXT = {
    ".py",
    ".md",
    ".toml",
    ".cfg",
    ".ini",
    ".txt",
    ".html",
    ".js",
    ".css",
    ".sh",
    ".yml",
    ".yaml",
    ".json",
    "",
}
# A checkout's own location, a home directory, a temporary clone.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|Users)/[\w.-]+")


def _skipped(directory: str) -> bool:
    """Environments, caches and outputs (.venv, .hypothesis, var...), not .ci."""
    return directory in SKIP_DIRS or (directory.startswith(".") and directory != ".ci")


def project_files():
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if any(_skipped(part) for part in rel.parts[:-1]) or not path.is_file():
            continue
        if path.suffix in TEXT and path.stat().st_size < 2_000_000:
            yield rel, path


def test_no_file_names_a_path_of_one_machine():
    found = []
    for rel, path in project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line) and "MACHINE_PATH" not in line:
                found.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not found, "absolute paths of one machine:\n" + "\n".join(found)
