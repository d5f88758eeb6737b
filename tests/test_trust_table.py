"""The trust-boundary table (docs/security.md) names, for every store a decision reads,
the attacker's test that proves its row: each named test must exist, so that
a row cannot outlive its proof."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _rows() -> list[list[str]]:
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("\n## Trust boundaries\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    header, *body = rows
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "store", "who can write it", "the worst a writer can do",
        "what stops more", "proof",
    ]
    return [[c.strip() for c in row.strip("|").split("|")] for row in body]


def test_every_row_has_a_proof_that_exists():
    rows = _rows()
    assert len(rows) >= 10
    for store, *_rest, proof in rows:
        refs = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", proof)
        assert refs, f"the row {store!r} names no test"
        for path, name in refs:
            file = ROOT / path
            assert file.is_file(), f"{store!r}: {path} does not exist"
            if name:
                assert re.search(rf"^def {name}\(", file.read_text(), re.M), (
                    f"{store!r}: {path} has no test {name}"
                )
