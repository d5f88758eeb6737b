"""deploy/nginx/casino.conf in front of both gunicorn pools, for real (issue
36): Debian's nginx, a self-signed certificate made here, DEBUG off, the two
pools started with the command lines of deploy/systemd/'s units. Chromium
signs in over HTTPS (the forwarded Host and protocol: no redirect loop, no
CSRF 403), a tablet records a coup through the API, static files come from
disk, and /metrics answers only from inside (the pages pool's own port), with
the API pool's coup counted (one multiprocess directory for both pools).

nginx runs as a child of the test, not a daemon, with its own prefix and
configuration under the test's temporary directory: no root configuration
is read or changed. Without nginx this test skips saying so on a laptop, and
fails under CI (.ci/run installs it).

Ports: four free ones picked at start, or NGINX_TEST_PORT and the three
after it (to keep the test inside a range of ports of its own).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import _missing
from tests.ops.installed import BIN, PASSWORD, ROOT, Casino, start, stop

pytestmark = [pytest.mark.postgres, pytest.mark.browser]

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _ports() -> list[int]:
    first = os.environ.get("NGINX_TEST_PORT")
    if first:
        return [int(first) + n for n in range(4)]
    import socket

    sockets = [socket.socket() for _ in range(4)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


HTTP, HTTPS, API, PAGES = _ports()
SITE = f"https://127.0.0.1:{HTTPS}"


def _replace(text: str, old: str, new: str, count: int = 1) -> str:
    """Replace what the file must hold: a change of its shape fails here."""
    assert text.count(old) == count, f"deploy/: expected {count} x {old!r}"
    return text.replace(old, new)


def certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True)
    return cert, key


def nginx_conf(prefix: Path, cert: Path, key: Path) -> Path:
    """deploy/nginx/casino.conf with this machine's ports, names and paths,
    inside a main configuration of its own (pid, logs, temp files in prefix)."""
    site = (ROOT / "deploy" / "nginx" / "casino.conf").read_text()
    site = _replace(site, "listen 80;", f"listen 127.0.0.1:{HTTP};")
    site = _replace(site, "    listen [::]:80;\n", "")
    site = _replace(site, "listen 443 ssl http2;",
                    f"listen 127.0.0.1:{HTTPS} ssl http2;")
    site = _replace(site, "    listen [::]:443 ssl http2;\n", "")
    site = _replace(site, "server_name casino.example;", "server_name 127.0.0.1;", 2)
    site = _replace(site, "/etc/ssl/casino/fullchain.pem", str(cert))
    site = _replace(site, "/etc/ssl/casino/privkey.pem", str(key))
    site = _replace(site, "server 127.0.0.1:8000;", f"server 127.0.0.1:{API};")
    site = _replace(site, "server 127.0.0.1:8001;", f"server 127.0.0.1:{PAGES};")
    site = _replace(site, "/srv/casino/app/var/static/", f"{ROOT}/var/static/")
    temp = "\n".join(f"    {kind}_temp_path {prefix}/{kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    # as root, nginx's workers would be `nobody`, who cannot read the
    # test's temporary files
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    conf.write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {prefix}/nginx.pid;\n"
        f"error_log {prefix}/error.log warn;\n"
        "events { worker_connections 128; }\n"
        f"http {{\n    include /etc/nginx/mime.types;\n"
        f"    access_log {prefix}/access.log;\n{temp}\n{site}\n}}\n")
    return conf


def unit_command(name: str, port: int, control: Path) -> list[str]:
    """A unit's ExecStart, with this checkout's gunicorn, port and socket."""
    text = (ROOT / "deploy" / "systemd" / name).read_text().replace("\\\n", " ")
    line = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    line[0] = str(BIN / Path(line[0]).name)
    line[line.index("--bind") + 1] = f"127.0.0.1:{port}"
    line[line.index("--control-socket") + 1] = str(control)
    return line


def _free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        # as gunicorn and nginx bind: a port in TIME_WAIT is free to them
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if not os.path.exists(NGINX):
        _missing("nginx", f"{NGINX} not found (apt-get install nginx)")
    busy = [p for p in (HTTP, HTTPS, API, PAGES) if not _free(p)]
    if busy:
        pytest.fail(f"ports {busy} are taken (NGINX_TEST_PORT: the first of four)")
    tmp = tmp_path_factory.mktemp("nginx")
    casino = Casino(tmp, "nginx")
    casino.extra.update(
        CSRF_TRUSTED_ORIGINS=SITE, NUM_PROXIES="1",
        PROMETHEUS_MULTIPROC_DIR=str(tmp / "metrics"))
    casino.install(("croupier1", "croupier"), ("manager1", "manager"))
    casino.manage("collectstatic", "--noinput", "-v", "0")
    (tmp / "metrics").mkdir()
    cert, key = certificate(tmp)
    prefix = tmp / "nginx"
    prefix.mkdir()
    procs = []
    try:
        pools = (("casino-api.service", API), ("casino-pages.service", PAGES))
        for name, port in pools:
            control = tmp / f"{name}.ctl"
            procs.append(start(unit_command(name, port, control), casino.env(),
                               tmp / f"{name}.log",
                               ready=f"http://127.0.0.1:{port}/health/"))
            assert control.exists(), f"{name}: no control socket at {control}"
        conf = nginx_conf(prefix, cert, key)
        test = subprocess.run([NGINX, "-t", "-p", str(prefix), "-c", str(conf),
                               "-e", str(prefix / "error.log")],
                              capture_output=True, text=True)
        assert test.returncode == 0, test.stderr
        procs.append(start([NGINX, "-p", str(prefix), "-c", str(conf),
                            "-e", str(prefix / "error.log")], casino.env(),
                           tmp / "nginx.out", ready=f"http://127.0.0.1:{HTTP}/"))
        yield {"casino": casino, "cert": cert, "prefix": prefix}
    finally:
        for proc in reversed(procs):
            stop(proc)
        casino.drop()


def https(site, path: str, *, method: str = "GET", body=None, headers=None):
    """A request through nginx, the certificate checked (the test's own CA)."""
    context = ssl.create_default_context(cafile=str(site["cert"]))
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        SITE + path, data=data, method=method,
        headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def inside(port: int, path: str, token: str | None):
    """A plain-HTTP request to a pool's own port: the internal network."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def browser_context_args(browser_context_args):
    # the test's self-signed certificate; urllib checks it properly above
    return {**browser_context_args, "ignore_https_errors": True}


def test_chromium_signs_in_over_https(site, page):
    page.goto(SITE + "/accounts/login/")
    page.get_by_label("Username").fill("manager1")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    # signed in, back on https at the site's own address (not redirected to
    # the upstream's, nor refused by CSRF)
    assert page.url == SITE + "/", page.content()[:2000]
    assert page.get_by_role("heading", name="Sign in").count() == 0
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["sessionid"]["secure"] and cookies["sessionid"]["httpOnly"]
    assert cookies["csrftoken"]["secure"]


def test_plain_http_is_sent_to_https(site):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", HTTP, timeout=10)
    conn.request("GET", "/accounts/login/")
    r = conn.getresponse()
    assert r.status == 301
    assert r.getheader("Location") == "https://127.0.0.1/accounts/login/"


def test_a_coup_through_the_api_then_metrics_only_from_inside(site):
    def token(name):
        status, _, body = https(site, "/api/v1/auth/token/", method="POST",
                                body={"username": name, "password": PASSWORD})
        assert status == 200, body
        return {"Authorization": f"Token {json.loads(body)['token']}"}

    manager, croupier = token("manager1"), token("croupier1")
    status, headers, body = https(site, "/api/v1/tables/", method="POST",
                                  body={"name": "Salon 1"}, headers=manager)
    assert status == 201, body
    assert headers.get("Strict-Transport-Security"), headers  # DEBUG off, https
    table = json.loads(body)["id"]
    session = json.loads(https(site, f"/api/v1/tables/{table}/sessions/",
                               method="POST", body={}, headers=croupier)[2])
    shoe = json.loads(https(site, f"/api/v1/sessions/{session['id']}/shoes/",
                            method="POST", body={"burned": 3}, headers=croupier)[2])
    status, _, body = https(site, f"/api/v1/sessions/{session['id']}/turns/",
                            method="POST", body={"seat": 4, "bank": "1000.00"},
                            headers=croupier)
    assert status == 201, body
    status, _, body = https(
        site, f"/api/v1/shoes/{shoe['id']}/coups/", method="POST",
        body={"punter": ["2H", "3D"], "banker": ["8C", "TS"],
              "stakes": [{"seat": 2, "amount": "300.00"}]}, headers=croupier)
    assert status == 201, body
    coup = json.loads(body)
    assert (coup["outcome"], coup["commission"]) == ("banker", "15.00")

    # through nginx (its access line is written once the answer is sent)
    line = f'"POST /api/v1/shoes/{shoe["id"]}/coups/ HTTP/1.1" 201 '
    deadline = time.monotonic() + 10
    while line not in (site["prefix"] / "access.log").read_text():
        assert time.monotonic() < deadline, f"no {line!r} in nginx's access log"
        time.sleep(0.1)

    # /metrics: never through nginx, with or without the token
    metrics_token = site["casino"].keys["METRICS_TOKEN"]
    for headers in ({}, {"Authorization": f"Bearer {metrics_token}"}):
        status, _, body = https(site, "/metrics", headers=headers)
        assert status == 404 and b"casino_" not in body
    # from inside: the pages pool's own port, with the token, counting the
    # coup the API pool recorded (one metrics directory for both pools)
    assert inside(PAGES, "/metrics", None)[0] in (401, 403)
    status, text = inside(PAGES, "/metrics", metrics_token)
    assert status == 200
    recorded = re.search(r'^casino_coups_recorded_total\{path="record"\} (\S+)$',
                         text, re.M)
    assert recorded and float(recorded.group(1)) == 1.0, text[:3000]


def test_static_files_come_from_disk(site):
    static = ROOT / "var" / "static"
    css = next(p for p in static.rglob("*.css") if p.is_file())
    status, headers, body = https(site, "/static/" + str(css.relative_to(static)))
    assert status == 200 and body == css.read_bytes()
    # nginx's, not the app's: no header the app puts on every response
    assert "Content-Security-Policy" not in headers and "X-Request-ID" not in headers

