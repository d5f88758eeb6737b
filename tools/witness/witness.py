"""A witness of transparency logs, as c2sp.org/tlog-witness has it: a
regulator runs it on a machine of its own; the casino's app pushes each
checkpoint of its trail to it, and it cosigns only a tree that extends the
last one it cosigned for that log.

    python -m tools.witness --new-key w1.key --name witness.example/w1
        writes a new Ed25519 key (base64 of the 32-byte seed) and prints the
        witness's verifier key (cosignature/v1, type 0x04), for WITNESS_URLS
    python -m tools.witness --key w1.key --name witness.example/w1 \\
        --store w1.sqlite3 --log 'ORIGIN+keyid+KEY' --port 18030
        serves POST /add-checkpoint on 127.0.0.1:18030 (--host to change)

POST /add-checkpoint, the body "old <size>", the consistency proof (one
base64 hash a line), an empty line, the signed checkpoint:
- 400 a malformed body, or an old size above the checkpoint's;
- 404 a log (origin) it is not configured for;
- 403 no signature of the log's key holds;
- 409 the old size is not the size it last cosigned for that log (the body:
  that size and a newline, Content-Type text/x.tlog.size), or the same size
  with another root (a fork);
- 422 the consistency proof does not hold (the new tree does not extend the
  one it cosigned: a rewritten or restored log);
- 200 its cosignature/v1 line(s).
Its state (per log, the last size and root it cosigned) is in its own SQLite
file, checked and updated in one IMMEDIATE transaction (two requests cannot
roll each other back), synchronous=FULL: on disk before it answers. Every
refused request of a known log whose signature holds is kept in the same
file (`evidence`), with its body: the log's own signed word, for a court.

GET /state answers the logs it holds, as JSON: origin, size, root (base64),
when it cosigned (not part of the spec; for the log's operator and tests).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sqlite3
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

if __package__ in (None, ""):  # run as a file: tools/ on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: E402
    Ed25519PrivateKey,
)

from tools.evidence_verifier import tlog  # noqa: E402

MAX_BODY = 64 * 1024
SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (origin TEXT PRIMARY KEY, size INTEGER NOT NULL,
    root BLOB NOT NULL, cosigned_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS evidence (id INTEGER PRIMARY KEY, at INTEGER NOT NULL,
    origin TEXT NOT NULL, status INTEGER NOT NULL, reason TEXT NOT NULL,
    request BLOB NOT NULL);
"""


class Refused(Exception):
    def __init__(self, status: int, reason: str, *, size: int | None = None,
                 evidence: bool = False):
        super().__init__(reason)
        self.status, self.reason, self.size, self.evidence = (
            status, reason, size, evidence)


class Witness:
    def __init__(self, *, name: str, key: Ed25519PrivateKey, store: Path,
                 logs: dict[str, list[tlog.Verifier]]):
        self.name, self.key, self.logs = name, key, logs
        self.store = store  # a connection per request: sqlite3's are per thread
        db = self._db()
        db.executescript(SCHEMA)
        db.close()

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.store, timeout=10, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def vkey(self) -> str:
        return tlog.vkey(self.name, tlog.public_raw(self.key.public_key()),
                         tlog.ALG_COSIGNATURE_V1)

    def add_checkpoint(self, body: bytes) -> str:
        """The cosignature line(s), or Refused."""
        try:
            old, proof, note = tlog.add_checkpoint_parse(body)
            text, _sigs = tlog.note_split(note)
            cp = tlog.checkpoint_parse(text)
        except tlog.ProofError as exc:
            raise Refused(400, str(exc)) from exc
        keys = self.logs.get(cp.origin)
        if keys is None:
            raise Refused(404, f"unknown log {cp.origin}")
        try:
            tlog.note_open(note, keys)
        except tlog.ProofError as exc:
            raise Refused(403, str(exc)) from exc
        if old > cp.size:
            raise Refused(400, f"old size {old} is above the checkpoint's {cp.size}")
        db = self._db()
        try:
            return self._check_and_cosign(db, cp, old, proof, text, body)
        finally:
            db.close()

    def _check_and_cosign(self, db, cp, old, proof, text, body) -> str:
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT size, root FROM logs WHERE origin = ?",
                             (cp.origin,)).fetchone()
            size, root = (row[0], bytes(row[1])) if row else (0, tlog.EMPTY_ROOT)
            if old != size:
                raise Refused(409, f"old size {old}, but {size} was cosigned",
                              size=size, evidence=True)
            if old == cp.size and root != cp.root:
                raise Refused(409, f"another root for size {old} (a fork)",
                              size=size, evidence=True)
            try:
                tlog.verify_consistency(old, cp.size, proof, root, cp.root)
            except tlog.ProofError as exc:
                raise Refused(422, str(exc), evidence=True) from exc
            now = int(time.time())
            db.execute(
                "INSERT INTO logs (origin, size, root, cosigned_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(origin) DO UPDATE SET size = excluded.size,"
                " root = excluded.root, cosigned_at = excluded.cosigned_at",
                (cp.origin, cp.size, cp.root, now))
            db.execute("COMMIT")
        except Refused as refused:
            if refused.evidence:
                db.execute("INSERT INTO evidence (at, origin, status, reason, request)"
                           " VALUES (?, ?, ?, ?, ?)", (int(time.time()), cp.origin,
                                                       refused.status, refused.reason,
                                                       body))
                db.execute("COMMIT")
            else:
                db.execute("ROLLBACK")
            raise
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return tlog.cosign(text, self.name, self.key, now)

    def state(self) -> list[dict]:
        db = self._db()
        try:
            rows = db.execute("SELECT origin, size, root, cosigned_at FROM logs"
                              " ORDER BY origin").fetchall()
            refused = db.execute("SELECT count(*) FROM evidence").fetchone()[0]
        finally:
            db.close()
        return [{"origin": o, "size": s, "root": tlog.b64(bytes(r)), "cosigned_at": t,
                 "evidence": refused} for o, s, r, t in rows]


