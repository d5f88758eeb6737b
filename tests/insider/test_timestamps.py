"""Trusted timestamps of every anchor (issue 25 item 2), against a real
RFC 3161 authority run here: a throwaway CA and TSA certificate made with
openssl, `openssl ts -reply` behind a small HTTP server. The token is kept in
the database and beside the anchor file, checked on receipt; an authority
that is down stops nothing (the anchor is kept, its wait shows on the trail
page) and the retry task fetches the token once it answers; a token for
another digest is named by verify_trail."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from casino.anchors import trail_anchor
from casino.models import AnchorRecord, TimestampToken
from casino.trail import trail_verify
from tests.audit.conftest import BANKER_WINS, stake

pytestmark = pytest.mark.skipif(not shutil.which("openssl"), reason="no openssl")

EXT = """basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=critical,timeStamping
"""
CONFIG = """[ tsa ]
default_tsa = tsa_config1
[ tsa_config1 ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.2.3.4.1
other_policies = 1.2.3.4.5
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _authority(folder: Path, name: str) -> Path:
    """A CA and a TSA certificate it issued (extendedKeyUsage critical
    timeStamping), and the `openssl ts` configuration that signs with it."""
    folder.mkdir()
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt",
             "-subj", f"/CN={name} CA", "-days", "2",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    _openssl("req", *ec, "-keyout", "tsa.key", "-out", "tsa.csr",
             "-subj", f"/CN={name}", cwd=folder)
    (folder / "ext.cnf").write_text(EXT)
    _openssl("x509", "-req", "-in", "tsa.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "tsa.crt", "-days", "2",
             "-extfile", "ext.cnf", cwd=folder)
    (folder / "serial").write_text("01\n")
    (folder / "ts.cnf").write_text(CONFIG.format(dir=folder))
    return folder


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's name
        server = self.server
        query = self.rfile.read(int(self.headers["Content-Length"]))
        server.requests += 1
        if not server.up:
            self.send_error(503, "down for maintenance")
            return
        folder = server.folder
        with server.lock:  # one openssl at a time: it keeps a serial file
            (folder / "q.tsq").write_bytes(query)
            subprocess.run(["openssl", "ts", "-reply", "-config", "ts.cnf",
                            "-queryfile", "q.tsq", "-out", "r.tsr"],
                           cwd=folder, check=True, capture_output=True)
            reply = (folder / "r.tsr").read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def authority(tmp_path_factory):
    folder = _authority(tmp_path_factory.mktemp("tsa") / "authority", "Test TSA")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.folder, server.up, server.requests = folder, True, 0
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def tsa(authority, settings):
    authority.up = True
    settings.TRAIL_TSA_URL = f"http://127.0.0.1:{authority.server_port}/tsa"
    settings.TRAIL_TSA_CA_FILE = str(authority.folder / "ca.crt")
    settings.TRAIL_TSA_TIMEOUT = 5
    return authority


def _statement(data: dict) -> bytes:
    return json.dumps({k: data[k] for k in ("row", "link", "hash", "at", "reason")},
                      sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def _openssl_verifies(tsr: Path, statement: bytes, ca: Path) -> bool:
    data = tsr.with_suffix(".statement")
    data.write_bytes(statement)
    done = subprocess.run(["openssl", "ts", "-verify", "-in", str(tsr), "-data",
                           str(data), "-CAfile", str(ca)], capture_output=True,
                          text=True)
    return done.returncode == 0 and "Verification: OK" in done.stdout


def test_an_anchor_is_time_stamped_and_kept_in_the_database_and_beside_it(
        played, tsa, settings):
    anchor = trail_anchor(reason="gaming-day close")
    path = settings.TRAIL_ANCHOR_DIR / anchor.file
    data = json.loads(path.read_text())
    assert data["tsa_token"] == anchor.tsa_token and anchor.tsa_token
    record = AnchorRecord.objects.get()
    assert (record.row, record.hash, record.link, record.signature) == (
        anchor.row, anchor.hash, anchor.link, anchor.signature)
    [token] = TimestampToken.objects.filter(anchor=record)
    assert token.token == data["tsa_token"]
    # the outsider, with openssl alone: the token is of this anchor's statement
    tsr = Path(f"{path}.tsr")
    assert _openssl_verifies(tsr, _statement(data), tsa.folder / "ca.crt")
    assert not _openssl_verifies(tsr, _statement({**data, "row": data["row"] + 1}),
                                 tsa.folder / "ca.crt")
    from rfc3161_client import decode_timestamp_response

    info = decode_timestamp_response(tsr.read_bytes()).tst_info
    assert info.message_imprint.message == hashlib.sha256(_statement(data)).digest()
    check = trail_verify()
    assert check.ok, check.problem


def _trail_page(client, auditor) -> str:
    client.force_login(auditor)
    answer = client.get("/floor/trail/")
    assert answer.status_code == 200
    return answer.content.decode()


def test_an_authority_down_stops_nothing_and_the_retry_fetches_the_token(
        played, tsa, settings, client, auditor, deal, shoe):
    from casino.tasks import timestamps_retry_task

    tsa.up = False
    asked = tsa.requests
    anchor = trail_anchor(reason="interval")  # kept, without its token
    assert tsa.requests == asked + 1
    assert anchor is not None and not anchor.tsa_token
    data = json.loads((settings.TRAIL_ANCHOR_DIR / anchor.file).read_text())
    assert data["tsa_token"] is None and data["signature"]
    assert not Path(f"{settings.TRAIL_ANCHOR_DIR / anchor.file}.tsr").exists()
    # play goes on
    coup = deal(shoe, BANKER_WINS, [stake("100")])
    assert coup.pk
    assert trail_verify().ok
    page = _trail_page(client, auditor)
    assert 'id="anchor-untimed"' in page and f"of row #{anchor.row}" in page
    # still down: the retry keeps it waiting
    assert timestamps_retry_task.apply().get() == {"asked": 1, "received": 0,
                                                    "left": 1}
    # the authority answers again
    tsa.up = True
    assert timestamps_retry_task.apply().get() == {"asked": 1, "received": 1,
                                                    "left": 0}
    [token] = TimestampToken.objects.filter(anchor__file=anchor.file)
    tsr = Path(f"{settings.TRAIL_ANCHOR_DIR / anchor.file}.tsr")
    assert _openssl_verifies(tsr, _statement(data), tsa.folder / "ca.crt")
    assert base64.b64decode(token.token) in tsr.read_bytes()
    assert 'id="anchor-untimed"' not in _trail_page(client, auditor)
    # asked once: nothing left to ask
    assert timestamps_retry_task.apply().get()["asked"] == 0
    check = trail_verify()
    assert check.ok, check.problem


def test_an_authority_that_refuses_connections_stops_nothing(played, tsa, settings):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.TRAIL_TSA_URL = f"http://127.0.0.1:{port}/tsa"
    anchor = trail_anchor(reason="interval")
    assert anchor is not None and not anchor.tsa_token
    assert AnchorRecord.objects.filter(file=anchor.file, tokens__isnull=True).exists()


def test_an_answer_from_an_authority_we_do_not_trust_is_not_kept(
        played, tsa, settings, tmp_path):
    other = _authority(tmp_path / "other", "Other TSA")
    settings.TRAIL_TSA_CA_FILE = str(other / "ca.crt")
    anchor = trail_anchor(reason="interval")
    assert not anchor.tsa_token and not TimestampToken.objects.exists()
    assert AnchorRecord.objects.get().file == anchor.file


@pytest.mark.tampers
def test_a_token_for_another_digest_is_named(played, tsa, settings, deal, shoe):
    first = trail_anchor(reason="interval")
    deal(shoe, BANKER_WINS, [stake("100")])
    second = trail_anchor(reason="interval")
    assert first.tsa_token and second.tsa_token
    # the runtime role may insert: a token of the second anchor, filed as the
    # first's
    record = AnchorRecord.objects.get(file=first.file)
    TimestampToken.objects.create(
        anchor=record, token=second.tsa_token, gen_time=record.at, serial="9",
        received_at=record.at)
    with pytest.raises(CommandError) as err:
        call_command("verify_trail", stdout=io.StringIO())
    assert f"row {first.row}: the anchor of {first.file}" in str(err.value)
    assert "for another digest" in str(err.value)


@pytest.mark.tampers
def test_a_tsr_file_for_another_anchor_is_named(played, tsa, settings, deal, shoe):
    first = trail_anchor(reason="interval")
    tsa.up = False
    deal(shoe, BANKER_WINS, [stake("100")])
    second = trail_anchor(reason="interval")
    folder = settings.TRAIL_ANCHOR_DIR
    Path(f"{folder / second.file}.tsr").write_bytes(
        Path(f"{folder / first.file}.tsr").read_bytes())
    problems = trail_verify().problems
    assert any(f"row {second.row}: anchor file {second.file}: its timestamp "
               "token is for another digest" in p for p in problems), problems
