"""Surveillance at scale: the nightly run over one gaming day of a 40-table
casino (~30,000 coups) and a run over a month (~1M coups), each timed end to
end — collect (the coups from PostgreSQL into numpy), detect (the statistics
core, one false discovery control), write (the alerts' flags, evidence and
trail rows, the run's summary) — through the same service the Celery task
calls (audit/surveillance/runs.py surveillance_execute).

    .venv/bin/python bench/bench_surveillance.py [--coups 1000000] [--repeat 3]

A dedicated PostgreSQL database (bench_surveillance, dropped and re-created)
is filled server-side (INSERT ... SELECT generate_series, as bench_reports.py
does) with DAYS gaming days of 40 tables: one session per table-day, a shoe
per ~75 coups (closed, its count entered), a banker turn per shoe (half with
a player card), 60 croupiers; outcomes drawn with the game's odds, covered
amounts 10 to 500, the house's levy; 0.3 % false draws (one croupier at 3 %:
the alert the runs must raise), 0.05 % bank mismatches, 0.1 % corrected
coups (a second revision: collect keeps the latest). The nightly run reads
its day plus the CUSUM's trailing window (runs.NIGHTLY_CUSUM_DAYS). Results
go to var/bench/surveillance.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_surveillance")
import _benchdb  # noqa: E402
from bench_reports import _fill  # noqa: E402

TABLES, DAYS, CROUPIERS, SEATS, SHOE_COUPS = 40, 30, 60, 9, 75
START = date(2025, 3, 1)
OUT = _benchdb.OUT_DIR / "surveillance.json"


def setup_floor(per_cell: int) -> dict:
    """Tables (with their house rules), croupiers, and per table-day a
    session, its shoes (closed and counted) and one banker turn per shoe."""
    from django.db import connection

    from tables import services
    from tables.models import BankerTurn, Shoe, TableSession

    manager = _benchdb.make_user("bench-manager", "manager")
    croupiers = [_benchdb.make_user(f"bench-croupier-{i}", "croupier")
                 for i in range(CROUPIERS)]
    tables = [services.table_create(user=manager, name=f"Table {i + 1:02d}",
                                    device="bench") for i in range(TABLES)]
    t0, r0 = tables[0].pk, tables[0].rules_id
    cells = TABLES * DAYS
    shoes = -(-per_cell // SHOE_COUPS)
    c0 = croupiers[0].pk
    day = f"DATE '{START}' + (g / {TABLES})"
    at = f"(({day})::timestamp + interval '20 hours') AT TIME ZONE 'Europe/Paris'"
    with connection.cursor() as cur:
        cols, exprs = _fill(TableSession, {
            "id": "g + 1", "table_id": f"{t0} + (g % {TABLES})",
            "gaming_day": day, "opened_at": at, "opened_by_id": str(c0),
            "closed_at": at, "closed_by_id": str(c0),
            "rules_id": f"{r0} + (g % {TABLES})"})
        cur.execute(f"INSERT INTO {TableSession._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {cells - 1}) g")
        # shoe h of cell g: id g * shoes + h + 1
        sg = f"(g / {shoes})"
        dealt = f"LEAST({SHOE_COUPS}, {per_cell} - (g % {shoes}) * {SHOE_COUPS}) * 4"
        cols, exprs = _fill(Shoe, {
            "id": "g + 1", "session_id": f"{sg} + 1", "number": f"g % {shoes} + 1",
            "decks": "6", "burned": "5", "opened_at": at.replace("g /", f"{sg} /"),
            "closed_at": at.replace("g /", f"{sg} /"), "dealt": dealt,
            # every 500th shoe is counted four cards short (certain alerts)
            "left_counted": f"GREATEST(0, 312 - 5 - {dealt} - "
                            "CASE WHEN g % 500 = 7 THEN 4 ELSE 0 END)",
            "card_counts": "'{}'::jsonb"})
        cur.execute(f"INSERT INTO {Shoe._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {cells * shoes - 1}) g")
        cols, exprs = _fill(BankerTurn, {
            "id": "g + 1", "session_id": f"{sg} + 1", "number": f"g % {shoes} + 1",
            "seat": f"g % {SEATS} + 1", "opening_bank": "1000", "bank": "1000",
            "opened_at": at.replace("g /", f"{sg} /"), "opened_by_id": str(c0),
            "closed_at": at.replace("g /", f"{sg} /"),
            "player_card": "CASE WHEN g % 2 = 0 THEN 'C' || (g % 700) ELSE '' END"})
        cur.execute(f"INSERT INTO {BankerTurn._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {cells * shoes - 1}) g")
    return {"c0": c0, "t0": t0, "r0": r0, "shoes_per_cell": shoes,
            "manager": manager}


def load_coups(per_cell: int, floor: dict) -> float:
    """Coup n (0-based) is coup k = n % per_cell of cell n // per_cell, in
    shoe k // SHOE_COUPS of that cell, dealt at 20:00 + k minutes."""
    from django.db import connection

    from tables.models import Coup, Finding

    shoes, c0 = floor["shoes_per_cell"], floor["c0"]
    cell, k = f"(g / {per_cell})", f"(g % {per_cell})"
    shoe = f"{cell} * {shoes} + {k} / {SHOE_COUPS} + 1"
    u = "abs(hashtext(g::text)) % 100000"
    outcome = (f"CASE WHEN {u} < 45860 THEN 'banker' "
               f"WHEN {u} < 90462 THEN 'punter' ELSE 'tie' END")
    covered = "(10 * (1 + abs(hashtext('c' || g)) % 50))"
    croupier = f"{c0} + ({cell} % {TABLES} + ({k} / 400) * 7) % {CROUPIERS}"
    bad = f"{c0} + 5"  # this croupier false-draws ten times as often
    false_draw = (f"CASE WHEN abs(hashtext('f' || g)) % 1000 < "
                  f"CASE WHEN {croupier} = {bad} THEN 30 ELSE 3 END THEN 1 ELSE 0 END")
    day = f"DATE '{START}' + ({cell} / {TABLES})"
    given = {
        "shoe_id": shoe, "turn_id": shoe, "seq": f"{k} % {SHOE_COUPS} + 1",
        "revision": "1", "rules_id": f"{floor['r0']} + {cell} % {TABLES}",
        "tableau_version": "'chemmy-standard-1'", "gaming_day": day,
        "created_at": f"({day})::timestamptz + interval '20 hours' "
                      f"+ {k} * interval '1 minute'",
        "entered_by_id": croupier,
        "punter_cards": "'[\"9H\", \"KD\"]'::jsonb",
        "banker_cards": "'[\"5C\", \"2S\"]'::jsonb",
        "punter_total": "9", "banker_total": "7", "outcome": outcome,
        "banker_seat": f"({k} / 8) % {SEATS} + 1",
        "punter_seat": f"({k} / 8 + 3) % {SEATS} + 1",
        "bank_before": "1000", "covered": covered, "garage": "0",
        "commission": f"CASE WHEN {outcome} = 'banker' THEN "
                      f"round({covered} * 0.05, 1) ELSE 0 END",
        "bank_after": "1000", "cards_left_before": "300",
        "finding_count": f"{false_draw} + CASE WHEN abs(hashtext('m' || g)) "
                         "% 10000 < 5 THEN 1 ELSE 0 END",
    }
    cols, exprs = _fill(Coup, given)
    n = per_cell * TABLES * DAYS
    table, ftable = Coup._meta.db_table, Finding._meta.db_table
    start = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO {table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {n - 1}) g")
        # 0.1 % corrected: a second revision of the same (shoe, seq)
        ccols = cols
        names = [c.strip('"') for c in ccols.split(", ")]
        picked = ", ".join("2" if c == "revision" else
                           ("CASE outcome WHEN 'banker' THEN 'punter' ELSE "
                            "outcome END" if c == "outcome" else f'"{c}"')
                           for c in names)
        cur.execute(f"INSERT INTO {table} ({ccols}) SELECT {picked} FROM {table} "
                    "WHERE id % 1000 = 17")
        fcols, fexprs = _fill(Finding, {
            "coup_id": "c.id", "code": "'false_draw'", "severity": "'warning'",
            "side": "'banker'", "detail": "'{}'::jsonb",
            "message": "'Banker stood on 4 against a 3 (bench)'",
            "tableau_version": "'chemmy-standard-1'"})
        cur.execute(f"INSERT INTO {ftable} ({fcols}) SELECT {fexprs} FROM {table} c "
                    "WHERE c.finding_count >= 1 AND c.revision = 1 AND "
                    "abs(hashtext('f' || (c.id - 1)::text)) % 1000 < CASE WHEN "
                    f"c.entered_by_id = {bad} THEN 30 ELSE 3 END")
        fcols, fexprs = _fill(Finding, {
            "coup_id": "c.id", "code": "'bank_mismatch'", "severity": "'critical'",
            "side": "''", "detail": "'{}'::jsonb",
            "message": "'Declared bank differs (bench)'",
            "tableau_version": "'chemmy-standard-1'"})
        cur.execute(f"INSERT INTO {ftable} ({fcols}) SELECT {fexprs} FROM {table} c "
                    "WHERE c.id % 2000 = 3")
        cur.execute("VACUUM ANALYZE")
    return time.perf_counter() - start