def handler_for(witness: Witness):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, text: str, ctype="text/plain; charset=utf-8"):
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802 - http.server's name
            if self.path.rstrip("/") != "/add-checkpoint":
                return self._answer(404, "not found\n")
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                return self._answer(411, "Content-Length required\n")
            if not 0 < length <= MAX_BODY:
                return self._answer(413, "body too large\n")
            body = self.rfile.read(length)
            try:
                line = witness.add_checkpoint(body)
            except Refused as refused:
                if refused.status == 409 and refused.size is not None:
                    return self._answer(409, f"{refused.size}\n", "text/x.tlog.size")
                return self._answer(refused.status, refused.reason + "\n")
            return self._answer(200, line)

        def do_GET(self):  # noqa: N802
            if self.path.rstrip("/") != "/state":
                return self._answer(404, "not found\n")
            return self._answer(200, json.dumps(witness.state()) + "\n",
                                "application/json")

        def log_message(self, format, *args):  # noqa: A002 - quiet by default
            if os.environ.get("WITNESS_VERBOSE"):
                super().log_message(format, *args)

    return Handler


def _load_key(path: Path) -> Ed25519PrivateKey:
    raw = base64.b64decode(path.read_text().strip(), validate=True)
    if len(raw) != 32:
        raise SystemExit(f"{path}: the base64 of a 32-byte Ed25519 seed expected")
    return Ed25519PrivateKey.from_private_bytes(raw)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.witness",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True, help="the witness's key name")
    parser.add_argument("--key", type=Path, help="its Ed25519 seed (base64)")
    parser.add_argument("--new-key", type=Path, help="write a new key here")
    parser.add_argument("--store", type=Path, help="its SQLite state file")
    parser.add_argument("--log", action="append", default=[],
                        help="a log's verifier key (name = origin); repeatable")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.new_key:
        key = Ed25519PrivateKey.generate()
        seed = key.private_bytes_raw()
        fd = os.open(args.new_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(base64.b64encode(seed).decode() + "\n")
        print(tlog.vkey(args.name, tlog.public_raw(key.public_key()),
                        tlog.ALG_COSIGNATURE_V1))
        return 0
    if not (args.key and args.store and args.log):
        parser.error("--key, --store and at least one --log are needed to serve")
    logs: dict[str, list[tlog.Verifier]] = {}
    for text in args.log:
        v = tlog.parse_vkey(text)
        logs.setdefault(v.name, []).append(v)
    witness = Witness(name=args.name, key=_load_key(args.key), store=args.store,
                      logs=logs)
    server = ThreadingHTTPServer((args.host, args.port), handler_for(witness))
    print(f"witness {witness.vkey()} on {args.host}:{server.server_address[1]}",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0
