"""The witness's figures (issue 37, docs/witness.md), counted without a
database of 10 million rows.

Run from the project root:  .venv/bin/python bench/bench_witness.py [--size N]

1. A coup's proof in a log of --size leaves (10 million by default): the
   tree is synthetic but a true RFC 6962 tree, every leaf the same but the
   proven coup's log rows (then every complete subtree without them has one
   hash per level, and the ones with them are computed: O(k log n)). The
   proof's rows are a real coup's, as `manage.py prove` writes them (a
   sample from the test suite, bench/data/coup_proof_sample.json, or
   --proof FILE); its inclusion proofs are remade for indexes a third of
   the way into the big tree (a full-length path: the tail's are shorter),
   its checkpoint signed and cosigned by keys made here. The file's size,
   and the standalone verifier's check (coupproof.check: the log's
   signature, a cosignature, every link and inclusion proof, every row's
   digest), median of --runs.
2. What the checkpoint maker costs in Python per second at --tables tables
   (a coup a minute each, two log rows a coup): appending that second's
   leaves to the tree's right edge, the root, the signed note, and one
   consistency proof per witness. The database's part (one read of the new
   rows, one insert of their nodes, the checkpoint's row) is not counted.
Writes var/bench/witness.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: E402
    Ed25519PrivateKey,
)

from tools.evidence_verifier import coupproof, tlog  # noqa: E402

SAMPLE = Path(__file__).resolve().parent / "data" / "coup_proof_sample.json"


class SyntheticTree:
    """A tree of `size` leaves, all `filler` but `special` (index -> leaf
    hash): tlog.Nodes in O(log n) per look-up, O(k log n) memory."""

    def __init__(self, size: int, special: dict[int, bytes]):
        self.size, self.special = size, special
        filler = tlog.leaf_hash(b"filler")
        self.plain = [filler]
        for _ in range(size.bit_length()):
            self.plain.append(tlog.node_hash(self.plain[-1], self.plain[-1]))
        self.memo: dict[tuple[int, int], bytes] = {}

    def get(self, level: int, index: int) -> bytes:
        lo, hi = index << level, (index + 1) << level
        if not any(lo <= i < hi for i in self.special):
            return self.plain[level]
        if level == 0:
            return self.special[index]
        key = (level, index)
        if key not in self.memo:
            self.memo[key] = tlog.node_hash(self.get(level - 1, 2 * index),
                                            self.get(level - 1, 2 * index + 1))
        return self.memo[key]


def proof_in_big_tree(sample: dict, size: int) -> tuple[dict, list, list]:
    proof = copy.deepcopy(sample)
    log_key, witness_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    origin = tlog.checkpoint_parse(
        proof["checkpoint"][:proof["checkpoint"].rfind("\n\n") + 1]).origin
    first = size // 3  # a full-length path (the tail of the tree has shorter ones)
    special = {}
    for n, entry in enumerate(proof["log"]):
        entry["index"] = first + n
        special[entry["index"]] = tlog.leaf_hash(bytes.fromhex(entry["link"]))
    tree = SyntheticTree(size, special)
    root = tlog.root_hash(tree.get, size)
    for entry in proof["log"]:
        entry["inclusion"] = [tlog.b64(h) for h in
                              tlog.inclusion_proof(tree.get, entry["index"], size)]
    text = tlog.Checkpoint(origin, size, root).text()
    proof["checkpoint"] = text + "\n" + tlog.note_sign(text, origin, log_key)
    name = "witness.example/w1"
    proof["cosignatures"] = [tlog.cosign(text, name, witness_key, int(time.time()))]
    log_v = [tlog.parse_vkey(tlog.vkey(origin, tlog.public_raw(log_key.public_key())))]
    wit_v = [tlog.parse_vkey(tlog.vkey(name, tlog.public_raw(witness_key.public_key()),
                                       tlog.ALG_COSIGNATURE_V1))]
    return proof, log_v, wit_v


def checkpoint_cost(tables: int, seconds: int = 30) -> dict:
    """Python time of the checkpoint maker's own work per second of play."""
    rows_per_second = max(1, round(tables * 2 / 60))
    key = Ed25519PrivateKey.generate()
    tree = tlog.MemoryTree()
    for i in range(5000):  # a log already under way
        tree.append(tlog.leaf_hash(i.to_bytes(8, "big")))
    took = []
    for s in range(seconds):
        old = tree.size
        start = time.perf_counter()
        for i in range(rows_per_second):
            tree.append(tlog.leaf_hash(f"{s}-{i}".encode()))
        root = tree.root()
        text = tlog.Checkpoint("casino.example/trail", tree.size, root).text()
        tlog.note_sign(text, "casino.example/trail", key)
        for _ in range(2):  # two witnesses
            tlog.consistency_proof(tree.get, old, tree.size)
        took.append(time.perf_counter() - start)
    per = statistics.median(took)
    return {"tables": tables, "rows_per_second": rows_per_second,
            "python_ms_per_checkpoint": round(per * 1000, 3),
            "share_of_a_core": round(per, 5)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=10_000_000)
    p.add_argument("--proof", type=Path, default=SAMPLE)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--tables", type=int, default=500)
    args = p.parse_args()
    sample = json.loads(args.proof.read_text())
    start = time.perf_counter()
    proof, log_v, wit_v = proof_in_big_tree(sample, args.size)
    built = time.perf_counter() - start
    text = json.dumps(proof, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert coupproof.check(proof, log_v, wit_v, 1) == [], "the proof must hold"
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        coupproof.check(json.loads(text), log_v, wit_v, 1)
        times.append(time.perf_counter() - t)
    result = {
        "log_size": args.size,
        "proof_bytes": len(text.encode("utf-8")),
        "log_rows_in_proof": len(proof["log"]),
        "hashes_per_inclusion_proof": len(proof["log"][0]["inclusion"]),
        "check_ms_median": round(statistics.median(times) * 1000, 3),
        "check_ms_max": round(max(times) * 1000, 3),
        "synthetic_tree_seconds": round(built, 3),
        "checkpoint": checkpoint_cost(args.tables),
    }
    out = ROOT / "var" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "witness.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = result["proof_bytes"] < 4096 and result["check_ms_median"] < 50
    print("OK: under 4 KB, checked in under 50 ms" if ok else
          "ABOVE the aims (4 KB, 50 ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