def time_run(*, manager, first: date, last: date, nightly: bool) -> dict:
    from audit.models import SurveillanceRun
    from audit.surveillance import runs

    source = SurveillanceRun.Source.NIGHTLY if nightly else "manual"
    run = runs.surveillance_request(
        user=None if nightly else manager, from_day=first, to_day=last,
        source=source, dedupe_key=None, device="bench")
    t = time.perf_counter()
    run = runs.surveillance_execute(run_id=run.pk)
    wall = time.perf_counter() - t
    assert run.status == "done", run.error
    return {"run": run.pk, "coups": run.coups, "shoes": run.shoes,
            "tests": run.tests, "alerts": run.alerts, "alerts_new": run.alerts_new,
            "seconds": round(wall, 3), "stages": run.timings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--coups", type=int, default=1_000_000,
                    help="coups in the month (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each (the median is reported)")
    args = ap.parse_args()
    url = _benchdb.configure()
    # Celery eager, and the request's on_commit dispatch runs the task at
    # once: the bench runs it itself (surveillance_execute) and times it.
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    _benchdb.recreate_database(url)
    from unittest import mock

    per_cell = max(1, round(args.coups / (TABLES * DAYS)))
    t = time.perf_counter()
    floor = setup_floor(per_cell)
    fill = load_coups(per_cell, floor)
    setup = time.perf_counter() - t
    last = START + timedelta(days=DAYS - 1)
    out = {"machine": _benchdb.machine(), "pg": _benchdb.pg_settings(),
           "tables": TABLES, "days": DAYS, "coups_per_table_day": per_cell,
           "fill_seconds": round(fill, 1), "setup_seconds": round(setup, 1)}
    # the request's on_commit would run the task eagerly: keep it queued
    with mock.patch("audit.surveillance.runs.surveillance_dispatch",
                    return_value=False):
        for name, first, nightly in (("nightly", last, True),
                                     ("month", START, False)):
            results = [time_run(manager=floor["manager"], first=first, last=last,
                                nightly=nightly) for _ in range(args.repeat)]
            best = sorted(results, key=lambda r: r["seconds"])
            median = best[len(best) // 2]
            out[name] = {**median,
                         "median_s": round(statistics.median(
                             r["seconds"] for r in results), 3),
                         "runs_s": [r["seconds"] for r in results],
                         "first_run_alerts_new": results[0]["alerts_new"]}
            print(f"{name:8s} {median['coups']:>9,} coups  "
                  f"{out[name]['median_s']:7.2f} s (median of {args.repeat})  "
                  f"collect {median['stages'].get('collect', 0):.2f} s, "
                  f"detect {median['stages'].get('detect', 0):.2f} s, "
                  f"write {median['stages'].get('write', 0):.2f} s; "
                  f"{median['tests']:,} tests, {median['alerts']} alerts",
                  flush=True)
    OUT.write_text(json.dumps(out, indent=2, default=str))
    print(f"results: {OUT}")


if __name__ == "__main__":
    main()
