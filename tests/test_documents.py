"""Every command and environment variable the documents name exists (issue
36): a `manage.py` command the project or Django provides, a `make` target of
the Makefile, a variable the app reads (tests/ops/test_deploy.py's walk), the
benchmarks, tests or the Makefile read, a Django setting, or a constant the
code defines (`casino.trail.LEFT_OUT`). A renamed command or variable fails
here, naming the document, instead of a reader finding out at the prompt."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ops.test_deploy import variables_read

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                    ROOT / "deploy" / "casino.env",
                    *(ROOT / "deploy").glob("*/*")])
# Upper-case names with an underscore that are neither variables nor settings.
NOT_VARIABLES = {"ROUND_HALF_UP", "ROUND_HALF_EVEN"}  # decimal's rounding modes
VARIABLE = re.compile(r"\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b")


def _names(pattern: str) -> dict[str, set[str]]:
    """{name: documents naming it} for the pattern's first group."""
    found: dict[str, set[str]] = {}
    for path in DOCUMENTS:
        for name in re.findall(pattern, path.read_text()):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def test_the_documents_are_there():
    names = {p.name for p in DOCUMENTS}
    assert {"README.md", "operations.md", "security.md", "api.md", "surveillance.md",
            "evidence.md", "benchmarks.md", "floor.md", "rules.md",
            "casino.env", "casino.conf", "casino-api.service"} <= names


def test_every_manage_py_command_exists():
    from django.core.management import get_commands

    named = _names(r"(?:`|python\s+)manage\.py\s+([a-z_]+)")
    assert {"user", "migrate", "db_roles", "verify_trail",
            "verify_ledger"} <= set(named)
    missing = {n: docs for n, docs in named.items() if n not in get_commands()}
    assert missing == {}


def test_every_make_target_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z_-]*):", makefile, re.M))
    named = _names(r"`make ([a-z][a-z_-]*)")
    named.update(_names(r"^\s*make ([a-z][a-z_-]*)"))
    assert {"run", "test"} <= set(named)
    missing = {n: docs for n, docs in named.items() if n not in targets}
    assert missing == {}


def _variables() -> dict[str, set[str]]:
    """Names in backticks or at the start of a NAME=value, in every document."""
    found: dict[str, set[str]] = {}
    for path in DOCUMENTS:
        text = path.read_text()
        spans = re.findall(r"`([^`\n]+)`", text)
        spans += re.findall(r"^\s*#?\s*([A-Z][A-Z0-9_]+)=", text, re.M)
        spans += re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)
        for span in spans:
            for name in VARIABLE.findall(span):
                found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def known_names() -> set[str]:
    from django.conf import settings

    known = variables_read() | {n for n in dir(settings._wrapped) if n.isupper()}
    makefile = (ROOT / "Makefile").read_text()
    known |= set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*\??=", makefile, re.M))
    known |= set(re.findall(r"\$\(([A-Z][A-Z0-9_]*)\)", makefile))
    code = [*ROOT.glob("*/**/*.py"), *(ROOT / "static").rglob("*.js")]
    for path in code:
        if ".venv" in path.parts:
            continue
        text = path.read_text(errors="replace")
        known |= set(re.findall(
            r"(?:environ\.get|environ\.setdefault|getenv)\(\s*[\"']([A-Z0-9_]+)",
            text))
        known |= set(re.findall(r"environ\[[\"']([A-Z0-9_]+)", text))
        known |= set(re.findall(r"^\s*(?:export\s+const\s+|const\s+)?([A-Z][A-Z0-9_]+)"
                                r"\s*(?::[^=\n]+)?=", text, re.M))
    return known


def test_every_variable_named_exists():
    known = known_names()
    named = _variables()
    assert {"TRAIL_KEY", "MIGRATE_DATABASE_URL",
            "PROMETHEUS_MULTIPROC_DIR"} <= set(named)
    unknown = {n: docs for n, docs in named.items()
               if n not in known and n not in NOT_VARIABLES}
    assert unknown == {}


@pytest.mark.parametrize("bad", ["TRAIL_ANCHOR_MINUTE", "manage.py verify_trails"])
def test_a_wrong_name_would_be_caught(bad):
    """The checks above fail on a name that does not exist."""
    from django.core.management import get_commands

    if bad.startswith("manage.py"):
        assert bad.split()[1] not in get_commands()
    else:
        assert bad not in known_names()
        assert VARIABLE.findall(f"`{bad}`") == [bad]


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_every_link_between_the_documents_leads_somewhere():
    broken = []
    for path in DOCUMENTS:
        if path.suffix != ".md":
            continue
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)",
                                         path.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            file = (path.parent / target).resolve() if target else path
            if not file.exists():
                broken.append(f"{path.name}: {target}")
            elif anchor and (file.suffix != ".md" or anchor not in _anchors(file)):
                broken.append(f"{path.name}: {target}#{anchor}")
    assert broken == []
