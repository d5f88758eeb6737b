"""Reports at scale: the year commission report, every grouping, at 1M, 10M
and 100M coups; the report task a manager waits for (CSV, XLSX and PDF, by
table and by gaming day, at 1M coups: `time_tasks`); and the streamed detail
CSV export of 1M coups (time, peak memory, size).

    .venv/bin/python bench/bench_reports.py [--sizes 1000000,10000000]
                                            [--rollups-only 100000000]

A dedicated PostgreSQL database (bench_reports, dropped and re-created) is
filled server-side (INSERT ... SELECT generate_series: the same bulk path as
COPY, without shipping rows through Python) with a year of coups: 20 tables x
365 gaming days, 3 croupiers, 9 banker seats, real hands (a pool of 10,007
dealt from shuffled shoes and played by the tableau: cards, totals, outcome),
times with microseconds, 0.3 % of coups with a false_draw finding. The rollups
are then built from the coups in SQL (one GROUP BY per grain), as the coup
path adds to them. Growing from 1M to 10M adds coups to the same table-days,
so the rollup rows stay the same (~197k cells, 7,300 table-days, 720 croupier
months, 2,160 seat months): the report's time should stay flat, while a plain
GROUP BY over the coups grows with them. 100M coups (40 GB of coup rows) are
timed from the rollups they would leave, written straight (fill_rollups): the
report reads nothing else. Results go to var/bench/reports.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_DATABASE_URL",
                      "postgres://postgres@127.0.0.1:5432/bench_reports")
import _benchdb  # noqa: E402

TABLES, DAYS, CROUPIERS, SEATS = 20, 365, 3, 9
CELLS = TABLES * DAYS
START = date(2025, 1, 1)
OUT = _benchdb.OUT_DIR / "reports.json"


def _fill(model, given: dict[str, str]) -> tuple[str, str]:
    """Column list and SELECT expressions for a bulk insert: the columns given,
    plus every other NOT NULL column filled with its model default (the other
    teams add columns; the bench must not break on them)."""
    from django.db.models import NOT_PROVIDED

    cols, exprs = [], []
    for f in model._meta.concrete_fields:
        if f.primary_key and f.column not in given:
            continue
        if f.column in given:
            expr = given[f.column]
        elif f.null:
            continue
        elif f.default is not NOT_PROVIDED:
            value = f.get_default()
            if isinstance(value, dict | list):
                expr = f"'{json.dumps(value)}'::jsonb"
            elif isinstance(value, bool):
                expr = "true" if value else "false"
            else:
                expr = f"'{value}'"
        else:
            expr = "''"
        cols.append(f'"{f.column}"')
        exprs.append(expr)
    return ", ".join(cols), ", ".join(exprs)


def setup_floor(*, tables: int = TABLES, days: int = DAYS, start: date = START,
                manager=None, croupiers=None):
    """Tables, croupiers, one session + shoe + banker turn per table-day
    (closed). bench_floor.py passes its own sizes, manager and croupiers (user
    ids in a row) and opens the day's sessions after it: the sequences are
    moved past the ids written here."""
    from django.db import connection

    from tables import services
    from tables.models import BankerTurn, Shoe, TableSession

    manager = manager or _benchdb.make_user("bench-manager", "manager")
    croupiers = croupiers or [_benchdb.make_user(f"bench-croupier-{i}", "croupier")
                              for i in range(CROUPIERS)]
    width = max(2, len(str(tables)))
    made = [services.table_create(user=manager, name=f"Table {i + 1:0{width}d}",
                                  device="bench") for i in range(tables)]
    t0, cells = made[0].pk, tables * days
    day = f"DATE '{start}' + (g / {tables})"
    table = f"{t0} + (g % {tables})"
    at = f"(({day})::timestamp + interval '20 hours') AT TIME ZONE 'Europe/Paris'"
    with connection.cursor() as cur:
        cols, exprs = _fill(TableSession, {
            "id": "g + 1", "table_id": table, "gaming_day": day, "opened_at": at,
            "opened_by_id": str(croupiers[0].pk), "closed_at": at,
            "closed_by_id": str(croupiers[0].pk)})
        cur.execute(f"INSERT INTO {TableSession._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {cells - 1}) g")
        cols, exprs = _fill(Shoe, {
            "id": "g + 1", "session_id": "g + 1", "number": "1", "decks": "6",
            "opened_at": at, "closed_at": at})
        cur.execute(f"INSERT INTO {Shoe._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {cells - 1}) g")
        cols, exprs = _fill(BankerTurn, {
            "id": "g + 1", "session_id": "g + 1", "number": "1", "seat": "1",
            "opening_bank": "100", "bank": "100", "opened_at": at,
            "opened_by_id": str(croupiers[0].pk), "closed_at": at})
        cur.execute(f"INSERT INTO {BankerTurn._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series(0, {cells - 1}) g")
        for model in (TableSession, Shoe, BankerTurn):
            name = model._meta.db_table
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                        f"(SELECT max(id) FROM {name}))")
    return t0, made[0].rules_id, [c.pk for c in croupiers]


def load_coups(first: int, last: int, t0: int, croupiers, *,
               tables: int = TABLES, days: int = DAYS, start: date = START) -> float:
    """Coups number first..last (0-based): coup n is at cell n % cells and is
    that shoe's coup number n // cells + 1 (cells: tables x days, as
    setup_floor made them; croupiers: user ids in a row)."""
    from django.db import connection

    from tables.models import Coup, Finding, Table

    cells = tables * days
    seq = f"(g / {cells} + 1)"
    c0 = croupiers[0]
    _hands()
    # coup g plays a hand drawn from the pool by a hash of g (with
    # replacement: a table-day's coups vary as independent coups do, where
    # g % HANDS would give a table-day of more than HANDS coups the whole
    # pool, the same outcomes every day): real cards, totals and outcome
    outcome = "h.outcome"
    covered = "(10 * (1 + abs(hashtext('c' || g)) % 50))"
    given = {
        "shoe_id": f"g % {cells} + 1", "turn_id": f"g % {cells} + 1", "seq": seq,
        "revision": "1",
        # each table's own house rules (table_create gave each its version 1)
        "rules_id": f"(SELECT r.rules_id FROM {Table._meta.db_table} r "
                    f"WHERE r.id = {t0} + (g % {cells}) % {tables})",
        "tableau_version": "'chemmy-standard-1'",
        "gaming_day": f"DATE '{start}' + ((g % {cells}) / {tables})",
        # a second apart, each with its microseconds, as the tablet's are
        "created_at": f"(DATE '{start}' + ((g % {cells}) / {tables}))::timestamptz"
                      f" + interval '20 hours' + (g / {cells}) * interval '1 second'"
                      f" + abs(hashtext('t' || g)) % 1000000"
                      f" * interval '1 microsecond'",
        "entered_by_id": f"{c0} + abs(hashtext('k' || g)) % {len(croupiers)}",
        "punter_cards": "h.p", "banker_cards": "h.b",
        "punter_total": "h.pt", "banker_total": "h.bt", "outcome": outcome,
        "natural": "h.nat",
        "banker_seat": f"abs(hashtext('s' || g)) % {SEATS} + 1",
        "punter_seat": f"(abs(hashtext('s' || g)) + 4) % {SEATS} + 1",
        "bank_before": "1000", "covered": f"{covered}", "garage": "0",
        "commission": f"CASE WHEN {outcome} = 'banker' THEN {covered} * 0.05 "
                      "ELSE 0 END",
        "bank_after": "1000", "cards_left_before": "300",
        "finding_count": "CASE WHEN abs(hashtext('f' || g)) % 1000 < 3 THEN 1 "
                         "ELSE 0 END",
    }
    cols, exprs = _fill(Coup, given)
    began = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(f"INSERT INTO {Coup._meta.db_table} ({cols}) "
                    f"SELECT {exprs} FROM generate_series({first}, {last}) g "
                    f"JOIN bench_hands h ON h.i = abs(hashtext('h' || g)) % {HANDS}")
        fcols, fexprs = _fill(Finding, {
            "coup_id": "c.id", "code": "'false_draw'", "severity": "'warning'",
            "side": "'banker'",
            # what the engine writes for this case (the queue words it from
            # the detail: tables/finding_words.py)
            "detail": """'{"banker_total": 4, "punter_third": 3, "actual": "stand"}'"""
                      "::jsonb",
            "message": "'Banker stood on 4 against a 3: the tableau requires a "
                       "draw.'",
            "tableau_version": "'chemmy-standard-1'"})
        cur.execute(f"INSERT INTO {Finding._meta.db_table} ({fcols}) "
                    f"SELECT {fexprs} FROM {Coup._meta.db_table} c "
                    f"WHERE c.finding_count = 1 AND c.id > (SELECT coalesce("
                    f"max(coup_id), 0) FROM {Finding._meta.db_table})")
        cur.execute("ANALYZE")
    return time.perf_counter() - began


HANDS = 10007


def _hands() -> None:
    """HANDS coups dealt from shuffled 6-deck shoes and played by the tableau
    (bench_reaudit.Dealer: a third card where the game gives one, and a
    croupier's rare mistake), with the engine's totals, outcome and natural:
    the detail export's size is that of real hands (idempotent)."""
    import bench_reaudit
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("CREATE UNLOGGED TABLE IF NOT EXISTS bench_hands (i int4 "
                    "PRIMARY KEY, p jsonb, b jsonb, pt int2, bt int2, outcome text, "
                    "nat text)")
        cur.execute("SELECT count(*) FROM bench_hands")
        if cur.fetchone()[0] == HANDS:
            return
        cur.execute("TRUNCATE bench_hands")
        dealer = bench_reaudit.Dealer(seed=11)
        rows = []
        for i in range(HANDS):
            p, b = dealer.coup()
            pt, bt, outcome, nat, *_ = dealer.judge(p, b)
            rows.append((i, json.dumps(p), json.dumps(b), pt, bt, outcome, nat))
        cur.executemany("INSERT INTO bench_hands VALUES (%s, %s, %s, %s, %s, %s, "
                        "%s)", rows)
        cur.execute("ANALYZE bench_hands")


def build_rollups() -> float:
    """The rollups from the coups, in SQL (what rollup_apply keeps up to date
    coup by coup)."""
    from django.db import connection

    from tables.chemmy import STANDARD_TABLEAU
    from tables.chemmy.odds import house_odds
    from tables.models import Coup, DailyRollup, Finding, Shoe, TableSession

    c, s, t = Coup._meta.db_table, Shoe._meta.db_table, TableSession._meta.db_table
    f = Finding._meta.db_table
    # each coup's expected levy, as tables/rollups.py levy_expectation weighs
    # it: P(banker) of the one rules version x 5 % of C to 0.10, half up
    odds = house_odds(decks=6, tableau=STANDARD_TABLEAU, punter_five="free",
                      banker_prescriptions={})
    p = f"({odds.p_banker.numerator}::numeric / {odds.p_banker.denominator})"
    start = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(f"TRUNCATE {DailyRollup._meta.db_table}")
        cur.execute(f"""
            WITH cell AS (
              SELECT c.id, t.table_id, c.gaming_day, c.entered_by_id AS croupier,
                     c.banker_seat, c.outcome, c.covered, c.commission
              FROM {c} c JOIN {s} s ON s.id = c.shoe_id
              JOIN {t} t ON t.id = s.session_id),
            codes AS (
              SELECT table_id, gaming_day, croupier, banker_seat,
                     jsonb_object_agg(code, n) AS findings
              FROM (SELECT cell.table_id, cell.gaming_day, cell.croupier,
                           cell.banker_seat, fi.code, count(*) AS n
                    FROM {f} fi JOIN cell ON cell.id = fi.coup_id
                    GROUP BY 1, 2, 3, 4, 5) x
              GROUP BY 1, 2, 3, 4),
            sums AS (
              SELECT table_id, gaming_day, croupier, banker_seat, count(*) AS coups,
                count(*) FILTER (WHERE outcome = 'banker') AS bw,
                count(*) FILTER (WHERE outcome = 'punter') AS pw,
                count(*) FILTER (WHERE outcome = 'tie') AS ties,
                sum(covered) AS covered, sum(covered * covered) AS covered_sq,
                sum(commission) AS commission,
                sum(round({p} * round(covered * 0.05, 1), 10)) AS levy_mean,
                sum(round({p} * (1 - {p}) * round(covered * 0.05, 1) ^ 2, 10))
                  AS levy_var
              FROM cell GROUP BY 1, 2, 3, 4)
            INSERT INTO {DailyRollup._meta.db_table} (table_id, gaming_day,
              croupier_id, banker_seat, coups, banker_wins, punter_wins, ties,
              covered, covered_sq, commission, levy_mean, levy_var, findings)
            SELECT s.table_id, s.gaming_day, s.croupier, s.banker_seat, s.coups,
              s.bw, s.pw, s.ties, s.covered, s.covered_sq, s.commission,
              s.levy_mean, s.levy_var, coalesce(codes.findings, '{{}}'::jsonb)
            FROM sums s LEFT JOIN codes USING (table_id, gaming_day, croupier,
                                               banker_seat)""")
    return derive_grains() + time.perf_counter() - start


def derive_grains() -> float:
    """The coarser grains the reports read (tables/rollups.py GRAINS) from the
    cells, in SQL: what the coup path adds to each as it writes a coup (the
    table-day rows keyed by each table's own house rules, as its coups are)."""
    from django.db import connection

    from tables.models import (
        CroupierMonthRollup,
        DailyRollup,
        SeatMonthRollup,
        Table,
        TableDayRollup,
    )

    daily = DailyRollup._meta.db_table
    month = "date_trunc('month', gaming_day)::date"
    grains = (
        (TableDayRollup, ("gaming_day", "rules_id"),
         ("gaming_day", f"(SELECT t.rules_id FROM {Table._meta.db_table} t "
                        "WHERE t.id = r.table_id)")),
        (CroupierMonthRollup, ("month", "croupier_id"), (month, "croupier_id")),
        (SeatMonthRollup, ("month", "banker_seat"), (month, "banker_seat")),
    )
    sums = ("coups", "banker_wins", "punter_wins", "ties", "covered", "covered_sq",
            "commission", "levy_mean", "levy_var")
    start = time.perf_counter()
    with connection.cursor() as cur:
        for model, cols, exprs in grains:
            t = model._meta.db_table
            keys = ", ".join(f"{e} AS {c}" for c, e in zip(cols, exprs, strict=True))
            cur.execute(f"TRUNCATE {t}")
            cur.execute(f"""
                WITH codes AS (
                  SELECT table_id, {", ".join(cols)}, jsonb_object_agg(code, n)
                    AS findings
                  FROM (SELECT r.table_id, {keys}, j.key AS code,
                               sum(j.value::int) AS n
                        FROM {daily} r, jsonb_each_text(r.findings) j
                        GROUP BY 1, {", ".join(str(i + 2) for i in range(len(cols)))},
                                 j.key) x
                  GROUP BY table_id, {", ".join(cols)}),
                sums AS (
                  SELECT table_id, {keys}, {", ".join(f"sum({n}) AS {n}"
                                                      for n in sums)}
                  FROM {daily} r
                  GROUP BY 1, {", ".join(str(i + 2) for i in range(len(cols)))})
                INSERT INTO {t} (table_id, {", ".join(cols)}, {", ".join(sums)},
                                 findings)
                SELECT s.table_id, {", ".join(f"s.{c}" for c in cols)},
                       {", ".join(f"s.{n}" for n in sums)},
                       coalesce(codes.findings, '{{}}'::jsonb)
                FROM sums s LEFT JOIN codes USING (table_id, {", ".join(cols)})""")
        # as autovacuum would: set hint bits / visibility once, not on the
        # first report's reads
        for model in (DailyRollup, *(g[0] for g in grains)):
            cur.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    return time.perf_counter() - start


def fill_rollups(n_coups: int, t0: int, croupiers) -> float:
    """The cells that n_coups on the bench's floor leave (tables x days x
    croupiers x seats, as load_coups spreads them), written straight into
    the rollups with no coup rows: the report reads nothing else (tested:
    tests/reports/test_commission.py, no query of the report touches the
    coups), so its time depends on the rollup rows, which this makes exactly
    as many as the coups would. Counts and sums are drawn around the game's
    odds (banker 45.87 %, tie 9.51 %), stakes 10-500, 0.3 % false draws."""
    from django.db import connection

    from tables.chemmy import STANDARD_TABLEAU
    from tables.chemmy.odds import house_odds
    from tables.models import DailyRollup

    odds = house_odds(decks=6, tableau=STANDARD_TABLEAU, punter_five="free",
                      banker_prescriptions={})
    p = f"({odds.p_banker.numerator}::numeric / {odds.p_banker.denominator})"
    rows = TABLES * DAYS * len(croupiers) * SEATS
    per = n_coups // rows
    g = "g"
    coups = f"({per} + (abs(hashtext('n' || {g})) % 3) - 1)"
    bw = f"round({coups} * 0.4587)::int"
    ties = f"round({coups} * 0.0951)::int"
    avg = "255"
    start = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(f"TRUNCATE {DailyRollup._meta.db_table}")
        cur.execute(f"""
            INSERT INTO {DailyRollup._meta.db_table} (table_id, gaming_day,
              croupier_id, banker_seat, coups, banker_wins, punter_wins, ties,
              covered, covered_sq, commission, levy_mean, levy_var, findings)
            SELECT {t0} + (g / ({DAYS} * {len(croupiers)} * {SEATS})),
              DATE '{START}' + (g / ({len(croupiers)} * {SEATS})) % {DAYS},
              {croupiers[0]} + (g / {SEATS}) % {len(croupiers)}, g % {SEATS} + 1,
              {coups}, {bw}, {coups} - {bw} - {ties}, {ties},
              {coups} * {avg}, {coups} * {avg} * {avg} * 1.33,
              {bw} * {avg} * 0.05 + (abs(hashtext('m' || g)) % 200) * 0.05 - 5,
              round({p} * {coups} * {avg} * 0.05, 10),
              round({p} * (1 - {p}) * {coups} * ({avg} * 0.05) ^ 2 * 1.33, 10),
              CASE WHEN {coups} * 3 / 1000 > 0
                   THEN jsonb_build_object('false_draw', {coups} * 3 / 1000)
                   ELSE '{{}}'::jsonb END
            FROM generate_series(0, {rows - 1}) g""")
    return derive_grains() + time.perf_counter() - start


def time_reports(repeat: int = 5, *, yardstick: bool = True) -> dict:
    from django.db import connection

    from audit.reports.selectors import commission_report
    from tables.models import (
        Coup,
        CroupierMonthRollup,
        DailyRollup,
        SeatMonthRollup,
        TableDayRollup,
    )

    end = START + timedelta(days=DAYS - 1)
    out = {}
    for group_by in ("table", "gaming_day", "croupier", "banker"):
        commission_report(from_day=START, to_day=end, group_by=group_by)  # warm
        runs = []
        for _ in range(repeat):
            t = time.perf_counter()
            report = commission_report(from_day=START, to_day=end, group_by=group_by)
            runs.append(time.perf_counter() - t)
        out[group_by] = {"median_s": round(statistics.median(runs), 4),
                         "max_s": round(max(runs), 4), "rows": len(report.rows),
                         "coups": report.total.coups,
                         "flagged_cells": len(report.flagged)}
    # the yardstick: the same totals by GROUP BY over the coups themselves
    if yardstick:
        with connection.cursor() as cur:
            t = time.perf_counter()
            cur.execute(f"SELECT s.session_id, count(*), sum(covered), "
                        f"sum(commission) FROM {Coup._meta.db_table} c JOIN "
                        f"tables_shoe s ON s.id = c.shoe_id GROUP BY s.session_id")
            cur.fetchall()
            out["plain_group_by_over_coups_s"] = round(time.perf_counter() - t, 3)
    out["rollup_rows"] = {m.__name__: m.objects.count() for m in (
        DailyRollup, TableDayRollup, CroupierMonthRollup, SeatMonthRollup)}
    return out


def time_tasks(repeat: int = 3, *, groupings=("table", "gaming_day")) -> dict:
    """The year's commission report as a manager gets it: the real task
    (`report_request`, then `reports.build` run in this process, eagerly, as
    a worker runs it: the data read, the stamp and its anchor, the file
    written, hashed and renamed into place, the job marked done), for each
    format. A warm process (a worker is one): each format is built once
    before the timed runs. Wall time around the request and the job's own
    started/finished times; the machine's load with each."""
    from django.contrib.auth import get_user_model

    from audit.reports.models import ReportJob
    from audit.reports.services import report_request

    manager = get_user_model().objects.get(username="bench-manager")
    end = START + timedelta(days=DAYS - 1)
    out: dict = {}

    def build(group_by: str, fmt: str) -> tuple[float, ReportJob]:
        t = time.perf_counter()
        job = report_request(user=manager, kind="commission", format=fmt,
                             from_day=START, to_day=end, group_by=group_by)
        wall = time.perf_counter() - t
        job.refresh_from_db()
        if job.status != "done":
            sys.exit(f"bench: the {fmt} report failed: {job.error}")
        return wall, job

    for fmt in ("csv", "xlsx", "pdf"):
        build("table", fmt)  # warm: imports, fonts
    for group_by in groupings:
        for fmt in ("csv", "xlsx", "pdf"):
            runs, loads = [], []
            for _ in range(repeat):
                wall, job = build(group_by, fmt)
                runs.append(wall)
                loads.append(round(os.getloadavg()[0], 2))
            out[f"{group_by}/{fmt}"] = {
                "median_s": round(statistics.median(runs), 3),
                "max_s": round(max(runs), 3),
                "task_s": round((job.finished_at - job.started_at).total_seconds(),
                                3),
                "rows": job.rows, "bytes": job.file_size, "load_avg_1m": loads,
            }
            print(f"  {group_by:10} {fmt:4} {out[f'{group_by}/{fmt}']}", flush=True)
    return out


def export_child(n_days: int) -> None:
    """Run in a fresh process so its peak RSS is the export's own. Alone on a
    filled database: `bench_reports.py --export-child 365` (as --reuse does
    for the reports). cpu_s: this process's CPU time (the database's is not
    in it); file_bytes exact, file_mb in MiB."""
    import django

    django.setup()
    from audit.reports.detail import write_coups_csv

    params = {"from_day": START.isoformat(),
              "to_day": (START + timedelta(days=n_days - 1)).isoformat(),
              "tables": []}
    stamp = {"title": "Coup detail export", "period": "bench",
             "gaming_day_note": "", "house_rules": [], "software_version": "bench",
             "generated_at": "", "generated_by": "bench"}
    path = _benchdb.OUT_DIR / "coups.csv"
    t, cpu = time.perf_counter(), time.process_time()
    rows = write_coups_csv(params, path, stamp=stamp, progress=lambda n: None)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
    rss = _peak_rss_mb()
    size = path.stat().st_size
    print(json.dumps({"rows": rows, "seconds": round(elapsed, 2),
                      "cpu_s": round(cpu, 2), "peak_rss_mb": rss,
                      "file_bytes": size, "file_mb": round(size / (1 << 20), 1),
                      "load_avg_1m": round(os.getloadavg()[0], 2)}))
    path.unlink()


def _peak_rss_mb() -> int:
    """This process's own peak (VmHWM). Not ru_maxrss: on Linux a process
    started by exec inherits the high-water mark of the one it replaced, so
    a child of the bench would report the bench's own peak (230 MB once the
    PDF tasks have run, against the export's 104)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def time_export(n_days: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--export-child", str(n_days)],
                         capture_output=True, text=True, env=os.environ, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument(
        "--rollups-only", default="100000000",
        help="Sizes timed from rollups written straight (no coup rows), after "
             "the --sizes runs; '' for none.")
    parser.add_argument("--export-child", type=int)
    parser.add_argument("--reuse", action="store_true",
                        help="Time the reports on the database as it is.")
    parser.add_argument("--rebuild", action="store_true",
                        help="With --reuse: rebuild the rollups from its coups "
                             "first (after a --rollups-only run).")
    parser.add_argument("--tasks-at-every-size", action="store_true",
                        help="Time the report task (CSV, XLSX, PDF) at every "
                             "size, not only up to 1M coups.")
    args = parser.parse_args()
    url = _benchdb.configure()
    # The reports' files and their stamps' anchors: the bench's own, not the
    # checkout's var/ (whose anchors name rows of var/casino.sqlite3).
    scratch = _benchdb.OUT_DIR / "reports-scratch"
    os.environ["MEDIA_ROOT"] = str(scratch / "media")
    os.environ["TRAIL_ANCHOR_DIR"] = str(scratch / "anchors")
    if args.export_child:
        export_child(args.export_child)
        return
    if args.reuse:
        import django

        django.setup()
        if args.rebuild:
            print(f"rollups rebuilt in {build_rollups():.1f} s")
        print(json.dumps(time_reports(), indent=2))
        print(json.dumps({"tasks": time_tasks()}, indent=2))
        return
    _benchdb.recreate_database(url)
    t0, _, croupiers = setup_floor()
    results = {"database": url.rsplit("/", 1)[-1], "machine": _benchdb.machine(),
               "pg": _benchdb.pg_settings(), "sizes": {}}
    loaded = 0
    for size in (int(s) for s in args.sizes.split(",")):
        load = load_coups(loaded, size - 1, t0, croupiers)
        loaded = size
        rollups = build_rollups()
        entry = {"load_s": round(load, 1), "rollups_build_s": round(rollups, 1),
                 "report": time_reports()}
        if size <= 1_000_000 or args.tasks_at_every_size:
            entry["tasks"] = time_tasks()
        if size == 1_000_000:
            entry["export_1m"] = time_export(DAYS)
        results["sizes"][str(size)] = entry
        print(json.dumps({size: entry}, indent=2), flush=True)
    for size in (int(s) for s in args.rollups_only.split(",") if s):
        fill = fill_rollups(size, t0, croupiers)
        entry = {"rollups_only": True, "rollups_fill_s": round(fill, 1),
                 "report": time_reports(yardstick=False)}
        results["sizes"][f"{size} (rollups only)"] = entry
        print(json.dumps({size: entry}, indent=2), flush=True)
    OUT.write_text(json.dumps(results, indent=2))
    print(f"written {OUT}")


if __name__ == "__main__":
    main()
