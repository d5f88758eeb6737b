"""audit_coups: JSON Lines in, one verdict per line out, in order, streaming."""

from __future__ import annotations

import io
import json
import tracemalloc

from django.core.management import call_command

LINES = [
    {"id": "a", "punter": ["9H", "KD"], "banker": ["5C", "2S"]},
    {"id": "b", "punter": ["2H", "3D"], "banker": ["3S", "2C"]},
    {"id": "c", "punter": ["2H", "1X"], "banker": ["3S", "2C"]},
    {"id": "d", "punter": ["2H"], "banker": ["3S", "2C"]},
    {"id": "e", "banker": ["3S", "2C"]},
    {"id": "f", "punter": ["9H", "KD"], "banker": ["3S", "2C", "5D"]},
]


def run(tmp_path, lines, *extra):
    src = tmp_path / "coups.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    call_command("audit_coups", str(src), *extra, stdout=out)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_one_line_out_per_line_in(tmp_path, db):
    got = run(tmp_path, [json.dumps(x) for x in LINES] + ["not json"])
    assert [g["id"] for g in got] == ["a", "b", "c", "d", "e", "f", None]
    a, b, c, d, e, f, g = got
    assert a == {
        "id": "a",
        "valid": True,
        "outcome": "punter",
        "punter_total": 9,
        "banker_total": 7,
        "natural": "punter",
        "punter_choice": None,
        "banker_choice": None,
        "findings": [],
    }
    assert b["findings"][0]["code"] == "false_draw"
    assert (
        b["findings"][0]["side"],
        b["findings"][0]["required"],
        b["findings"][0]["actual"],
    ) == ("banker", "draw", "stand")
    assert c["valid"] is False and c["error"].startswith("punter[1]")
    assert d["valid"] is False and d["error"].startswith("punter")
    assert e == {"id": "e", "valid": False, "error": "punter: this field is required"}
    assert f["findings"][0]["code"] == "draw_after_natural"
    assert f["banker_total"] == 5  # the third card after a natural does not count
    assert g["valid"] is False


def test_streams_without_holding_the_input(tmp_path, db):
    lines = [
        json.dumps({"id": i, "punter": ["2H", "3D"], "banker": ["3S", "2C"]})
        for i in range(30_000)
    ]
    src = tmp_path / "big.jsonl"
    src.write_text("\n".join(lines))
    del lines

    class Count(io.TextIOBase):
        n = 0

        def write(self, s):
            self.n += s.count("\n")
            return len(s)

    out = Count()
    tracemalloc.start()
    call_command("audit_coups", str(src), stdout=out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert out.n == 30_000
    assert peak < 3_000_000  # 30k results held in memory would be tens of MB


def test_stdin_and_unknown_tableau(tmp_path, db, monkeypatch):
    import sys

    import pytest
    from django.core.management import CommandError

    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(LINES[0]) + "\n"))
    out = io.StringIO()
    call_command("audit_coups", "-", stdout=out)
    assert json.loads(out.getvalue())["outcome"] == "punter"
    with pytest.raises(CommandError, match="--tableau"):
        call_command("audit_coups", "-", "--tableau", "nope", stdout=out)
    got = run(tmp_path, [json.dumps(LINES[0])], "--tableau", "punto-banco-1")
    assert got[0]["valid"]
