"""The evidence bundle's size and build time, and the standalone verifier's
time on it (issue 25 items 4-5), over a period played through the services
(`tables.simulation.simulate`: real coups, stakes, findings, turns and the
change log with its links), in a fresh PostgreSQL database (_benchdb.py).

Run from the project root:
    .venv/bin/python bench/bench_evidence.py [--tables 40] [--days 30]
        [--shoes 3] [--seed 1]

The defaults are the issue's month of 40 tables at the most shoes the
simulator deals in a past day (tables x shoes <= SHOES_PER_DAY, 250): 40 x 6
shoes x 30 days, about 430,000 coups; `--days 60` doubles it. Filling takes
about 1 ms a coup. Prints and
writes to var/bench/evidence.json: coups, log rows, the bundle's bytes,
build seconds, verifier seconds and its peak memory (the verifier runs as
the regulator runs it: its own Python process).
"""

from __future__ import annotations

import argparse
import base64
import json
import resource
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--shoes", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    raw = key.private_bytes(serialization.Encoding.Raw,
                            serialization.PrivateFormat.Raw,
                            serialization.NoEncryption())
    import os

    os.environ["TRAIL_SIGNING_KEY"] = base64.b64encode(raw).decode()
    url = _benchdb.configure()
    anchors = _benchdb.OUT_DIR / "evidence-anchors"
    os.environ["TRAIL_ANCHOR_DIR"] = str(anchors)
    print(f"database: {url} (dropped and re-created)")
    _benchdb.recreate_database(url)

    from django.utils import timezone

    from audit.evidence.build import evidence_build
    from tables.models import Coup
    from tables.simulation import simulate

    user = _benchdb.make_user("bench-evidence", "croupier")
    start = timezone.localdate() - timedelta(days=args.days + 1)
    t0 = time.perf_counter()
    simulate(user=user, tables=args.tables, shoes=args.shoes, seed=args.seed,
             days=args.days, start=start)
    fill = time.perf_counter() - t0
    coups = Coup.objects.count()
    print(f"filled {coups} coups in {fill:.0f} s")
    last = start + timedelta(days=args.days - 1)
    out = _benchdb.OUT_DIR / "evidence.zip"
    t0 = time.perf_counter()
    manifest = evidence_build(from_day=start, to_day=last, path=out)
    build = time.perf_counter() - t0
    build_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    pem = _benchdb.OUT_DIR / "evidence-key.pem"
    pem.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    verifier = _benchdb.ROOT / "tools" / "verify_evidence.py"
    t0 = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, str(verifier), str(out),
         "--public-key", str(pem)], capture_output=True, text=True)
    verify = time.perf_counter() - t0
    verify_kb = int(done.stderr.strip().splitlines()[-1])
    if done.returncode != 0:
        print(done.stdout, done.stderr)
        sys.exit("bench: the verifier did not accept the bundle")
    parts = manifest["parts"]
    result = {
        "tables": args.tables, "days": args.days, "coups": coups,
        "ledger_rows": parts["ledger.jsonl"]["lines"],
        "log_rows": parts["log.jsonl"]["lines"],
        "uncompressed_bytes": sum(p["bytes"] for p in parts.values()),
        "bundle_bytes": out.stat().st_size,
        "build_seconds": round(build, 1), "build_peak_rss_mb": build_rss,
        "verify_seconds": round(verify, 1),
        "verify_peak_rss_mb": verify_kb // 1024,
        "machine": _benchdb.machine(),
    }
    print(json.dumps(result, indent=2))
    (_benchdb.OUT_DIR / "evidence.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
