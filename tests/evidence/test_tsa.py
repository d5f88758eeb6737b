"""The verifier's RFC 3161 check against tokens of a real TSA (`openssl ts`,
a throwaway certificate made here): a token over the anchor's statement
passes; a token for another digest, or from another authority, is named."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import rewrite, statement
from .test_bundle import bundle, period  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="openssl not installed")
CONFIG = """[ tsa ]
default_tsa = tsa1
[ tsa1 ]
serial = {serial}
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256
ess_cert_id_alg = sha256
"""


def _tsa(folder: Path) -> Path:
    folder.mkdir()
    (folder / "serial").write_text("01\n")
    (folder / "ts.cnf").write_text(CONFIG.format(serial=folder / "serial"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", folder / "tsa.key", "-out", folder / "tsa.pem",
                    "-days", "2", "-subj", "/CN=throwaway tsa", "-addext",
                    "extendedKeyUsage=critical,timeStamping"],
                   check=True, capture_output=True)
    return folder


def _token(tsa: Path, data: bytes) -> str:
    (tsa / "data").write_bytes(data)
    subprocess.run(["openssl", "ts", "-query", "-data", tsa / "data", "-sha256",
                    "-no_nonce", "-cert", "-out", tsa / "q.tsq"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "ts", "-reply", "-queryfile", tsa / "q.tsq",
                    "-signer", tsa / "tsa.pem", "-inkey", tsa / "tsa.key",
                    "-config", tsa / "ts.cnf", "-token_out", "-out",
                    tsa / "token.der"], check=True, capture_output=True)
    return base64.b64encode((tsa / "token.der").read_bytes()).decode()


def _stamped(bundle, out, tsa, data=None):  # noqa: F811
    def edit(name, lines):
        if name != "anchors.jsonl":
            return None
        for a in lines:
            a["tsa_token"] = _token(tsa, data or statement(a))
        return lines

    return rewrite(bundle, out, edit)


def test_tokens(bundle, tmp_path, verify, signing_key):  # noqa: F811
    tsa, other = _tsa(tmp_path / "tsa"), _tsa(tmp_path / "other")
    key = ["--public-key", str(signing_key)]
    good = _stamped(bundle, tmp_path / "good.zip", tsa)
    done = verify(good, *key, "--tsa-cert", str(tsa / "tsa.pem"))
    assert done.returncode == 0, done.stdout + done.stderr
    done = verify(good, *key, "--tsa-cert", str(other / "tsa.pem"))
    assert done.returncode == 1
    assert "time-stamp token is not signed by the TSA certificate given" in (
        done.stderr)
    wrong = _stamped(bundle, tmp_path / "wrong.zip", tsa, data=b"another head")
    done = verify(wrong, *key, "--tsa-cert", str(tsa / "tsa.pem"))
    assert done.returncode == 1
    assert "its time-stamp token is for another digest" in done.stderr
    done = verify(bundle, *key, "--tsa-cert", str(tsa / "tsa.pem"))
    assert done.returncode == 1 and "no time-stamp token" in done.stderr
