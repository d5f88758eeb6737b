"""gunicorn for bench_http.py: started in its own process group, found ready
when a worker answers, stopped by its pid (the group it leads)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time

import _benchdb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(
    args, port: int, log_name: str = "gunicorn.log", env: dict | None = None
) -> tuple[subprocess.Popen, list[str]]:
    opts = (
        f"-b 127.0.0.1:{port} -k {args.worker_class} -w {args.workers} "
        f"--threads {args.threads} --keep-alive 5 --log-level warning"
    )
    cmd = [sys.executable, "-m", "gunicorn", "casino.wsgi:application"]
    cmd += [*opts.split(), "--chdir", str(_benchdb.ROOT)]
    log = open(_benchdb.OUT_DIR / log_name, "w")  # noqa: SIM115
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        # CASINO_PROCESS: a request's limits
        env={**os.environ, "CASINO_PROCESS": "web", **(env or {})},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # ready when a worker answers
        if proc.poll() is not None:
            sys.exit(f"gunicorn exited; see var/bench/{log_name}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/v1/bench/bare/")  # 401/405: no row
            conn.getresponse().read()
            conn.close()
            return proc, cmd
        except OSError:
            time.sleep(0.2)
    stop(proc)
    sys.exit("gunicorn did not answer within 30 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # its own group: master and workers
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
