"""Throwaway PostgreSQL clusters of our own, for bench/faults.py and the
replica tests (tests/replica/): initdb in a temporary directory, a port on
127.0.0.1 (never the shared server's 5432), start, restart, crash, remove;
and a streaming replica of one (pg_basebackup -R).

As root, the servers run as the `postgres` user (PostgreSQL refuses root).
PGBIN names the server's binaries (Debian: /usr/lib/postgresql/15/bin).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

PGBIN = Path(os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"))


class ClusterError(RuntimeError):
    """A cluster would not start (or stop): the server's log says why."""


class Cluster:
    """A PostgreSQL cluster of our own: initdb, start, restart, crash, remove.

    `options` are server settings (-c name=value) given at every start."""

    def __init__(self, port: int, *, database: str = "casino",
                 prefix: str = "casino-pg-", options: dict | None = None):
        self.port = port
        self.database = database
        self.options = dict(options or {})
        self.dir = Path(tempfile.mkdtemp(prefix=prefix))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.as_user = []
        if os.geteuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.dir, "postgres", "postgres")

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        # Output to a file, not a pipe: a server that pg_ctl starts inherits
        # it, and a pipe would then never reach end-of-file.
        with open(self.dir / "pg_ctl.out", "a") as out:
            try:
                return subprocess.run(
                    [*self.as_user, *args], stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT, check=check, timeout=120,
                )  # fmt: skip
            except subprocess.CalledProcessError as exc:
                raise ClusterError(f"{' '.join(args[:2])} failed on port "
                                   f"{self.port}: {self.tail()}") from exc

    def tail(self, lines: int = 15) -> str:
        """The end of the server's and pg_ctl's output, to say why."""
        out = []
        for path in (self.dir / "pg_ctl.out", self.log):
            if path.exists():
                out += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(out)

    def pg_ctl(self, *args: str, check: bool = True):
        return self.run(str(PGBIN / "pg_ctl"), "-D", str(self.data), *args, check=check)

    def create(self) -> None:
        self.run(
            str(PGBIN / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8",
        )  # fmt: skip
        self.start()

    def start(self) -> None:
        opts = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
            "-c max_connections=60"
        )
        opts += "".join(f" -c {k}={v}" for k, v in self.options.items())
        self.pg_ctl("-o", opts, "-l", str(self.log), "-w", "-t", "30", "start")

    def restart_fast(self) -> None:
        self.pg_ctl("-m", "fast", "-l", str(self.log), "-w", "-t", "30", "restart")

    def crash(self) -> None:
        self.pg_ctl("-m", "immediate", "-w", "-t", "30", "stop")

    def remove(self) -> None:
        self.pg_ctl("-m", "immediate", "-w", "-t", "30", "stop", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{self.database}"

    # -- streaming replication -------------------------------------------

    PRIMARY_OPTIONS = {"wal_level": "replica", "max_wal_senders": 4}

    def allow_replication(self) -> None:
        """A replication entry in pg_hba.conf (initdb writes one for
        127.0.0.1 already; said here so the set-up does not rest on it)."""
        hba = self.data / "pg_hba.conf"
        line = "host replication postgres 127.0.0.1/32 trust\n"
        self.run("sh", "-c", f"printf '{line}' >> {hba}")
        self.pg_ctl("reload")

    def replica(self, port: int, **kwargs) -> Cluster:
        """A hot standby of this cluster, streaming from it: pg_basebackup -R
        (the primary's connection goes to postgresql.auto.conf, and
        standby.signal makes it a standby), started on `port`."""
        standby = Cluster(port, database=self.database, **kwargs)
        standby.run(
            str(PGBIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.port),
            "-U", "postgres", "-D", str(standby.data), "-R", "-X", "stream",
            "--checkpoint=fast",
        )  # fmt: skip
        standby.start()
        return standby
