"""The verifier's RFC 3161 check against tokens of a real TSA (`openssl ts`,
a throwaway certificate made here): a token over the anchor's statement
passes; a token for another digest, or from another authority, is named."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from audit.evidence.build import evidence_build
from tests.insider.test_timestamps import authority, tsa  # noqa: F401 (fixtures)

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


def _token(ca: Path, data: bytes) -> str:
    (ca / "data").write_bytes(data)
    subprocess.run(["openssl", "ts", "-query", "-data", ca / "data", "-sha256",
                    "-no_nonce", "-cert", "-out", ca / "q.tsq"],
                   check=True, capture_output=True)
    subprocess.run(["openssl", "ts", "-reply", "-queryfile", ca / "q.tsq",
                    "-signer", ca / "tsa.pem", "-inkey", ca / "tsa.key",
                    "-config", ca / "ts.cnf", "-token_out", "-out",
                    ca / "token.der"], check=True, capture_output=True)
    return base64.b64encode((ca / "token.der").read_bytes()).decode()


def _stamped(bundle, out, ca, data=None):  # noqa: F811
    def edit(name, lines):
        if name != "anchors.jsonl":
            return None
        for a in lines:
            a["tsa_token"] = _token(ca, data or statement(a))
        return lines

    return rewrite(bundle, out, edit)


def test_tokens(bundle, tmp_path, verify, signing_key):  # noqa: F811
    ca, other = _tsa(tmp_path / "tsa"), _tsa(tmp_path / "other")
    key = ["--public-key", str(signing_key)]
    good = _stamped(bundle, tmp_path / "good.zip", ca)
    done = verify(good, *key, "--tsa-cert", str(ca / "tsa.pem"))
    assert done.returncode == 0, done.stdout + done.stderr
    done = verify(good, *key, "--tsa-cert", str(other / "tsa.pem"))
    assert done.returncode == 1
    assert "time-stamp token is not signed by the TSA certificate given" in (
        done.stderr)
    wrong = _stamped(bundle, tmp_path / "wrong.zip", ca, data=b"another head")
    done = verify(wrong, *key, "--tsa-cert", str(ca / "tsa.pem"))
    assert done.returncode == 1
    assert "its time-stamp token is for another digest" in done.stderr
    done = verify(bundle, *key, "--tsa-cert", str(ca / "tsa.pem"))
    assert done.returncode == 1 and "no time-stamp token" in done.stderr


def test_a_token_given_later_is_in_the_next_bundle(db, croupier, signing_key,
                                                   tsa, tmp_path, verify):  # noqa: F811
    """The trail's own authority (tests/insider/test_timestamps.py): down when
    the bundle's closing anchor is taken, so the anchor has no token and a
    regulator checking tokens is told; it answers later (beat's retry), and
    the next build of the same period carries that token, which verifies,
    against the TSA's certificate or the CA that issued it."""
    from casino.timestamps import timestamps_retry
    from tables.models import Coup
    from tables.simulation import simulate

    simulate(user=croupier, tables=1, shoes=1, seed=2)
    day = Coup.objects.values_list("gaming_day", flat=True).first()
    tsa.up = False
    first = tmp_path / "first.zip"
    evidence_build(from_day=day, to_day=day, path=first)
    key = ["--public-key", str(signing_key)]
    cert = ["--tsa-cert", str(tsa.folder / "tsa.crt")]
    done = verify(first, *key, *cert)
    assert done.returncode == 1
    assert "no time-stamp token (the authority had not answered" in done.stderr
    tsa.up = True
    assert timestamps_retry()["received"] == 1
    again = tmp_path / "again.zip"
    evidence_build(from_day=day, to_day=day, path=again)
    with zipfile.ZipFile(again) as z:
        anchor = json.loads(z.read("anchors.jsonl").splitlines()[-1])
    assert anchor["tsa_token"]
    done = verify(again, *key, *cert)
    assert done.returncode == 0, done.stdout + done.stderr
    # the authority's CA given instead of its TSA's certificate: the token
    # carries the TSA's certificate, which the CA issued (issue 34 item 4)
    done = verify(again, *key, "--tsa-cert", str(tsa.folder / "ca.crt"))
    assert done.returncode == 0, done.stdout + done.stderr
