"""One coup's proof (casino/prove.py, `manage.py prove COUP`) checked with
the log's and the witnesses' public keys alone:

    python tools/verify_evidence.py coup-proof PROOF.json \\
        --log-key 'ORIGIN+keyid+KEY' --witness-key 'NAME+keyid+KEY' ... \\
        [--quorum N]

1. the checkpoint is a signed note whose signature by the log's key
   (signed-note, Ed25519) holds, and a c2sp.org/tlog-checkpoint;
2. at least --quorum (default: every --witness-key) of the witnesses given
   cosigned it (cosignature/v1 over the checkpoint's text);
3. every change-log row: its public link is the SHA-256 of its canonical
   content with the previous link (casino/trail.py), and the link is a leaf
   of the checkpoint's tree at its index (RFC 6962 inclusion proof);
4. every ledger row (the coup, its stakes and findings): the SHA-256 of its
   canonical JSON is the digest a proven change-log row recorded for it,
   and every stake and finding those rows record for the coup is there.
Exit 0: the coup is proven; 1: what does not hold; 2: not a proof.
Cost: O(log n) hashes per row, n the log's size.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import tlog
from .common import body, dumps, sha256_hex

FORMAT = "chemmy-coup-proof/1"
CHILDREN = ("tables.stake", "tables.finding")


def _after(entry):
    return entry[1] if type(entry) is list else entry


def check(proof: dict, log_keys: list[tlog.Verifier],
          witness_keys: list[tlog.Verifier], quorum: int) -> list[str]:
    """The problems with a coup's proof (empty: it holds)."""
    if proof.get("format") != FORMAT:
        return [f"not a coup proof (format {proof.get('format')!r})"]
    problems: list[str] = []
    try:
        text, _ = tlog.note_open(proof["checkpoint"], log_keys)
        cp = tlog.checkpoint_parse(text)
    except tlog.ProofError as exc:
        return [f"checkpoint: {exc}"]
    if cp.origin not in {k.name for k in log_keys}:
        problems.append(f"checkpoint: origin {cp.origin} is not the log's key name")
    cosigned = set()
    for line in proof.get("cosignatures", []):
        try:
            sigs = tlog.parse_signature_lines(line)
        except tlog.ProofError as exc:
            problems.append(f"cosignature: {exc}")
            continue
        for sig in sigs:
            for key in witness_keys:
                if (sig.name, sig.key_id) != (key.name, key.key_id):
                    continue
                try:
                    tlog.cosignature_check(text, sig, key)
                except tlog.ProofError as exc:
                    problems.append(f"cosignature: {exc}")
                else:
                    cosigned.add(key.name)
    if len(cosigned) < quorum:
        problems.append(f"{len(cosigned)} of the witnesses given cosigned the "
                        f"checkpoint ({', '.join(sorted(cosigned)) or 'none'}); "
                        f"quorum {quorum}")
    recorded: dict[tuple[str, str], str] = {}
    for entry in proof["log"]:
        rid = entry.get("id")
        link = sha256_hex(body(entry["prev_link"], entry["row"]))
        if link != entry["link"]:
            problems.append(f"log row {rid}: its link is not the SHA-256 of its "
                            "content and the previous link (the row was changed)")
            continue
        try:
            tlog.verify_inclusion(
                entry["index"], cp.size, tlog.leaf_hash(bytes.fromhex(link)),
                [tlog.unb64(h, "inclusion proof") for h in entry["inclusion"]],
                cp.root)
        except (tlog.ProofError, ValueError) as exc:
            problems.append(f"log row {rid}: not in the checkpoint's tree ({exc})")
            continue
        for label, entries in (entry["row"].get("ledger") or {}).items():
            for key, digest in entries.items():
                recorded[(label, key)] = _after(digest)
    coup = str(proof.get("coup"))
    given = set()
    for r in proof["rows"]:
        label, key = r["label"], r["key"]
        given.add((label, key))
        want = recorded.get((label, key))
        if want is None:
            problems.append(f"{label} {key}: no proven log row records it")
        elif sha256_hex(dumps(r["row"]).encode("utf-8")) != want:
            problems.append(f"{label} {key}: differs from what its log row recorded "
                            "(the row was changed)")
    if ("tables.coup", coup) not in given:
        problems.append(f"coup {coup}: its own row is not in the proof")
    for label, key in sorted(recorded):
        mine = label in CHILDREN and key.split("#")[0] == coup
        if mine and (label, key) not in given:
            problems.append(f"{label} {key}: recorded for the coup, missing from "
                            "the proof")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="verify_evidence.py coup-proof",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("proof", type=Path)
    p.add_argument("--log-key", action="append", required=True,
                   help="the log's verifier key (TRAIL_LOG_ORIGIN+keyid+key)")
    p.add_argument("--witness-key", action="append", default=[],
                   help="a witness's cosignature/v1 verifier key; repeatable")
    p.add_argument("--quorum", type=int, help="default: every witness key given")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        proof = json.loads(args.proof.read_text(encoding="utf-8"))
        log_keys = [tlog.parse_vkey(k) for k in args.log_key]
        witness_keys = [tlog.parse_vkey(k) for k in args.witness_key]
        quorum = len(witness_keys) if args.quorum is None else args.quorum
        problems = check(proof, log_keys, witness_keys, quorum)
    except (OSError, ValueError, KeyError, TypeError, AttributeError,
            tlog.ProofError) as exc:
        print(f"UNREADABLE: {args.proof}: {type(exc).__name__}: {str(exc)[:200]}",
              file=sys.stderr)
        return 2
    if args.json:
        print(dumps({"ok": not problems, "problems": problems}))
    elif problems:
        print(f"FAILED: coup {proof.get('coup')}", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    else:
        print(f"OK: coup {proof['coup']} proven: {len(proof['log'])} log row(s) in "
              "the signed, cosigned checkpoint; every row matches")
    return 1 if problems else 0
