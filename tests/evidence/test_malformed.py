"""The verifier never crashes and stays bounded (issue 34 item 5): whatever
the file, it ends with exit 0, 1 or 2 and a sentence, never a traceback,
within a memory limit and a time limit; a malformed bundle is exit 2,
naming the part and line. Explicit cases first (the ones found: a log row
without `at`, a manifest without `windows`, one 2 GB line), then a seeded
mutation loop over a genuine bundle, run in one Python that has only
`cryptography` (as the regulator's), held to RLIMIT_AS."""

from __future__ import annotations

import json
import random
import resource
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from .conftest import VERIFIER, _site, rewrite
from .test_bundle import bundle, period  # noqa: F401  (fixtures)

LIMIT = 768 << 20  # address space the verifier's process is held to here
# One Python, Django barred, verifying each file given by calling main():
# a report per file (exit status, the last line it wrote, anything that
# escaped main), and an alarm that ends the process (status 3) if one file
# takes too long.
RUNNER = """
import contextlib, io, json, os, signal, sys, traceback
class NoDjango:
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith("django."):
            raise ImportError("the verifier must not import Django")
sys.meta_path.insert(0, NoDjango())
sys.path[:0] = [{site!r}]
sys.argv = ["verify_evidence.py"]
import runpy
main = runpy.run_path({verifier!r})["main"]
def too_long(*_):
    os.write(2, b"TIMEOUT " + CURRENT.encode() + b"\\n")
    os._exit(3)
signal.signal(signal.SIGALRM, too_long)
for line in sys.stdin:
    CURRENT, *args = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    escaped = ""
    signal.alarm({seconds})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([CURRENT, *args])
    except BaseException:
        code, escaped = None, traceback.format_exc()
    signal.alarm(0)
    said = (err.getvalue() or out.getvalue()).strip().splitlines()
    print(json.dumps({{"file": CURRENT, "code": code, "escaped": escaped,
                      "said": said[0] if said else ""}}), flush=True)
import re, resource
# VmHWM: this process's own high-water mark since its exec. (RUSAGE_SELF's
# ru_maxrss would also carry the RSS of the process it was forked from, the
# test worker, which Linux keeps across exec.) RUSAGE_CHILDREN: the largest
# of the re-settling processes the verifier forked.
with open("/proc/self/status") as status:
    own = int(re.search(r"VmHWM:\\s*(\\d+)", status.read()).group(1))
print(json.dumps({{"peak": max(
    own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)}}), flush=True)
"""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def run_all(tmp_path: Path, files: list[Path], key: Path, seconds: int = 60):
    """Each file verified in one held process: {file: report}, and the
    process's peak resident memory (MB)."""
    code = RUNNER.format(site=str(_site(tmp_path)), verifier=str(VERIFIER),
                         seconds=seconds)
    feed = "".join(json.dumps([str(f), "--public-key", str(key)]) + "\n"
                   for f in files)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=feed,
                          capture_output=True, text=True, timeout=60 + seconds *
                          len(files), preexec_fn=_limits)
    assert done.returncode == 0, done.stderr[-3000:]
    *reports, peak = [json.loads(x) for x in done.stdout.splitlines()]
    assert len(reports) == len(files), done.stderr[-3000:]
    # The verifier's own peak (its process and the workers it forked), not
    # this test process's other children (a browser of an earlier test).
    return {r["file"]: r for r in reports}, peak["peak"] / 1024


def _held(report: dict) -> None:
    assert not report["escaped"], report["escaped"]
    assert report["code"] in (0, 1, 2), report
    assert report["said"], report
    assert "Traceback" not in report["said"]


def verdicts(tmp_path: Path, files: list[Path], key: Path) -> tuple[dict, float]:
    """Each file verified (run_all), each verdict held (_held): how many
    ended in each exit status, and the peak memory (MB)."""
    reports, peak = run_all(tmp_path, files, key)
    codes: dict = {}
    for report in reports.values():
        _held(report)
        codes[report["code"]] = codes.get(report["code"], 0) + 1
    return codes, peak


def test_a_log_row_without_at_and_a_manifest_without_windows(
        bundle, tmp_path, signing_key):  # noqa: F811
    def no_at(name, lines):
        if name == "log.jsonl":
            del lines[2]["at"]
            return lines
        return None

    cut = rewrite(bundle, tmp_path / "no-at.zip", no_at)
    with zipfile.ZipFile(bundle) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(parts["manifest.json"])
    del manifest["windows"]
    parts["manifest.json"] = json.dumps(manifest).encode()
    windowless = tmp_path / "no-windows.zip"
    with zipfile.ZipFile(windowless, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
    reports, _ = run_all(tmp_path, [cut, windowless], signing_key)
    for report in reports.values():
        _held(report)
        assert report["code"] == 2
    said = reports[str(cut)]["said"]
    assert "log.jsonl line 3" in said and "'at'" in said, said
    assert "manifest: windows is missing or not a list" in reports[
        str(windowless)]["said"]


def _deflated_zip(path: Path, members: dict[str, bytes], big: tuple[str, int]):
    """A ZIP of `members` plus `big`: (name, n) a member of n MiB of "a" and
    no newline, written as one deflate block repeated (built in a second,
    not deflated for a minute), its CRC computed as it is."""
    name, mib = big
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = b"a" * (1 << 20)
    one = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    raw = one * mib + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    entries = [(n, zlib.compress(d, 9)[2:-4], zlib.crc32(d), len(d))
               for n, d in members.items()] + [(name, raw, crc, mib << 20)]
    out, central = bytearray(), bytearray()
    for n, data, crc_, size in entries:
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc_,
                           len(data), size, len(n), 0)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0,
                               crc_, len(data), size, len(n), 0, 0, 0, 0, 0,
                               len(out)) + n.encode()
        out += head + n.encode() + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                      len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))
    return path


