"""What bench/load.py and bench/faults.py share: a database of their own
(dropped and re-created, migrated), tablet users with tokens, tables opened
through the services, gunicorn on a loopback port, and the verification that
the database holds exactly what the tablets were told.

Databases are dropped on every run, so their names must contain "load" or
"fault": a URL that names another database (the suite's, say) is refused.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "var" / "reliability"

# The base64 of a 32-byte Ed25519 seed that signs nothing outside a bench.
BENCH_SIGNING_SEED = base64.b64encode(
    hashlib.sha256(b"bench-only-signing").digest()).decode()


def configure(url: str) -> dict[str, str]:
    """Environment for Django in this process and in gunicorn. Returns it."""
    name = urlsplit(url).path.lstrip("/")
    if not url.startswith("postgres") or not ("load" in name or "fault" in name):
        sys.exit(f"refusing {url}: a PostgreSQL database named *load* or *fault*")
    env = {
        "DJANGO_SETTINGS_MODULE": "casino.settings",
        "DATABASE_URL": url,
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "reliability-only-" + "x" * 40,
        "TRAIL_KEY": os.environ.get("TRAIL_KEY") or "reliability-trail-" + "k" * 40,
        # DEBUG off needs a signing key (casino/settings.py): a bench-only seed
        "TRAIL_SIGNING_KEY": os.environ.get("TRAIL_SIGNING_KEY") or BENCH_SIGNING_SEED,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",  # plain HTTP on loopback
        "CONN_MAX_AGE": "600",
        "LOG_LEVEL": "ERROR",
        # Tablets retry as fast as they can from one address with few tokens:
        # the API's rate limits (casino/throttles.py) must not answer 429.
        "API_THROTTLING": "0",
    }
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)  # Celery eager: nothing queued elsewhere
    # The bench's database is the only one: not a migration owner's nor a
    # replica's named for another database in the caller's environment.
    os.environ.pop("MIGRATE_DATABASE_URL", None)
    os.environ.pop("REPORTS_DATABASE_URL", None)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return env


def shown(path: Path) -> str:
    """A path as printed: relative to the project when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def drop_database(url: str) -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        name = parts.path.lstrip("/")
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def tablet_users(n: int, prefix: str) -> list[tuple[int, str]]:
    """n croupiers, one API token each (a tablet signs in as its croupier).
    Returns (user id, token) pairs."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from casino.tokenauth import token_issue

    group = Group.objects.get(name="croupier")
    tokens = []
    for i in range(n):
        user = get_user_model()(username=f"{prefix}{i}")
        user.set_unusable_password()  # no hashing: tokens only
        user.save()
        user.groups.add(group)
        tokens.append((user.pk, token_issue(user=user, device=f"bench-{i}")[1]))
    return tokens


def open_table(name: str, croupier: int, burned: int = 5) -> tuple[int, int, int]:
    """A table with an open session run by `croupier` (a user id), a shoe
    (6 decks, `burned` cards burned) and a banker turn (seat 1, bank 100.00).
    Returns (table, session, shoe) ids."""
    from django.contrib.auth import get_user_model

    from tables import services

    user = get_user_model().objects.filter(is_superuser=True).first()
    if user is None:
        user = get_user_model().objects.create_superuser("reliability", None, None)
    table = services.table_create(user=user, name=name, device="reliability")
    session = services.session_open(
        table=table,
        user=user,
        croupier=get_user_model().objects.get(pk=croupier),
        device="reliability",
    )
    shoe = services.shoe_open(
        session=session, user=user, burned=burned, device="setup"
    )
    services.banker_turn_open(
        session=session, user=user, seat=1, bank=Decimal("100.00"), device="setup"
    )
    return table.pk, session.pk, shoe.pk


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(port: int, *, workers: int, threads: int, log: Path):
    cmd = [
        sys.executable, "-m", "gunicorn", "casino.wsgi:application",
        "-b", f"127.0.0.1:{port}", "-k", "gthread", "-w", str(workers),
        "--threads", str(threads), "--keep-alive", "5", "--graceful-timeout", "5",
        "--log-level", "warning", "--chdir", str(ROOT),
    ]  # fmt: skip
    out = open(log, "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"gunicorn exited; see {log}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/v1/tables/")  # 401: up, nothing written
            conn.getresponse().read()
            conn.close()
            return proc
        except OSError:
            time.sleep(0.2)
    stop_gunicorn(proc)
    sys.exit("gunicorn did not answer within 30 s")


def stop_gunicorn(proc) -> None:
    """Its own process group: master and workers, by pid, never by name."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def verify(
    acked: dict[str, int], unresolved: list[str], *, gaming_days=None
) -> dict:
    """The database against what the tablets were told.

    - every acknowledged key is one coup, the one the tablet was given;
    - no coup exists that no tablet was told about (beyond unresolved keys);
    - on every shoe the sequence numbers run 1..n, no gap, no fork, and the
      shoe's counters agree with its coups;
    - every banker turn's carry-forward chain re-computes from its coups
      (tables.selectors.turn_ledger_verify);
    - each coup has its stakes and exactly one change-log row;
    - the daily rollups equal a recomputation from the coups.

    `gaming_days`: only the sessions of those days are checked (bench_floor.py
    writes a month of history beside them in SQL, with no trail: there the
    trail's chain is checked without binding ledger rows to it, and the
    ledger is re-settled over those days only).
    """
    from django.db.models import Count

    from casino.models import ChangeLog
    from tables.models import BankerTurn, Coup, DailyRollup, Shoe
    from tables.rollups import rollup_recompute
    from tables.selectors import turn_ledger_verify

    problems: list[str] = []
    coups_all, shoes_all = Coup.objects.all(), Shoe.objects.all()
    turns_all, cells_all = BankerTurn.objects.all(), DailyRollup.objects.all()
    scope: dict = {}
    days = sorted(set(gaming_days)) if gaming_days is not None else None
    if days is not None:
        coups_all = coups_all.filter(shoe__session__gaming_day__in=days)
        shoes_all = shoes_all.filter(session__gaming_day__in=days)
        turns_all = turns_all.filter(session__gaming_day__in=days)
        cells_all = cells_all.filter(gaming_day__in=days)
        scope = {"gaming_day__in": days}
    stored = dict(coups_all.values_list("idempotency_key", "id"))
    missing = [k for k in acked if k not in stored]
    wrong = [k for k, c in acked.items() if k in stored and stored[k] != c]
    extra = [k for k in stored if k not in acked and k not in unresolved]
    for name, keys in (("missing", missing), ("wrong id", wrong), ("extra", extra)):
        if keys:
            problems.append(f"{len(keys)} acknowledged-vs-stored {name}: {keys[:5]}")
    dup_keys = (
        coups_all.values("idempotency_key")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    if dup_keys:
        problems.append(f"{dup_keys} keys stored more than once")

    shoes = 0
    for shoe in shoes_all:
        shoes += 1
        coups = list(
            Coup.objects.filter(shoe=shoe, revision=1).values_list(
                "seq", "punter_cards", "banker_cards"
            )
        )
        seqs = sorted(c[0] for c in coups)
        if seqs != list(range(1, len(seqs) + 1)):
            problems.append(f"shoe {shoe.pk}: sequence {seqs[:10]}... has a gap/fork")
        if shoe.next_seq != len(seqs) + 1:
            problems.append(f"shoe {shoe.pk}: next_seq {shoe.next_seq}, {len(seqs)}")
        dealt = sum(len(p) + len(b) for _, p, b in coups)
        if shoe.dealt != dealt:
            problems.append(f"shoe {shoe.pk}: dealt {shoe.dealt} != {dealt}")

    turns = 0
    for turn in turns_all:
        turns += 1
        check = turn_ledger_verify(turn)
        problems.extend(check.problems)

    coups = coups_all.count()
    no_stakes = coups_all.annotate(n=Count("stakes")).filter(n=0).count()
    if no_stakes:
        problems.append(f"{no_stakes} coups without stakes")
    logged = ChangeLog.objects.filter(action="tables.coup.recorded").count()
    if logged != coups:
        problems.append(f"{logged} change-log rows for {coups} coups")

    fields = ("coups", "banker_wins", "punter_wins", "ties", "covered", "commission")
    stored_cells = {
        (r.table_id, r.gaming_day, r.croupier_id, r.banker_seat): r
        for r in cells_all
    }
    recomputed = rollup_recompute(**scope)
    for key, cell in recomputed.items():
        row = stored_cells.get(key)
        if row is None or any(getattr(row, f) != cell[f] for f in fields):
            problems.append(f"rollup {key} differs from its recomputation")

    # The trail held under the load: one keyed chain, every ledger row bound
    # to its log row (casino/trail.py), and the money re-proved from the cards.
    from audit.ledger_check import ledger_verify
    from casino.trail import trail_verify

    trail = trail_verify(anchors=False, ledger=days is None)
    if not trail.ok:
        problems.append(f"trail: {trail.problem}")
    span = {} if days is None else {"from_day": days[0], "to_day": days[-1]}
    ledger = ledger_verify(**span)
    problems.extend(f"ledger: {d.text}" for d in ledger.differences[:20])
    return {
        "trail_rows": trail.rows,
        "ledger_rows_bound": trail.ledger_rows,
        "ledger_differences": len(ledger.differences) + ledger.more,
        "coups": coups,
        "acknowledged": len(acked),
        "unresolved": len(unresolved),
        "shoes": shoes,
        "turns": turns,
        "rows_lost": len(missing),
        "rows_duplicated": dup_keys + len(extra),
        "problems": problems,
        "ok": not problems and not unresolved,
    }
