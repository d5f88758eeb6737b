"""The evidence bundle's size and build time, and the standalone verifier's
time and peak memory on it (issue 25 items 4-5), over a month of 40 tables
played through the services (`tables.simulation.simulate`: real shuffled
shoes, every coup, stake, finding and turn written by shoe_play with its
change-log rows, links and HMACs: a valid trail), in a PostgreSQL database
of its own (bench_evidence, dropped and re-created unless --reuse).

Run from the project root:
    .venv/bin/python bench/bench_evidence.py [--tables 40] [--days 30]
        [--shoes 13] [--procs 2] [--periods 1,3,10,30] [--reuse] [--seed 1]

The defaults are the issue's month of 40 tables, about 1M coups: 40 tables
x 13 shoes a day (about 62 coups a shoe) x 30 days. Filling is the slow part
(the services write about 1,000 coups a second on an idle core), so it runs
in `--procs` processes, each simulating its share of the tables over the
whole month (the change log's chain lock orders their writes), and the
database is kept: `--reuse` skips the fill and times the bundles again. The
simulator's past-day clock advances one second per reading, which leaves
room for 250 shoes a day floor-wide; the bench advances it a quarter second
(still every record of a day within its gaming day), so 40 x 13 shoes fit.

The fill runs without beat, so the bench then anchors the last log row of
each hour of the simulated clock, as beat would have (signed like every
anchor). Then, for each period of `--periods` (the last N gaming days every table
played whole, default all of them: a period just closed, so the log after
it is short, as when a month's bundle is asked for after the month): the bundle
is built (`evidence_build`, timed, its process's peak memory) and the
verifier run as the regulator runs it (its own Python, `/usr/bin/time` for
its peak memory). Prints, and writes to var/bench/evidence.json: coups, log
rows, the bundle's bytes, build and verify seconds (wall and CPU: the machine
is shared, and the CPU time is what the work costs; per coup too), peak
memories, and the load average before, between and after. Both use two
processes (issue 34 item 6): the build writes the log's parts in a forked
one beside the ledger part, the verifier re-settles in another while its
main one checks the log and rows, then joins it; /usr/bin/time's CPU
counts both, and the peak memory is the larger process's.
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_evidence")
import _benchdb  # noqa: E402

OUT = _benchdb.OUT_DIR / "evidence.json"
# Beside each database, kept for --reuse: its signing key (the bench's own)
# and its anchors.
_NAME = _benchdb.bench_url().rsplit("/", 1)[-1]
KEY = _benchdb.OUT_DIR / f"{_NAME}-signing.key"
PEM = _benchdb.OUT_DIR / f"{_NAME}-key.pem"
ANCHORS = _benchdb.OUT_DIR / f"{_NAME}-anchors"
START = date(2026, 1, 1)
STEP = timedelta(seconds=0.25)


def _key() -> None:
    """The signing key (TRAIL_SIGNING_KEY, raw seed in base64), made once and
    kept beside the database it signed anchors of; its public half as PEM
    for the verifier."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not KEY.exists():
        raw = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
            serialization.NoEncryption())
        KEY.write_text(base64.b64encode(raw).decode())
    seed = base64.b64decode(KEY.read_text())
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    PEM.write_bytes(public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    os.environ["TRAIL_SIGNING_KEY"] = KEY.read_text()


@contextmanager
def _quarter_clock(day: date, hour: int = 12):
    """tables.sim_patterns.clock_at, a quarter second a reading."""
    from django.utils import timezone

    state = {"t": timezone.make_aware(datetime.combine(day, clock(hour))
                                      ).astimezone(UTC)}
    real = timezone.now

    def now() -> datetime:
        t = state["t"]
        state["t"] = t + STEP
        return t

    timezone.now = now
    try:
        yield
    finally:
        timezone.now = real


def _fill_part(part: int, tables: int, args, start: date = START) -> int:
    """One process's share: `tables` tables over the month (from `start`,
    a fill stopped earlier going on: a day after its last, partial one)."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from tables import simulation

    simulation.clock_at = _quarter_clock
    simulation.SHOES_PER_DAY = 10**6
    user = get_user_model().objects.get(username="bench-evidence")
    skipped = (start - START).days
    # the same seed: simulate names its tables after it ("<prefix> <seed>-<n>")
    report = simulation.simulate(
        user=user, tables=tables, shoes=args.shoes, seed=args.seed * 100 + part,
        days=args.days - skipped, start=start, table_prefix=f"Bench{part}")
    return report.coups


def fill(args) -> float:
    url = _benchdb.bench_url()
    start = START
    if args.resume:
        # a fill stopped midway goes on from the day after its last one (that
        # one stays partial), on the same tables
        _key()
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        from django.db.models import Max

        from tables.models import Coup

        start = Coup.objects.aggregate(m=Max("gaming_day"))["m"] + timedelta(days=1)
        print(f"database: {url}, the fill going on from {start}", flush=True)
    else:
        print(f"database: {url} (dropped and re-created)", flush=True)
        for path in ANCHORS.glob("*"):
            path.unlink()
        KEY.unlink(missing_ok=True)
        _key()
        _benchdb.recreate_database(url)
        _benchdb.make_user("bench-evidence", "croupier")
    (_benchdb.OUT_DIR / f"{_NAME}-filled").unlink(missing_ok=True)
    from django.db import connections

    connections.close_all()  # the children open their own
    shares = [args.tables // args.procs + (i < args.tables % args.procs)
              for i in range(args.procs)]
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(args.procs) as pool:
        coups = pool.starmap(_fill_part, [(i, n, args, start)
                                          for i, n in enumerate(shares) if n])
    seconds = time.perf_counter() - t0
    print(f"filled {sum(coups):,} coups in {seconds:.0f} s "
          f"({sum(coups) / seconds:,.0f} coups/s, {args.procs} processes)",
          flush=True)
    (_benchdb.OUT_DIR / f"{_NAME}-filled").write_text(f"{sum(coups)}\n")
    return seconds


def last_complete_day() -> date:
    """The last gaming day every table played whole: with the fill finished,
    the last; with it stopped midway (each process is then within its day),
    the day before the earliest of the tables' last days."""
    from django.db.models import Max, Min

    from tables.models import Coup

    last = (Coup.objects.values("shoe__session__table_id")
            .annotate(d=Max("gaming_day")).aggregate(m=Min("d"))["m"])
    if (_benchdb.OUT_DIR / f"{_NAME}-filled").exists():
        return last
    return last - timedelta(days=1)


def anchor_as_beat() -> int:
    """Anchors as beat takes them in production (every TRAIL_ANCHOR_MINUTES):
    the fill runs without beat, so the last row of each hour of the
    simulated clock is anchored now (signed, as every anchor), once. Without
    them a bundle's log segment would run to the anchor its build takes at
    the head. Returns how many were written."""
    from django.db.models import Max
    from django.db.models.functions import TruncHour

    from casino.anchors import anchor_write, anchors_list
    from casino.models import ChangeLog

    on_file = {a.row for a in anchors_list()}
    ends = sorted(m for m in ChangeLog.objects.annotate(h=TruncHour("at"))
                  .values("h").annotate(m=Max("id")).values_list("m", flat=True)
                  if m not in on_file)
    rows = ChangeLog.objects.filter(id__in=ends).values_list("id", "hash", "link")
    for row, digest, link in rows.order_by("id"):
        anchor_write(row, digest, "bench: the hour's last row, as beat", link)
    return len(ends)


def measure(days: int, end: date) -> dict:
    """A bundle of the `days` gaming days up to `end` (a period just closed:
    the log after it is short, as when a bundle is asked for after a
    month), built, then verified."""
    from tables.models import Coup

    first = end - timedelta(days=days - 1)
    coups = Coup.objects.filter(gaming_day__gte=first, gaming_day__lte=end).count()
    out = _benchdb.OUT_DIR / f"{_NAME}-{days}d.zip"
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    # its own process, so that its peak memory is the build's alone
    done = subprocess.run(
        ["/usr/bin/time", "-f", TIME_FORMAT, sys.executable, __file__, "--build-only",
         first.isoformat(), end.isoformat(), str(out)],
        capture_output=True, text=True)
    build = time.perf_counter() - t0
    if done.returncode != 0:
        print(done.stdout, done.stderr)
        sys.exit("bench: the bundle was not built")
    build_kb, build_cpu = _time(done.stderr)
    manifest = json.loads(done.stdout.strip().splitlines()[-1])
    load_mid = os.getloadavg()[0]
    verifier = _benchdb.ROOT / "tools" / "verify_evidence.py"
    t0 = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", TIME_FORMAT, sys.executable, str(verifier), str(out),
         "--public-key", str(PEM)], capture_output=True, text=True)
    verify = time.perf_counter() - t0
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:])
        sys.exit("bench: the verifier did not accept the bundle")
    verify_kb, verify_cpu = _time(done.stderr)
    index = next((line for line in done.stdout.splitlines()
                  if "indexed in a temporary file" in line), "")
    parts = manifest["parts"]
    result = {
        "days": days, "from": first.isoformat(), "to": end.isoformat(),
        "coups": coups,
        "ledger_rows": parts["ledger.jsonl"]["lines"],
        "log_rows": parts["log.jsonl"]["lines"],
        "uncompressed_bytes": sum(p["bytes"] for p in parts.values()),
        "bundle_bytes": out.stat().st_size,
        "build_seconds": round(build, 1), "build_cpu_seconds": build_cpu,
        "build_peak_rss_mb": build_kb // 1024,
        "verify_seconds": round(verify, 1), "verify_cpu_seconds": verify_cpu,
        "verify_peak_rss_mb": verify_kb // 1024,
        "verify_index": index.removeprefix("Note: "),
        # per coup, to compare periods of other sizes (issue 34 item 6: a
        # month of 40 tables is ~940k coups); the build's CPU is its own
        # processes', not the database server's
        "build_cpu_us_per_coup": round(build_cpu * 1e6 / max(coups, 1)),
        "verify_cpu_us_per_coup": round(verify_cpu * 1e6 / max(coups, 1)),
        "load_1m": [round(load_before, 2), round(load_mid, 2),
                    round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(result), flush=True)
    return result


TIME_FORMAT = "%M %U %S"  # /usr/bin/time: peak RSS (KB), user and system CPU seconds


def _time(stderr: str) -> tuple[int, float]:
    """(peak RSS in KB, CPU seconds) from /usr/bin/time's last line: on a
    shared machine the CPU time says what the work costs, the wall time what
    it took among the others."""
    kb, user, system = stderr.strip().splitlines()[-1].split()
    return int(kb), round(float(user) + float(system), 1)


def build_only(first: str, last: str, out: str) -> None:
    import django

    django.setup()
    from audit.evidence.build import evidence_build

    manifest = evidence_build(from_day=date.fromisoformat(first),
                              to_day=date.fromisoformat(last), path=Path(out))
    print(json.dumps({"parts": manifest["parts"]}))


def main() -> None:
    if sys.argv[1:2] == ["--build-only"]:
        _benchdb.configure()
        os.environ["TRAIL_ANCHOR_DIR"] = str(ANCHORS)
        _key()
        build_only(*sys.argv[2:5])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=40)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--shoes", type=int, default=13)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--periods", default="",
                        help="gaming days per bundle, comma-separated (default: "
                        "the whole --days)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the database filled by a previous run")
    parser.add_argument("--end", help="the periods' last gaming day (default: "
                        "the last every table played whole)")
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--resume", action="store_true",
                        help="go on with a fill that was stopped (its last day "
                        "stays partial)")
    args = parser.parse_args()
    _benchdb.configure()
    os.environ["TRAIL_ANCHOR_DIR"] = str(ANCHORS)
    ANCHORS.mkdir(parents=True, exist_ok=True)
    machine = _benchdb.machine()
    fill_seconds = None
    if args.reuse:
        _key()
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)  # code moved on
    else:
        fill_seconds = fill(args)
    if args.fill_only:
        return
    from tables.models import Coup

    print(f"{anchor_as_beat()} anchors written (the hours of the fill)",
          flush=True)
    end = (date.fromisoformat(args.end) if args.end else last_complete_day())
    periods = [int(p) for p in args.periods.split(",") if p] or [
        (end - START).days + 1]
    print(f"periods of {periods} gaming days up to {end}", flush=True)
    result = {"benchmark": "evidence", "tables": args.tables, "days": args.days,
              "shoes_a_day": args.shoes, "coups_in_database": Coup.objects.count(),
              "fill_seconds": fill_seconds and round(fill_seconds),
              "runs": [measure(days, end) for days in periods],
              "machine_before": machine, "machine_after": _benchdb.machine()}
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {OUT.relative_to(_benchdb.ROOT)}")


if __name__ == "__main__":
    main()
