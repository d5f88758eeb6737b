"""The write path's seal lookup on a never-analysed database of a million
seals, with casino_sealed as migration casino 0010 made it ("before") and as
0013 makes it ("after"): issue 33 item 10.

Run from the project root:

    .venv/bin/python bench/bench_seal.py [--db bench_seal] [--seals 1000000]

What it does, for each function: a copy of a freshly migrated database
(autovacuum off on every table: nothing ever analysed), a table opened and
a few coups posted through the API in this process (as a web worker starts:
PL/pgSQL plans the lookup while casino_seal is a dozen rows, and keeps the
plan for the session), then a million seals added from another session (a
season's writes), then, on the same connection: the lookup of the shoe's
seal timed (`--lookups` calls), its plan as PostgreSQL ran it (auto_explain),
and `--coups` coups through the API. The databases (`<db>` and
`<db>_template`, on DATABASE_URL's server, or BENCH_DATABASE_URL's) are
dropped on any exit; the name must say "bench". Writes var/bench/
bench_seal.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _benchdb  # noqa: E402

FUNCTIONS = ("before", "after")


def _url(name: str) -> str:
    base = (os.environ.get("BENCH_DATABASE_URL") or os.environ.get("DATABASE_URL")
            or _benchdb.DEFAULT_URL)
    return urlunsplit(urlsplit(base)._replace(path=f"/{name}"))


def _admin(url: str):
    import psycopg

    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    return psycopg.connect(admin, autocommit=True)


def _drop(*names: str, url: str) -> None:
    with _admin(url) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _function(which: str) -> str:
    migration = importlib.import_module("casino.migrations.0013_sealed_by_index")
    return migration.OLD_FUNCTION if which == "before" else migration.FUNCTION


def _template(url: str) -> None:
    """Migrated once, autovacuum off on every table before anything grows."""
    import psycopg

    _benchdb.recreate_database(url)
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        for table in tables:
            conn.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = off)')
    from django.db import connections

    connections.close_all()


# -- the child: one function, on its own copy ------------------------------------

def _grow(url: str, seals: int) -> float:
    """A million seals from another session (keys no app row has)."""
    import psycopg

    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO casino_seal (label, key, log_id) "
            "SELECT (ARRAY['tables.shoe', 'tables.tablesession', 'tables.table', "
            "'auth.user'])[g %% 4 + 1], (1000000 + g / 4)::text, 1 "
            "FROM generate_series(1, %s) g", [seals])
    return time.perf_counter() - started


def _plan(cursor, shoe_id: int) -> str:
    from django.db import connection

    seen: list[str] = []
    connection.connection.add_notice_handler(
        lambda diag: seen.append(diag.message_primary or ""))
    cursor.execute("LOAD 'auto_explain'")
    cursor.execute("SET auto_explain.log_nested_statements = on")
    cursor.execute("SET auto_explain.log_level = notice")
    cursor.execute("SET auto_explain.log_min_duration = 0")
    cursor.execute("SELECT casino_sealed('tables.shoe', %s)", [str(shoe_id)])
    cursor.execute("SET auto_explain.log_min_duration = -1")
    inner = [p for p in seen if "casino_seal s" in p]
    lines = inner[0].splitlines() if inner else ["(no plan reported)"]
    return next((line.strip() for line in lines if "casino_seal s" in line
                 and "Scan" in line), lines[-1].strip())


def child(which: str, url: str, seals: int, lookups: int, coups: int) -> dict:
    import django

    django.setup()
    from _dealer import ApiDealer
    from django.db import connection
    from rest_framework.test import APIClient

    from casino.tokenauth import token_issue

    user = _benchdb.make_user("bench-seal", "croupier")
    _, session, shoe, _ = _benchdb.open_table(user, "Seal bench")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)[1]}")
    dealer = ApiDealer(client, session.pk, shoe.pk)
    played = 0

    def play(n: int) -> float:
        nonlocal played
        started = time.perf_counter()
        for _ in range(n):
            played += 1
            r = dealer.post_coup(dealer.next_coup(), f"seal-{played}")
            assert r.status_code == 201, r.content
            if r.json()["next_banker_seat"] is not None:
                assert dealer.open_turn(r.json()["next_banker_seat"]).status_code == 201
        return time.perf_counter() - started

    play(8)  # the web worker's first coups: the lookup planned on a small table
    small = play(coups)
    grown = _grow(url, seals)
    with connection.cursor() as cursor:
        started = time.perf_counter()
        for _ in range(lookups):
            cursor.execute("SELECT casino_sealed('tables.shoe', %s)",
                           [str(dealer.shoe)])
            cursor.fetchone()
        lookup = (time.perf_counter() - started) / lookups
        plan = _plan(cursor, dealer.shoe)
        cursor.execute("SELECT n_live_tup, last_analyze, last_autoanalyze, "
                       "seq_scan, idx_scan FROM pg_stat_user_tables "
                       "WHERE relname = 'casino_seal'")
        live, analyze, autoanalyze, seq, idx = cursor.fetchone()
    seconds = play(coups)
    return {
        "function": which, "seals_added": seals, "grow_seconds": round(grown, 1),
        "casino_seal_rows": live, "analysed": bool(analyze or autoanalyze),
        "lookup_ms": round(lookup * 1000, 3), "lookup_plan": plan,
        "coups": coups, "coups_per_second_small": round(coups / small, 1),
        "coups_per_second": round(coups / seconds, 1),
        "seq_scans_of_casino_seal": seq, "index_scans_of_casino_seal": idx,
    }


# -- the parent ----------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="bench_seal",
                        help="database name (must say bench; %(default)s)")
    parser.add_argument("--seals", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--coups", type=int, default=40)
    parser.add_argument("--child", choices=FUNCTIONS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if "bench" not in args.db:
        sys.exit("bench_seal: the database name must say bench (it is dropped)")
    url, template = _url(args.db), f"{args.db}_template"
    # Django in this process: the copy in a child, the template here
    os.environ["BENCH_DATABASE_URL"] = url if args.child else _url(template)
    _benchdb.configure()
    if args.child:
        print(json.dumps(child(args.child, url, args.seals, args.lookups, args.coups)))
        return

    def stop(signum, frame):
        raise SystemExit(f"bench_seal: signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    results = []
    try:
        print(f"template: {template} (migrated, autovacuum off)")
        _template(_url(template))
        for which in FUNCTIONS:
            _drop(args.db, url=url)
            with _admin(url) as conn:
                conn.execute(f'CREATE DATABASE "{args.db}" TEMPLATE "{template}"')
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(_function(which))
            out = subprocess.run(
                [sys.executable, __file__, "--child", which, "--db", args.db,
                 "--seals", str(args.seals), "--lookups", str(args.lookups),
                 "--coups", str(args.coups)],
                capture_output=True, text=True, env={**os.environ})
            if out.returncode:
                sys.exit(f"the {which} run failed:\n{out.stderr[-3000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            results.append(result)
            print(f"{which:>6}: lookup {result['lookup_ms']} ms "
                  f"({result['lookup_plan']}), {result['coups_per_second']} "
                  f"coups/s ({result['coups_per_second_small']} before the "
                  f"seals were added), casino_seal {result['casino_seal_rows']} rows, "
                  f"analysed: {result['analysed']}")
    finally:
        _drop(args.db, template, url=url)
    report = {"benchmark": "bench_seal", "machine": _benchdb.machine(),
              "results": results}
    path = _benchdb.OUT_DIR / "bench_seal.json"
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"written: {path.relative_to(_benchdb.ROOT)}")


if __name__ == "__main__":
    main()
