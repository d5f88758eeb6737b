"""Tokens of a real authority's kind (issue 34 item 4): an OpenSSL TSA whose
certificate is issued by an intermediate CA under a root, and which puts its
chain in every token (`certs =`), in either order, so that one of the two
writes its certificates out of DER order. The app asks it, checks and keeps
its tokens with only the root configured; the standalone verifier accepts
them with only the root given; a token whose chain does not reach the root
given is refused by both, and `openssl ts -verify` agrees throughout."""

from __future__ import annotations

import base64
import shutil
import subprocess
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from audit.evidence.build import evidence_build
from casino import timestamps
from casino.tsa_der import token_of_response
from tests.insider.test_timestamps import _Handler

from .conftest import rewrite, statement
from .test_bundle import bundle, period  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="openssl not installed")
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
CA_EXT = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
TSA_EXT = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
           "extendedKeyUsage=critical,timeStamping\n")
CONFIG = """[ tsa ]
default_tsa = t1
[ t1 ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
signer_key = $dir/tsa.key
certs = $dir/chain.pem
signer_digest = sha256
default_policy = 1.2.3.4.1
digests = sha256
accuracy = secs:1
ess_cert_id_chain = yes
ess_cert_id_alg = sha256
"""


def _openssl(folder: Path, *args) -> None:
    subprocess.run(["openssl", *map(str, args)], cwd=folder, check=True,
                   capture_output=True)


