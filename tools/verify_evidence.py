#!/usr/bin/env python3
"""Check a casino's evidence bundle without the casino: no Django, no
database, no secret. Standard library plus `cryptography`.

    python tools/verify_evidence.py BUNDLE.zip --public-key casino.pem \
        [--public-key old.pem ...] [--tsa-cert tsa.pem] [--engine DIR] [--json] \
        [--witness-key VKEY ... [--quorum N]]

    python tools/verify_evidence.py coup-proof PROOF.json --log-key VKEY \
        --witness-key VKEY ... [--quorum N]
checks one coup's proof (`manage.py prove COUP`) instead: what it checks is
evidence_verifier/coupproof.py's docstring.

Exit 0: every check held; the period's commission per table and gaming day
is printed. Exit 1: the first differences found, each naming the row. Exit 2:
the bundle cannot be checked at all: not a bundle, a part missing, a field
missing or of another type than the format's, a member or line past the
limits it is read with (evidence_verifier/reading.py), or more memory
needed than `--memory-limit` (1 GiB of address space by default); the
message names the part and line. Never a traceback (`--debug` shows one).

What it checks, in order:
1. the manifest's digest of every part (the file as delivered);
2. every anchor statement's Ed25519 signature, against the keys given
   (`--public-key`, PEM or the raw 32-byte key in hex or base64), and, with
   `--tsa-cert` (the authority's root, or its own certificate), its RFC
   3161 token: the token's message imprint is the SHA-256 of the
   statement, its CMS SignedData signature verifies with its signer's
   certificate, a time-stamping one, which is the one given or chains up
   to it through the CA certificates the token carries, in any order
   (evidence_verifier/tsa.py says exactly what);
2b. the checkpoints of the log's Merkle tree (`checkpoints.jsonl`): each
   signed by the log's key (a --public-key, under the checkpoint's origin),
   each cosignature of a witness the bundle lists or `--witness-key` gives
   and holding, a consistency proof between successive checkpoints of a
   log (evidence_verifier/witnessed.py says exactly what); then, as step 3
   walks the rows, each checkpoint's root recomputed from the window's own
   rows (leaf = the row's public link) and the hashes beside them: each
   window's last row (whose link binds every row before it) must be in a
   checkpoint's tree. A window whose last row none holds is a warning, a
   failure with `--witness-key` (then that checkpoint needs `--quorum` of
   those witnesses, default all);
3. the change log: within each window, every row's public link is the
   SHA-256 of its content and the row before's link, from the window's seed
   to its last row, which must be the signed anchor's row and link;
4. every ledger row: its SHA-256 (the canonical JSON of `row`) is the digest
   the latest log row naming it recorded; and every row a log row of the
   windows wrote is there, of every kind (evidence_verifier/complete.py:
   the kinds no bundle carries, and why, are listed there), at the state
   the latest of them left it; the coup settled for a shoe and seq is the
   revision the log wrote last. What the log names is indexed on disk as step 3
   walks it (a temporary SQLite file, `Named`), so memory stays flat
   whatever the period's size (~120 MB; the index's file ~0.5 GB for a
   month of 40 tables);
5. every coup settled again from its cards, stakes and the house rules
   version it names, with the project's rules engine (`tables/chemmy`,
   imported from this checkout by path, or `--engine DIR`), carrying the
   bank along its banker turn: totals, outcome, choices, coverage, garage,
   commission, bank after, each stake's covered/declined/payout, findings,
   cards left, gaming day; then each turn's, shoe's and count's totals
   (in `--jobs` processes while the main one does steps 1-4, which then
   joins them: each session taken by the first process to reach it,
   evidence_verifier/resettle.py);
6. the commission report: its stamp's signature; that the stamp names the
   anchor closing the bundle, its period and its tables (a report of
   another head of the log is not this bundle's); its rows' digest; and
   every table and gaming day's coups, wins, covered and commission against
   the re-settled coups.

The bundle (a ZIP; parts are UTF-8 JSON, one object per line):
- `manifest.json`: format "chemmy-evidence/1", the period, the tables, the
  casino's time zone, `labels`, `fields` (per model, every digested field:
  {"default": v} when a row at v leaves it out, {"kept": true} otherwise),
  `windows` ([{first, last, seed_row, seed}]: log rows first..last, seed the
  link of the row before), `public_keys` (for information: trust only the
  key you were given), `witness_keys` (the witnesses' cosignature/v1 keys
  the casino configured; the same caveat: pass yours with --witness-key),
  `parts` ({name: {sha256, bytes, lines}}).
- `ledger.jsonl`: {"label", "key", "id", "row"}; `row` is exactly the dict
  the trail digests (sorted keys, no spaces, non-ASCII kept). Order: the
  tableau versions, tables and house rules, then session by session (the
  session, its shoes and their findings and releases, its banker turns, its
  coups in dealing order each followed by its stakes and findings, its
  cagnotte counts and attestations), then the flag decisions.
- `context.jsonl`: the flags the decisions are about (not bound: a flag's
  state is its decisions').
- `outside.jsonl`: every other row the windows' log rows wrote, as
  `ledger.jsonl` gives rows ({"label", "key", "id", "row"}), or {"label",
  "key", "later": true} for a row the design updates, of no session of the
  period, written again after the windows (evidence_verifier/complete.py).
- `log.jsonl`: the change-log rows of each window, in id order.
- `anchors.jsonl`: one signed anchor per window, closing it, as the casino
  took it (casino/anchors.py: signed then, not when the bundle was built):
  the statement {row, link, hash, at, reason} (`at` in UTC,
  "YYYY-MM-DDTHH:MM:SS.ffffffZ"), `signature` (base64 Ed25519 over the
  statement's canonical JSON), `signing_key_id` (the first 16 hex digits of
  the SHA-256 of the raw public key), `tsa_token` (base64 DER RFC 3161
  TimeStampToken over the same statement: the one given when the anchor
  was taken, else the earliest given later; null when the authority had not
  answered yet).
- `checkpoints.jsonl` (absent from a bundle of an earlier release: read as
  empty): {"kind": "checkpoint", "note" (the c2sp.org/tlog-checkpoint signed
  note, as published), "cosignatures" (c2sp.org/tlog-cosignature lines),
  "consistency" (base64 hashes: RFC 6962 proof from the previous checkpoint
  of the same origin)}, in (origin, size) order; then {"kind": "segment",
  "window" (its index in `windows`), "origin", "first_row", "last_row"
  (the window's rows that are leaves of that log, consecutive),
  "first_index" (the first one's leaf index), "left" (base64 hashes of the
  complete subtrees left of it, tlog.subtrees(0, first_index)), "checks"
  ([{"size", "right"}]: a checkpoint of that origin and size, and the
  hashes of the subtrees from past the last row's leaf up to its size)}.
- `report.json`: {"stamp", "rows"}: the commission per table and gaming day
  as the casino's reports read it; the stamp (the rows' SHA-256, the total,
  the closing anchor) carries `signing_key_id` and `signature`, the Ed25519
  signature over the canonical JSON of every stamp field but `signature`,
  as every report's stamp is signed (casino/signing.py).

Needs Python 3.11+ (its sqlite3 has RETURNING, SQLite 3.35+) and
`cryptography`.
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal
from pathlib import Path

# The verifier's modules sit beside this file (tools/evidence_verifier/): run
# as a script or by path, its own folder is where they are found.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evidence_verifier.common import (  # noqa: E402 (re-exported: the API)
    CHILD_LABELS,
    COUP_MONEY,
    FORMAT,
    GENESIS,
    MAX_PROBLEMS,
    PARTS,
    ZERO,
    Problems,
    Unreadable,
    body,
    dec,
    dumps,
    key_id,
    load_engine,
    load_public_key,
    loads,
    name_of,
    parse_time,
    sha256_hex,
    signature_check,
    stamp_bytes,
    statement_bytes,
    when,
)
from evidence_verifier.named import Named  # noqa: E402
from evidence_verifier.session import SessionWalk  # noqa: E402
from evidence_verifier.tsa import _tsa_check  # noqa: E402
from evidence_verifier.verifier import Verifier  # noqa: E402

__all__ = [
    "CHILD_LABELS", "COUP_MONEY", "FORMAT", "GENESIS", "MAX_PROBLEMS", "PARTS",
    "ZERO", "Named", "Problems", "SessionWalk", "Unreadable", "Verifier",
    "_tsa_check", "body", "dec", "dumps", "key_id", "load_engine",
    "load_public_key", "loads", "main", "report", "name_of", "parse_time", "sha256_hex",
    "signature_check", "stamp_bytes", "statement_bytes", "when",
]


# -- the program ---------------------------------------------------------------

MEMORY_LIMIT_MB = 1024


def arguments(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("bundle", type=Path)
    p.add_argument("--public-key", type=Path, action="append", required=True,
                   help="the casino's Ed25519 public key (PEM, or 32 bytes in hex "
                   "or base64); repeat for keys retired by a rotation")
    p.add_argument("--tsa-cert", type=Path,
                   help="the time-stamping authority's root certificate, or its own "
                   "(PEM or DER; a PEM may hold several, each trusted)")
    p.add_argument("--engine", type=Path, help="a reviewed copy of tables/chemmy")
    p.add_argument("--witness-key", action="append", default=[], metavar="VKEY",
                   help="a witness's cosignature/v1 verifier key you trust (yours: "
                   "name+keyid+key, as `python -m tools.witness --new-key` prints "
                   "it); repeatable. Then every window must be in a checkpoint "
                   "cosigned by --quorum of them")
    p.add_argument("--quorum", type=int, metavar="N",
                   help="how many of the --witness-key witnesses must have cosigned "
                   "(default: all)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--memory-limit", type=int, default=MEMORY_LIMIT_MB,
                   metavar="MB", help="the address space this program allows "
                   "itself, per process (default %(default)s; 0: no limit); a "
                   "bundle that needs more is refused (exit 2)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="processes re-settling the coups beside the one checking "
                   "the log and the rows, which joins them when done (default: "
                   "one per CPU but one, at most 3; 0: all in this one)")
    p.add_argument("--debug", action="store_true",
                   help="a malformed bundle's error with its traceback (for this "
                   "program's maintainers)")
    return p.parse_args(argv)


def memory_limit(mb: int) -> None:
    """Hold this process to `mb` MB of address space (Unix; elsewhere the
    reading limits alone bound it): whatever a bundle holds, it is refused
    before it can take the machine's memory."""
    try:
        import resource
    except ImportError:
        return
    if mb <= 0:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = mb << 20 if hard == resource.RLIM_INFINITY else min(mb << 20, hard)
    if soft == resource.RLIM_INFINITY or want < soft:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def witness_keys(args: argparse.Namespace) -> list:
    """The --witness-key keys (cosignature/v1) and a quorum that can be met."""
    from evidence_verifier import tlog

    keys = []
    for text in args.witness_key:
        try:
            key = tlog.parse_vkey(text)
        except tlog.ProofError as exc:
            raise Unreadable(f"--witness-key {text[:100]!r}: {exc}") from exc
        if key.alg != tlog.ALG_COSIGNATURE_V1:
            raise Unreadable(f"--witness-key {key.name}: not a cosignature/v1 key")
        keys.append(key)
    if args.quorum is not None and not 0 < args.quorum <= len(keys):
        raise Unreadable(f"--quorum {args.quorum}: between 1 and the "
                         f"{len(keys)} --witness-key given")
    return keys


