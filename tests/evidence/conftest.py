"""A signing key, a period of simulated play, and the verifier run the way a
regulator runs it: a Python with only `cryptography` on its path and Django
barred from import."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.audit.conftest import deal, played  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[2]
VERIFIER = ROOT / "tools" / "verify_evidence.py"
# Only these come from the virtualenv; everything else is the standard library.
PACKAGES = ("cryptography", "cffi", "_cffi_backend", "pycparser")
RUN = """
import sys, runpy
class NoDjango:
    def find_spec(self, name, path=None, target=None):
        if name == "django" or name.startswith("django."):
            raise ImportError("the verifier must not import Django")
sys.meta_path.insert(0, NoDjango())
sys.path[:0] = [{site!r}]
sys.argv = {argv!r}
try:
    runpy.run_path({verifier!r}, run_name="__main__")
finally:
    assert not any(m == "django" or m.startswith("django.") for m in sys.modules)
"""


def _site(tmp: Path) -> Path:
    import cryptography

    source = Path(cryptography.__file__).resolve().parents[1]
    site = tmp / "site"
    site.mkdir(exist_ok=True)
    for entry in source.iterdir():
        if entry.name.split(".")[0].split("-")[0] in PACKAGES and not (
                site / entry.name).exists():
            (site / entry.name).symlink_to(entry)
    return site


@pytest.fixture
def signing_key(settings, tmp_path):
    key = Ed25519PrivateKey.generate()
    raw = key.private_bytes(serialization.Encoding.Raw,
                            serialization.PrivateFormat.Raw,
                            serialization.NoEncryption())
    settings.TRAIL_SIGNING_KEY = raw  # as casino/settings.py reads it: the seed
    pem = tmp_path / "casino.pem"
    pem.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pem


@pytest.fixture
def verify(tmp_path):
    site = _site(tmp_path)

    def run(bundle: Path, *args: str) -> subprocess.CompletedProcess:
        argv = ["verify_evidence.py", str(bundle), *args]
        code = RUN.format(site=str(site), argv=argv, verifier=str(VERIFIER))
        return subprocess.run([sys.executable, "-I", "-S", "-c", code],
                              capture_output=True, text=True, timeout=300)

    return run


def statement(anchor: dict) -> bytes:
    """What an anchor's signature and token are over (casino/signing.py)."""
    from casino.signing import anchor_statement

    return anchor_statement(**{k: anchor[k] for k in ("row", "link", "hash", "at",
                                                      "reason")})


def rewrite(bundle: Path, out: Path, edit) -> Path:
    """A copy of the bundle with its parts changed by `edit(name, lines)` and
    the manifest's digests made to match, as a forger would."""
    import hashlib

    with zipfile.ZipFile(bundle) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(parts.pop("manifest.json"))
    for name, data in list(parts.items()):
        lines = [json.loads(x) for x in data.splitlines()]
        lines = edit(name, lines)
        if lines is None:
            continue
        data = b"".join(
            json.dumps(x, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False).encode() + b"\n" for x in lines)
        parts[name] = data
        manifest["parts"][name] = {"sha256": hashlib.sha256(data).hexdigest(),
                                   "bytes": len(data),
                                   "lines": data.count(b"\n")}
    with zipfile.ZipFile(out, "w") as z:
        for name, data in parts.items():
            z.writestr(name, data)
        z.writestr("manifest.json", json.dumps(manifest))
    return out
