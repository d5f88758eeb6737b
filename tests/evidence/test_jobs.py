"""The verifier's re-settlement in processes (issue 34 item 6, `--jobs`):
whatever the number of processes sharing the sessions, the same answer, the
same commission per table and day, the same problems; and a ledger line
written otherwise than the casino writes it (same content, other layout) is
still checked, by its content (the slow path)."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest

from .conftest import rewrite
from .test_bundle import bundle, period  # noqa: F401  (fixtures)


def _run(verify, path, key, jobs):
    done = verify(path, "--public-key", str(key), "--json", "--jobs", str(jobs))
    out = json.loads(done.stdout)
    return done.returncode, out


@pytest.mark.parametrize("forged", [False, True])
def test_the_same_answer_whatever_the_processes(
        bundle, tmp_path, verify, signing_key, forged):  # noqa: F811
    path = bundle
    if forged:
        def edit(name, lines):
            if name != "ledger.jsonl":
                return None
            coups = [x for x in lines if x["label"] == "tables.coup"
                     and x["row"].get("commission", "0.00") != "0.00"]
            for coup in (coups[0], coups[-1]):  # in the first and last session
                coup["row"]["commission"] = "0.00"
            return lines

        path = rewrite(bundle, tmp_path / "forged.zip", edit)
    answers = [_run(verify, path, signing_key, jobs) for jobs in (0, 1, 2, 3)]
    code, first = answers[0]
    assert code == (1 if forged else 0)
    assert first["counts"]["coups re-settled"] > 0
    for other_code, other in answers[1:]:
        assert other_code == code
        assert other["commission"] == first["commission"]
        assert sorted(other["problems"]) == sorted(first["problems"])
        assert other["counts"] == first["counts"]
    if forged:
        assert sum("commission stored 0.00, re-settled" in p
                   for p in first["problems"]) == 2


def test_a_line_laid_out_otherwise_is_checked_by_its_content(
        bundle, tmp_path, verify, signing_key):  # noqa: F811
    """Spaces after the separators, keys in another order: the same rows,
    so the same digests (the verifier encodes them again); one of them
    changed is named."""
    with zipfile.ZipFile(bundle) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    lines = [json.loads(x) for x in parts["ledger.jsonl"].splitlines()]

    def write(rows, out):
        data = b"".join(json.dumps(dict(reversed(list(x.items()))), indent=None,
                                   ensure_ascii=False).encode() + b"\n"
                        for x in rows)
        manifest = json.loads(parts["manifest.json"])
        manifest["parts"]["ledger.jsonl"] = {
            "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "lines": len(rows)}
        with zipfile.ZipFile(out, "w") as z:
            for name, content in parts.items():
                z.writestr(name, {"ledger.jsonl": data,
                                  "manifest.json": json.dumps(manifest)}.get(
                    name, content))
        return out

    code, out = _run(verify, write(lines, tmp_path / "spaced.zip"), signing_key, 2)
    assert code == 0, out["problems"]
    coup = next(x for x in lines if x["label"] == "tables.coup")
    coup["row"]["seq"] += 1000
    code, out = _run(verify, write(lines, tmp_path / "edited.zip"), signing_key, 2)
    assert code == 1
    assert any(f"coup {coup['key']}: differs from what log row" in p
               for p in out["problems"])