def _malformed(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no field {str(exc.args[0])[:100]!r} where one is needed"
    if isinstance(exc, TypeError | AttributeError):
        return f"a value of the wrong type ({str(exc)[:200]})"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["coup-proof"]:  # one coup's proof (coupproof.py)
        from evidence_verifier.coupproof import main as coup_proof

        return coup_proof(argv[1:])
    args = arguments(argv)
    memory_limit(args.memory_limit)
    v = None
    try:
        keys = dict(load_public_key(k) for k in args.public_key)
        cert = None
        if args.tsa_cert:
            from cryptography import x509

            data = args.tsa_cert.read_bytes()
            cert = (x509.load_pem_x509_certificates(data) if b"-----BEGIN" in data
                    else [x509.load_der_x509_certificate(data)])
        engine = load_engine(args.engine) if args.engine else None
        witnesses = witness_keys(args)
        v = Verifier(args.bundle, keys, cert, engine, args.jobs, witnesses,
                     args.quorum)
        return report(v, args, v.run())
    except Unreadable as exc:
        print(f"UNREADABLE: {exc}", file=sys.stderr)
    except MemoryError:
        print(f"UNREADABLE: {v.at if v else args.bundle}: the bundle needs more "
              f"memory than this program allows itself ({args.memory_limit} MB, "
              "--memory-limit)", file=sys.stderr)
    except Exception as exc:
        # Whatever a bundle holds, the answer is an exit status and a
        # sentence naming where, never a traceback: a field missing or of
        # another type than the format's is a malformed bundle (exit 2).
        if args.debug:
            raise
        print(f"UNREADABLE: {v.at if v else args.bundle}: malformed bundle "
              f"({_malformed(exc)})", file=sys.stderr)
    return 2


def report(v: Verifier, args: argparse.Namespace, code: int) -> int:
    commission = [
        {"table_id": t, "gaming_day": d, "coups": s["coups"],
         "commission": f"{s['commission']:.2f}"}
        for (t, d), s in sorted(v.sums.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    ]
    names = {r["table_id"]: r["table"] for r in v.report.get("rows", [])}
    problems = v.problems.all()
    if args.json:
        print(dumps({"ok": code == 0, "problems": problems[:MAX_PROBLEMS],
                     "problem_count": v.problems.total(),
                     "counts": dict(v.counts), "commission": commission,
                     "engine_sha256": v.engine_digest, "notes": v.notes}))
        return code
    print(f"Bundle {args.bundle.name}: gaming days {v.from_day} to {v.to_day}")
    print(f"Rules engine: {v.engine_digest[:16]} (SHA-256 of tables/chemmy/*.py)")
    for name, n in sorted(v.counts.items()):
        print(f"  {name}: {n}")
    print("Commission per table and gaming day (re-settled from the cards):")
    total = ZERO
    for c in commission:
        total += Decimal(c["commission"])
        print(f"  {names.get(c['table_id'], c['table_id'])}  {c['gaming_day']}  "
              f"{c['coups']:>7} coups  {c['commission']:>14}")
    print(f"  total {total:.2f}")
    for note in v.notes:
        print(f"Note: {note}")
    if code:
        print(f"FAILED: {v.problems.total()} problem(s)", file=sys.stderr)
        for problem in problems[:MAX_PROBLEMS]:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print("OK: signatures, links, ledger rows, re-settlement and the report agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