def _root(folder: Path, name: str) -> None:
    _openssl(folder, "req", "-x509", *EC, "-keyout", f"{name}.key", "-out",
             f"{name}.crt", "-subj", f"/CN={name}", "-days", "2",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def _issue(folder: Path, name: str, by: str, ext: str) -> None:
    (folder / f"{name}.ext").write_text(ext)
    _openssl(folder, "req", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}")
    _openssl(folder, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{by}.crt",
             "-CAkey", f"{by}.key", "-CAcreateserial", "-out", f"{name}.crt",
             "-days", "2", "-extfile", f"{name}.ext")


def _chain_authority(folder: Path, root_first: bool) -> Path:
    """root -> intermediate -> tsa; the TSA's tokens carry the intermediate
    and the root after its own certificate (`certs =`, in the order given)."""
    folder.mkdir()
    _root(folder, "root")
    _root(folder, "other-root")
    _issue(folder, "intermediate", "root", CA_EXT)
    _issue(folder, "tsa", "intermediate", TSA_EXT)
    order = ["root", "intermediate"] if root_first else ["intermediate", "root"]
    (folder / "chain.pem").write_bytes(b"".join(
        (folder / f"{n}.crt").read_bytes() for n in order))
    (folder / "serial").write_text("01\n")
    (folder / "ts.cnf").write_text(CONFIG.format(dir=folder))
    return folder


@pytest.fixture(scope="module", params=[False, True], ids=["int-root", "root-int"])
def chain_authority(request, tmp_path_factory):
    folder = _chain_authority(tmp_path_factory.mktemp("chain") / "tsa",
                              request.param)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.folder, server.up, server.requests = folder, True, 0
    server.lock = threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def chain_tsa(chain_authority, settings):
    settings.TRAIL_TSA_URL = f"http://127.0.0.1:{chain_authority.server_port}/tsa"
    settings.TRAIL_TSA_CA_FILE = str(chain_authority.folder / "root.crt")
    settings.TRAIL_TSA_TIMEOUT = 5
    return chain_authority


def _openssl_verifies(folder: Path, response: bytes, data: bytes, ca: str) -> bool:
    (folder / "check.tsr").write_bytes(response)
    (folder / "check.data").write_bytes(data)
    done = subprocess.run(["openssl", "ts", "-verify", "-in", "check.tsr", "-data",
                           "check.data", "-CAfile", ca], cwd=folder,
                          capture_output=True, text=True)
    return done.returncode == 0 and "Verification: OK" in done.stdout


def _reply(folder: Path, data: bytes, config: str = "ts.cnf") -> bytes:
    """A DER TimeStampResp of the authority's over `data`, asked by hand."""
    (folder / "d").write_bytes(data)
    _openssl(folder, "ts", "-query", "-data", "d", "-sha256", "-cert", "-out",
             "q.tsq")
    _openssl(folder, "ts", "-reply", "-config", config, "-queryfile", "q.tsq",
             "-out", "r.tsr")
    return (folder / "r.tsr").read_bytes()


def test_the_app_keeps_and_checks_a_token_carrying_its_chain(chain_tsa):
    stamp = timestamps.ask(b"a statement")
    folder = chain_tsa.folder
    # the authority's bytes are what is kept, its chain in the order it sent
    assert stamp.response.endswith(stamp.token)
    inter = (folder / "intermediate.crt").read_text()
    der = base64.b64decode("".join(inter.splitlines()[1:-1]))
    assert der in stamp.token
    assert _openssl_verifies(folder, stamp.response, b"a statement", "root.crt")
    assert timestamps.token_check(stamp.token_b64, b"a statement") == ""
    assert "another digest" in timestamps.token_check(stamp.token_b64, b"another")


def test_a_chain_that_does_not_reach_the_root_is_refused_by_the_app(
        chain_tsa, settings):
    folder = chain_tsa.folder
    token = timestamps.ask(b"a statement").token_b64
    settings.TRAIL_TSA_CA_FILE = str(folder / "other-root.crt")
    with pytest.raises(timestamps.TimestampError, match="does not hold"):
        timestamps.ask(b"a statement")
    assert "does not verify" in timestamps.token_check(token, b"a statement")
    assert not _openssl_verifies(folder, timestamps.response_of_token(
        base64.b64decode(token)), b"a statement", "other-root.crt")


def test_either_order_of_the_chain_reads(chain_authority):
    """OpenSSL writes the set in the order configured; of the two orders
    at most one is DER's, and the other is the token rfc3161-client
    refused. Both read, sorted, to the same certificates."""
    from rfc3161_client import decode_timestamp_response

    from casino.tsa_der import sorted_response

    folder = chain_authority.folder
    chain = (folder / "chain.pem").read_bytes()
    responses = [_reply(folder, b"x")]
    with chain_authority.lock:
        try:
            pems = chain.split(b"-----END CERTIFICATE-----\n")
            (folder / "chain.pem").write_bytes(
                b"-----END CERTIFICATE-----\n".join([pems[1], pems[0], b""]))
            responses.append(_reply(folder, b"x"))
        finally:
            (folder / "chain.pem").write_bytes(chain)
    in_order = []
    for response in responses:
        ordered = sorted_response(response)
        assert len(ordered) == len(response)
        certificates = decode_timestamp_response(ordered).signed_data.certificates
        assert len(certificates) == 3
        in_order.append(ordered == response)
        if ordered != response:
            with pytest.raises(ValueError, match="InvalidSetOrdering"):
                decode_timestamp_response(response)
    assert in_order.count(False) >= 1


def test_the_bundle_of_an_authority_with_a_chain_verifies_against_its_root(
        db, croupier, signing_key, chain_tsa, tmp_path, verify):
    """End to end: the anchors' tokens asked by the app, kept as the
    authority sent them, carried by the bundle, verified with only the root
    (or a certificate below it) given; another root is refused."""
    from tables.models import Coup
    from tables.simulation import simulate

    simulate(user=croupier, tables=1, shoes=1, seed=3)
    day = Coup.objects.values_list("gaming_day", flat=True).first()
    path = tmp_path / "bundle.zip"
    evidence_build(from_day=day, to_day=day, path=path)
    folder = chain_tsa.folder
    key = ["--public-key", str(signing_key)]
    for trusted in ("root.crt", "intermediate.crt", "tsa.crt"):
        done = verify(path, *key, "--tsa-cert", str(folder / trusted))
        assert done.returncode == 0, (trusted, done.stdout + done.stderr)
    done = verify(path, *key, "--tsa-cert", str(folder / "other-root.crt"))
    assert done.returncode == 1
    assert "does not chain up to a certificate given" in done.stderr


def test_a_token_whose_chain_stops_short_of_the_root_is_refused(
        bundle, chain_authority, tmp_path, verify, signing_key):  # noqa: F811
    """A TSA that leaves its intermediate out of its tokens (`certs =` the
    root alone): the root given cannot be reached from the TSA's
    certificate; the intermediate given can."""
    folder = chain_authority.folder
    (folder / "root-only.cnf").write_text(
        (folder / "ts.cnf").read_text().replace("chain.pem", "root.crt"))

    def edit(name, lines):
        if name != "anchors.jsonl":
            return None
        for a in lines:
            token = token_of_response(
                _reply(folder, statement(a), "root-only.cnf"))
            a["tsa_token"] = base64.b64encode(token).decode()
        return lines

    with chain_authority.lock:
        short = rewrite(bundle, tmp_path / "short.zip", edit)
    key = ["--public-key", str(signing_key)]
    done = verify(short, *key, "--tsa-cert", str(folder / "root.crt"))
    assert done.returncode == 1
    assert "does not chain up to a certificate given" in done.stderr
    done = verify(short, *key, "--tsa-cert", str(folder / "intermediate.crt"))
    assert done.returncode == 0, done.stdout + done.stderr
