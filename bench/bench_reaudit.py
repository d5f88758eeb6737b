"""Re-audit at scale: N coups checked again against a changed tableau by 1,
then 2 Celery workers; the findings checked against a plain engine run.

    .venv/bin/python bench/bench_reaudit.py [--coups 1000000] [--reuse]

The database (bench_reaudit, dropped and re-created; BENCH_DATABASE_URL to
change it) gets bench_reports' floor: 20 tables x 365 gaming days, one
session, shoe and banker turn per table-day (bench_reports.setup_floor). The
coups are REAL cards: 6-deck shoes shuffled in Python (seeded), dealt coup
after coup until the cut card (seven cards left), each coup played by the
rules (the punter's rule; the banker's tableau, chemmy-standard-1, a free
choice in its optional cells drawn at random), except that a croupier gets
0.5 % of coups wrong (he draws where he must stand or stands where he must
draw; now and then a third card after a natural). Each coup is judged by
tables.chemmy.evaluate as coup_record would, and stored with its totals,
outcome, choices and findings (as the app records them). The engine runs
once per distinct situation (the cards' point values, the draws made);
rows go to PostgreSQL by COPY into a staging table, then one INSERT ...
SELECT fills tables_coup and tables_finding (bench_reports._fill gives the
other columns their defaults). 0.2 % of coups are then corrected: a second
revision with other cards (and their findings), so that only the latest
revision counts. The rollups are built in SQL (bench_reports.build_rollups)
before the corrections (a correction replaces a coup in its cell).

A manager then derives a tableau (tables.services.tableaux.tableau_derive)
with three cells changed: 3/9 S (was optional), 4/1 D (was stand) and 5/6 O
(was draw), so findings appear and recorded false draws disappear. The
re-audit against it is requested as the app does (reaudit_request, its chunk
plan and chord) and run by real `celery -A casino worker` processes
(concurrency 1 each, Redis db 12 unless --redis), first 1, then 2; coups/s
from the request to the run's finish. CPU time of the workers (main and pool
processes) and of this database's PostgreSQL backends is sampled from /proc
around each run, to say what limits. Then every current coup is judged by
chemmy.evaluate in this process, without memo, and the run's findings must
be exactly the ones that appear and disappear (same rows, messages and
details, none twice), else exit 1. Results: var/bench/reaudit.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_reaudit")
import _benchdb  # noqa: E402
import _workers  # noqa: E402
import bench_reports  # noqa: E402  (its floor, _fill and rollups, reused)

ROOT = _benchdb.ROOT
OUT = _benchdb.OUT_DIR / "reaudit.json"
START, DAYS, CELLS = bench_reports.START, bench_reports.DAYS, bench_reports.CELLS
STANDARD, VARIANT = "chemmy-standard-1", "bench-variant-1"
CHANGED = {"3/9": "S", "4/1": "D", "5/6": "O"}
ERROR_RATE, NATURAL_ERROR_RATE, CORRECTED = 0.005, 0.0005, 0.002
DECKS = 6


# -- dealing ------------------------------------------------------------------


class Dealer:
    """Coups dealt from shuffled shoes and played by the rules (with a
    croupier's mistakes), each judged by the engine once per situation."""

    def __init__(self, seed: int):
        from tables import chemmy

        self.chemmy, self.rng = chemmy, random.Random(seed)
        self.cells = chemmy.STANDARD_TABLEAU.cells
        self.points = chemmy.POINTS
        self.shoe: list[str] = []
        self.pos = 0
        self.verdicts: dict[tuple, tuple] = {}

    def _card(self) -> str:
        if self.pos >= len(self.shoe) - self.chemmy.MIN_CARDS_TO_DEAL:
            self.shoe = list(self.chemmy.ALL_CODES) * DECKS
            self.rng.shuffle(self.shoe)
            self.pos = 1 + self.rng.randrange(8)  # burned
        card = self.shoe[self.pos]
        self.pos += 1
        return card

    def coup(self) -> tuple[list[str], list[str]]:
        rng, pts, card = self.rng, self.points, self._card
        p1, b1, p2_, b2_ = card(), card(), card(), card()
        p, b = [p1, p2_], [b1, b2_]
        pt, bt = (pts[p1] + pts[p2_]) % 10, (pts[b1] + pts[b2_]) % 10
        mistake = rng.random() < ERROR_RATE
        side = rng.random() < 0.5  # True: the punter's mistake
        if pt >= 8 or bt >= 8:
            if rng.random() < NATURAL_ERROR_RATE:
                (p if side else b).append(card())
            return p, b
        draw = pt <= 4 or (pt == 5 and rng.random() < 0.5)
        if mistake and side and pt != 5:
            draw = not draw
        if draw:
            p.append(card())
        col = 0 if not draw else 1 + pts[p[2]]
        action = self.cells[bt * 11 + col].value
        bank = action == "D" or (action == "O" and rng.random() < 0.5)
        if mistake and not side and action != "O":
            bank = not bank
        if bank:
            b.append(card())
        return p, b

    def judge(self, p: list[str], b: list[str]):
        """evaluate(), once per situation: the point values, and for a coup
        with a natural the third cards themselves (their finding names them)."""
        pts = self.points
        key = (tuple(pts[c] for c in p), tuple(pts[c] for c in b))
        natural = max(sum(key[0][:2]) % 10, sum(key[1][:2]) % 10) >= 8
        if natural and len(p) + len(b) > 4:
            key = (tuple(p), tuple(b))
        got = self.verdicts.get(key)
        if got is None:
            v = self.chemmy.evaluate(p, b)
            got = self.verdicts[key] = (
                v.punter_total, v.banker_total, v.outcome.value, v.natural or "",
                v.punter_choice or "", v.banker_choice or "",
                [(f.code, f.severity, f.side or "", json.dumps(dict(f.detail)),
                  f.message) for f in v.findings])
        return got


def _text(cards: list[str]) -> str:
    return '["' + '", "'.join(cards) + '"]'  # json.dumps's text, faster


def deal(n: int, seed: int, first_id: int = 1, revision: int = 1, ids=None):
    """COPY n coups into the staging tables; returns the findings count."""
    from django.db import connection

    dealer = Dealer(seed)
    found = 0
    connection.ensure_connection()
    raw = connection.connection
    with raw.cursor() as cur:
        cur.execute("CREATE UNLOGGED TABLE IF NOT EXISTS bench_deal (id int8, "
                    "rev int2, p text, b text, pt int2, bt int2, outcome text, "
                    "nat text, pc text, bc text, nf int2)")
        cur.execute("CREATE UNLOGGED TABLE IF NOT EXISTS bench_found (coup int8, "
                    "code text, severity text, side text, detail text, message text)")
        cur.execute("TRUNCATE bench_deal, bench_found")
        coups, finds = io.StringIO(), io.StringIO()
        for i in range(n):
            cid = ids[i] if ids is not None else first_id + i
            p, b = dealer.coup()
            pt, bt, outcome, nat, pc, bc, fs = dealer.judge(p, b)
            coups.write(f"{cid}\t{revision}\t{_text(p)}\t{_text(b)}\t{pt}\t"
                        f"{bt}\t{outcome}\t{nat}\t{pc}\t{bc}\t{len(fs)}\n")
            for code, sev, side, detail, msg in fs:
                finds.write(f"{cid}\t{code}\t{sev}\t{side}\t{detail}\t{msg}\n")
                found += 1
            if i % 200_000 == 199_999 or i == n - 1:
                for table, buf in (("bench_deal", coups), ("bench_found", finds)):
                    with cur.copy(f"COPY {table} FROM STDIN") as copy:
                        copy.write(buf.getvalue())
                    buf.seek(0)
                    buf.truncate()
    return found


def _coup_columns(t0: int, croupiers, *, with_id: bool) -> tuple[str, str]:
    """tables_coup's columns from bench_deal d: coup number d.id (1-based) is
    at cell (d.id - 1) % CELLS as bench_reports lays them out; a revision 2
    takes the corrected coup's shoe and seq, and an id of its own. t0: the
    first table's id (each coup under its table's own house rules)."""
    from tables.models import Coup, Table

    g = "(d.id - 1)::int4"
    day = f"DATE '{START}' + (({g} % {CELLS}) / {bench_reports.TABLES})"
    given = {
        "shoe_id": f"{g} % {CELLS} + 1", "turn_id": f"{g} % {CELLS} + 1",
        "seq": f"({g} / {CELLS} + 1)", "revision": "d.rev",
        "rules_id": f"(SELECT r.rules_id FROM {Table._meta.db_table} r WHERE r.id "
                    f"= {t0} + ({g} % {CELLS}) % {bench_reports.TABLES})",
        "tableau_version": f"'{STANDARD}'",
        "gaming_day": day,
        "created_at": f"({day})::timestamptz + interval '20 hours' "
                      f"+ ({g} / {CELLS}) * interval '1 second'",
        "entered_by_id": f"{croupiers[0]} + d.id % {len(croupiers)}",
        "punter_cards": "d.p::jsonb", "banker_cards": "d.b::jsonb",
        "punter_total": "d.pt", "banker_total": "d.bt", "outcome": "d.outcome",
        "natural": "d.nat", "punter_choice": "d.pc", "banker_choice": "d.bc",
        "banker_seat": "1", "punter_seat": "2", "bank_before": "1000",
        "covered": "100", "garage": "0",
        "commission": "CASE WHEN d.outcome = 'banker' THEN 5 ELSE 0 END",
        "bank_after": "1000", "cards_left_before": "300", "finding_count": "d.nf",
    }
    if with_id:
        given["id"] = "d.id"
    return bench_reports._fill(Coup, given)


def load(n: int, seed: int, t0: int, croupiers) -> dict:
    """n coups dealt and stored, then one in 500 given a revision 2."""
    from django.db import connection

    from tables.models import Coup, Finding

    c, f = Coup._meta.db_table, Finding._meta.db_table
    started = time.perf_counter()
    deal(n, seed)
    fcols, fexprs = bench_reports._fill(Finding, {
        "coup_id": "x.coup_id", "code": "f.code", "severity": "f.severity",
        "side": "f.side", "detail": "f.detail::jsonb", "message": "f.message",
        "tableau_version": f"'{STANDARD}'"})
    with connection.cursor() as cur:
        cols, exprs = _coup_columns(t0, croupiers, with_id=True)
        cur.execute(f"INSERT INTO {c} ({cols}) SELECT {exprs} FROM bench_deal d "
                    "ORDER BY d.id")
        cur.execute(f"INSERT INTO {f} ({fcols}) SELECT {fexprs} FROM bench_found f "
                    "JOIN LATERAL (SELECT f.coup AS coup_id) x ON true ORDER BY f.coup")
        cur.execute(f"SELECT setval(pg_get_serial_sequence('{c}', 'id'), {n})")
        dealt = time.perf_counter() - started
        rollups = bench_reports.build_rollups()
        # the corrections: a revision 2 of every 500th coup, other cards
        fixed = list(range(7, n + 1, round(1 / CORRECTED)))
        deal(len(fixed), seed + 1, revision=2, ids=fixed)
        cols, exprs = _coup_columns(t0, croupiers, with_id=False)
        cur.execute(f"INSERT INTO {c} ({cols}) SELECT {exprs} FROM bench_deal d "
                    "ORDER BY d.id")
        cur.execute(f"INSERT INTO {f} ({fcols}) SELECT {fexprs} FROM bench_found f "
                    f"JOIN LATERAL (SELECT id AS coup_id FROM {c} WHERE revision = 2 "
                    f"AND shoe_id = (f.coup - 1) % {CELLS} + 1 "
                    f"AND seq = (f.coup - 1) / {CELLS} + 1) x ON true")
        cur.execute("DROP TABLE bench_deal, bench_found")
        cur.execute("VACUUM ANALYZE")
        cur.execute(f"SELECT count(*), count(*) FILTER (WHERE revision = 2) FROM {c}")
        rows, corrected = cur.fetchone()
        cur.execute(f"SELECT code, count(*) FROM {f} GROUP BY 1 ORDER BY 1")
        findings = dict(cur.fetchall())
    return {"coup_rows": rows, "corrected": corrected, "findings": findings,
            "deal_and_copy_s": round(dealt, 1), "rollups_s": round(rollups, 1),
            "total_s": round(time.perf_counter() - started, 1)}


# -- the runs -----------------------------------------------------------------


def reaudit_once(n_workers: int, redis: str, url: str, manager, chunk_size) -> dict:
    from django.db import connection

    from audit.reports.models import ReauditRun
    from audit.reports.reaudit import reaudit_request

    dbname = url.rsplit("/", 1)[-1]
    workers = _workers.Workers(n_workers, redis, url)
    try:
        wpids = workers.pids()
        before = {p: _workers.cpu_of(p) for p in wpids}
        pg_before = _workers.pg_cpu(dbname)
        busy0, total0 = _workers.machine_cpu()
        stall0 = _workers.cpu_stall_us()
        t0 = time.perf_counter()
        kwargs = {"chunk_size": chunk_size} if chunk_size else {}
        run = reaudit_request(user=manager, from_day=START,
                              to_day=START + timedelta(days=DAYS - 1),
                              tableau_version=VARIANT, device="bench", **kwargs)
        while True:
            run.refresh_from_db()
            if run.status in ("done", "failed"):
                break
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        busy1, total1 = _workers.machine_cpu()
        stall = (_workers.cpu_stall_us() - stall0) / 1e6
        worker_cpu = sum(_workers.cpu_of(p) - before.get(p, 0.0) for p in wpids)
        pg_after = _workers.pg_cpu(dbname)
        pg_cpu = sum(v - pg_before.get(p, 0.0) for p, v in pg_after.items())
    finally:
        workers.stop()
    in_tasks = _workers.task_seconds(workers.logs)
    run = ReauditRun.objects.get(pk=run.pk)
    if run.status != "done":
        sys.exit(f"re-audit failed: {run.error}")
    elapsed = (run.finished_at - run.requested_at).total_seconds()
    connection.close()
    return {"workers": n_workers, "run": run.pk, "chunks": run.chunks_total,
            "coups": run.coups_checked, "seconds": round(elapsed, 2),
            "wall_s": round(wall, 2),
            "coups_per_s": round(run.coups_checked / elapsed),
            "findings": run.findings, "new": run.findings_new,
            "cleared": run.findings_cleared,
            "worker_time_in_chunks_pct": round(100 * in_tasks / (n_workers * wall)),
            "cpu_s": {"workers": round(worker_cpu, 1), "postgres": round(pg_cpu, 1),
                      "machine_busy_pct": round(100 * (busy1 - busy0)
                                                / max(1, total1 - total0), 1),
                      "cpu_wait_pct": round(100 * stall / wall),
                      "loadavg_1m_after": round(os.getloadavg()[0], 2)}}


# -- the check ------------------------------------------------------------------


def engine_changes() -> tuple[dict, int]:
    """Every current coup judged by chemmy.evaluate here, no memo: what must
    appear and disappear, {(coup, code, side): (change, severity, detail,
    message)}, and how many findings are kept."""
    from django.db import connection, transaction

    from audit.reports.reaudit import ENGINE_CODES
    from tables import chemmy
    from tables.models import TableauVersion

    tableau = TableauVersion.objects.get(version=VARIANT).as_engine()
    recorded: dict[int, dict] = {}
    with connection.cursor() as cur:
        cur.execute("SELECT coup_id, code, side, severity, detail::text, message "
                    "FROM tables_finding WHERE code = ANY(%s)", [list(ENGINE_CODES)])
        for coup, code, side, sev, detail, msg in cur.fetchall():
            recorded.setdefault(coup, {})[(code, side)] = (sev, json.loads(detail), msg)
    want: dict[tuple, tuple] = {}
    kept = 0
    with transaction.atomic(), connection.chunked_cursor() as cur:
        cur.execute("SELECT c.id, c.punter_cards, c.banker_cards FROM tables_coup c "
                    "WHERE NOT EXISTS (SELECT 1 FROM tables_coup n WHERE "
                    "n.shoe_id = c.shoe_id AND n.seq = c.seq "
                    "AND n.revision > c.revision)")
        while rows := cur.fetchmany(20_000):
            for coup, p, b in rows:
                p, b = json.loads(p), json.loads(b)  # Django loads jsonb as text
                before = recorded.get(coup, {})
                now = {(f.code, f.side or ""): f for f in chemmy.evaluate(
                    p, b, tableau=tableau).findings if f.code in ENGINE_CODES}
                for key, f in now.items():
                    if key in before:
                        kept += 1
                    else:
                        want[(coup, *key)] = ("new", f.severity, dict(f.detail),
                                              f.message)
                for key, (sev, detail, msg) in before.items():
                    if key not in now:
                        want[(coup, *key)] = ("cleared", sev, detail,
                                              f"cleared under {VARIANT}: {msg}"[:300])
    return want, kept


def check(result: dict, want: dict, kept: int) -> list[str]:
    """What differs between the run's rows and the engine's (empty: none)."""
    from audit.reports.models import ReauditFinding

    rows = list(ReauditFinding.objects.filter(run_id=result["run"]).values_list(
        "coup_id", "code", "side", "change", "severity", "detail", "message",
        "tableau_version"))
    got = {(c, code, side): (ch, sev, det, msg)
           for c, code, side, ch, sev, det, msg, _ in rows}
    errors = []
    twice = len(rows) - len(got)
    if twice:
        errors.append(f"{twice} findings written twice")
    if {r[-1] for r in rows} - {VARIANT}:
        errors.append("a finding under another tableau version")
    missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
    differ = [k for k in want.keys() & got.keys() if want[k] != got[k]]
    for name, keys in (("missing", missing), ("extra", extra), ("differ", differ)):
        if keys:
            errors.append(f"{len(keys)} {name}, e.g. {sorted(keys)[:3]}")
    counts = Counter(v[0] for v in want.values())
    expect = (counts["new"] + kept, counts["new"], counts["cleared"])
    if (result["findings"], result["new"], result["cleared"]) != expect:
        errors.append(f"counts {result['findings'], result['new'], result['cleared']}"
                      f" != engine's {expect}")
    return errors


# -- main -------------------------------------------------------------------------


def _table(results: list[dict]) -> str:
    head = (f"{'workers':>7} {'chunks':>6} {'coups':>10} {'seconds':>8} "
            f"{'coups/s':>9} {'worker CPU s':>12} {'PG CPU s':>9} {'machine %':>9}")
    lines = [head]
    for r in results:
        cpu = r["cpu_s"]
        lines.append(f"{r['workers']:>7} {r['chunks']:>6} {r['coups']:>10} "
                     f"{r['seconds']:>8} {r['coups_per_s']:>9} {cpu['workers']:>12} "
                     f"{cpu['postgres']:>9} {cpu['machine_busy_pct']:>9}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coups", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--chunk-size", type=int, default=0,
                        help="0: the service's default")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--reuse", action="store_true",
                        help="re-audit the database as it is (no refill)")
    args = parser.parse_args()
    url = _benchdb.configure()
    started = _benchdb.machine()  # the code and the load as the run starts
    os.environ["REDIS_URL"] = args.redis
    os.environ["CONN_MAX_AGE"] = "600"
    import django

    from casino.celery import app

    loaded = None
    if args.reuse:
        django.setup()
    else:
        _benchdb.recreate_database(url)
        t0, _, croupiers = bench_reports.setup_floor()
        loaded = load(args.coups, args.seed, t0, croupiers)
        print(json.dumps({"loaded": loaded}), flush=True)
    from django.contrib.auth import get_user_model

    from tables.models import TableauVersion
    from tables.services.tableaux import tableau_derive

    manager = get_user_model().objects.get(username="bench-manager")
    if not TableauVersion.objects.filter(version=VARIANT).exists():
        tableau_derive(from_version=STANDARD, version=VARIANT, cells=CHANGED,
                       user=manager, reason="bench: three cells changed")
    app.control.purge()
    results = [reaudit_once(int(n), args.redis, url, manager, args.chunk_size)
               for n in args.workers.split(",")]
    print(_table(results), flush=True)
    t = time.perf_counter()
    want, kept = engine_changes()
    engine_s = time.perf_counter() - t
    errors = {r["workers"]: check(r, want, kept) for r in results}
    out = {"database": url.rsplit("/", 1)[-1], "machine": started,
           "machine_at_end": _benchdb.machine(),
           "pg": _benchdb.pg_settings(), "loaded": loaded, "tableau": VARIANT,
           "changed_cells": CHANGED, "runs": results,
           "engine_single_process_s": round(engine_s, 1),
           "engine_changes": {"new": sum(v[0] == "new" for v in want.values()),
                              "cleared": sum(v[0] == "cleared" for v in want.values()),
                              "kept": kept},
           "findings_equal": not any(errors.values()), "errors": errors}
    by = {r["workers"]: r["coups_per_s"] for r in results}
    if 1 in by and 2 in by:
        out["speedup_2_vs_1"] = round(by[2] / by[1], 2)
        out["aims"] = {"2 workers >= 50000 coups/s": by[2] >= 50_000,
                       "2 workers >= 1.7 x 1": by[2] >= 1.7 * by[1]}
    for r in results:
        cpu = r["cpu_s"]
        share = cpu["workers"] / max(1e-9, r["seconds"] * r["workers"])
        r["limit"] = (
            f"workers in chunk tasks {r['worker_time_in_chunks_pct']} % of the "
            f"time, on a CPU {share:.0%}; PostgreSQL {cpu['postgres']} CPU s "
            f"(exited backends of every database included); machine "
            f"{cpu['machine_busy_pct']} % busy, a task waiting for a CPU "
            f"{cpu['cpu_wait_pct']} % of the time")
        print(f"{r['workers']} worker(s): {r['limit']}")
    OUT.write_text(json.dumps(out, indent=2, default=str))
    print(json.dumps({k: out[k] for k in ("engine_changes", "findings_equal",
                                          "speedup_2_vs_1", "aims") if k in out}))
    print(f"written {OUT}")
    if not out["findings_equal"]:
        print(json.dumps(errors, indent=2, default=str))
        sys.exit(1)


if __name__ == "__main__":
    main()