def test_one_2_gb_line_is_refused_at_once(bundle, tmp_path, signing_key):  # noqa: F811
    with zipfile.ZipFile(bundle) as z:
        parts = {n: z.read(n) for n in z.namelist() if n != "ledger.jsonl"}
    path = _deflated_zip(tmp_path / "line.zip", parts, ("ledger.jsonl", 2048))
    assert path.stat().st_size < 4 << 20
    reports, peak = run_all(tmp_path, [path], signing_key, seconds=60)
    report = reports[str(path)]
    _held(report)
    assert report["code"] == 2
    assert "ledger.jsonl line 1: longer than 8 MiB" in report["said"]
    assert peak < 200, peak  # 55 MB measured on 2026-12-04


def _mutants(genuine: Path, folder: Path, seed: int, n: int) -> list[Path]:
    rng = random.Random(seed)
    with zipfile.ZipFile(genuine) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    out = []
    for i in range(n):
        path = folder / f"m{i}.zip"
        try:
            MUTATIONS[i % len(MUTATIONS)](rng, genuine, dict(parts), path)
        except _Skip:
            continue
        out.append(path)
    return out


class _Skip(Exception):
    pass


ODD = [None, 0, -1, 1e308, "x", "", [], {}, True, "9" * 5000, [[[[[]]]]],
       {"a": {"b": None}}, "2026-13-45", "../../etc/passwd", -(10**30)]


def _pick(rng, lines):
    if not lines:
        raise _Skip
    return rng.randrange(len(lines))


def _field_edit(rng, genuine, parts, path, drop: bool):
    target = rng.choice(["ledger.jsonl", "log.jsonl", "anchors.jsonl",
                         "context.jsonl", "report.json", "manifest.json"])

    def edit_obj(obj):
        inner = obj.get("row") if isinstance(obj.get("row"), dict) and rng.random(
        ) < 0.6 else obj
        if not inner:
            raise _Skip
        key = rng.choice(sorted(inner))
        if drop:
            del inner[key]
        else:
            inner[key] = rng.choice(ODD)

    if target in ("report.json", "manifest.json"):
        data = json.loads(parts[target])
        edit_obj(data if rng.random() < 0.5 or target == "manifest.json" else (
            data.get("rows") or [data])[0])
        parts[target] = json.dumps(data).encode()
        _write(path, parts)
        return

    def edit(name, lines):
        if name != target:
            return None
        edit_obj(lines[_pick(rng, lines)])
        return lines

    rewrite(genuine, path, edit)


def _write(path: Path, parts: dict[str, bytes], extra=()) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in [*parts.items(), *extra]:
            z.writestr(name, data)


def _lines_edit(rng, genuine, parts, path):
    target = rng.choice(["ledger.jsonl", "log.jsonl", "anchors.jsonl"])

    def edit(name, lines):
        if name != target:
            return None
        i, j = _pick(rng, lines), _pick(rng, lines)
        kind = rng.randrange(4)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[j])
        elif kind == 2:
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = rng.choice(ODD)
        return lines

    rewrite(genuine, path, edit)


def _bytes_edit(rng, genuine, parts, path):
    name = rng.choice(sorted(parts))
    data = bytearray(parts[name])
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data) or 1)
        data[at:at + 1] = bytes([rng.randrange(256)]) if rng.random() < 0.7 else b""
    if rng.random() < 0.3:
        data = data[:rng.randrange(len(data) or 1)]
    parts[name] = bytes(data)
    _write(path, parts)


def _zip_edit(rng, genuine, parts, path):
    kind = rng.randrange(5)
    if kind == 0:  # a name that would escape an extraction
        _write(path, parts, [(rng.choice(["../evil.jsonl", "/etc/x", "a/../../b"]),
                              b"{}\n")])
    elif kind == 1:  # a part twice
        name = rng.choice(sorted(parts))
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile: "Duplicate name"
            _write(path, parts, [(name, parts[name])])
    elif kind == 2:  # a part missing
        del parts[rng.choice(sorted(parts))]
        _write(path, parts)
    elif kind == 3:  # the file cut short, or its bytes flipped
        data = bytearray(genuine.read_bytes())
        if rng.random() < 0.5:
            data = data[:rng.randrange(len(data))]
        else:
            for _ in range(4):
                data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
    else:  # a bomb: 64 MiB of newlines (or of "{}") where a part was
        name = rng.choice(["ledger.jsonl", "log.jsonl", "anchors.jsonl"])
        del parts[name]
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for n, d in parts.items():
                z.writestr(n, d)
            with z.open(name, "w", force_zip64=True) as f:
                chunk = (b"\n" if rng.random() < 0.5 else b"{}\n") * (1 << 20)
                for _ in range(64 // (len(chunk) >> 20)):
                    f.write(chunk)


MUTATIONS = [
    lambda rng, b, p, path: _field_edit(rng, b, p, path, drop=True),
    lambda rng, b, p, path: _field_edit(rng, b, p, path, drop=False),
    _lines_edit, _bytes_edit, _zip_edit,
]


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz(bundle, tmp_path, signing_key, seed):  # noqa: F811
    """Mutants of a genuine bundle (fields dropped or of another type,
    lines removed, repeated, swapped or replaced, bytes flipped or cut,
    `../` and repeated members, a part missing, bombs): every one ends in
    0, 1 or 2 with a sentence, within the memory and time limits."""
    files = _mutants(bundle, tmp_path, seed, 60)
    assert len(files) > 40
    codes, peak = verdicts(tmp_path, files, signing_key)
    assert codes.get(2, 0) > 10 and codes.get(1, 0) > 5, codes
    assert peak < LIMIT >> 20
