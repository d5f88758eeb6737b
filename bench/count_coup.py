"""Instructions a coup costs the web process, counted, not timed.

Run from the project root:  .venv/bin/python bench/count_coup.py [--coups 100]

Needs valgrind (Debian's package). Creates the bench database (see
_benchdb.py), then runs the same in-process script twice under
`valgrind --tool=callgrind`, in parallel: once with no coups and once with
`--coups` coups posted through DRF's test client (token auth, validation,
the PostgreSQL path, the response; a banker turn opened after each lost bank,
a new shoe at the cut card). The difference over the count is the
instructions per coup, turn openings included: the same for the same code and
inputs whatever else the machine is doing (a timed figure moved by a third from
run to run on a shared 2-core machine). PostgreSQL's own work is not counted.
Writes var/bench/count_coup.json.

A guard beside bench_http.py's throughput ratio, and a deterministic one: the
script exits 1 when a coup costs more than --budget instructions (17.5
million: 16.3 million on 2026-12-01, 20.4 million for release 738fde4, whose
ratio fell under bench_http's 0.25 on a slowed machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402

BUDGET = 17.5e6


def play(coups: int, tag: str) -> None:
    """The counted part: `coups` coups through the API, in this process."""
    import django

    django.setup()
    from _dealer import ApiDealer
    from rest_framework.test import APIClient

    from casino.tokenauth import token_issue

    user = _benchdb.make_user(f"count-{tag}", "croupier")
    _, session, shoe, _ = _benchdb.open_table(user, f"Count {tag}")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)[1]}")
    dealer = ApiDealer(client, session.pk, shoe.pk)

    def one(k: int) -> None:
        r = dealer.post_coup(dealer.next_coup(), f"{tag}-{k}")
        assert r.status_code == 201, r.content
        nxt = r.json()["next_banker_seat"]
        if nxt is not None:  # the bank was lost: the next seat opens a turn
            r = dealer.open_turn(nxt)
            assert r.status_code == 201, r.content

    for k in range(5):  # both runs warm the same caches before the count
        one(k)
    for k in range(5, 5 + coups):
        one(k)


def counted(coups: int, tag: str, out: Path) -> subprocess.Popen:
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
           sys.executable, __file__, "--play", str(coups), "--tag", tag]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def total(stderr: str) -> int:
    found = re.search(r"Collected : (\d+)", stderr)
    if not found:
        sys.exit("valgrind printed no total:\n" + stderr[-2000:])
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coups", type=int, default=100)
    parser.add_argument("--budget", type=float, default=BUDGET,
                        help="instructions a coup may cost (default %(default)s)")
    parser.add_argument("--play", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = _benchdb.configure()
    if args.play is not None:  # the child, under valgrind
        play(args.play, args.tag)
        return
    if shutil.which("valgrind") is None:
        sys.exit("count_coup: needs valgrind (apt-get install valgrind)")
    print(f"database: {url} (dropped and re-created)")
    _benchdb.recreate_database(url)
    run = f"{random.randrange(16**6):06x}"
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [counted(n, f"{run}-{n}", Path(tmp) / f"cg.{n}")
                for n in (0, args.coups)]
        results = [job.communicate()[1] for job in jobs]
        for job, err in zip(jobs, results, strict=True):
            if job.returncode:
                sys.exit(f"the counted run failed:\n{err[-2000:]}")
    base, full = (total(err) for err in results)
    per = (full - base) / args.coups
    print(f"instructions: {base:,} without coups, {full:,} with {args.coups}; "
          f"{per / 1e6:.2f} million a coup (turn openings included)")
    out = _benchdb.OUT_DIR / "count_coup.json"
    out.write_text(json.dumps({"benchmark": "count_coup", "coups": args.coups,
                               "instructions_base": base, "instructions": full,
                               "per_coup": round(per), "budget": round(args.budget),
                               "held": per <= args.budget}, indent=2) + "\n")
    print(f"written: {out.relative_to(_benchdb.ROOT)}")
    held = per <= args.budget
    print(f"guard (instructions a coup <= {args.budget / 1e6:.1f} million): "
          + ("held" if held else "BROKEN"))
    if not held:
        sys.exit(1)


if __name__ == "__main__":
    main()
