"""A worker raising a flag on a table in play, and the table's own write, at
the same instant (PostgreSQL).

Every chain writer takes its row locks first and the trail's chain last.
A surveillance writer (a live look, a run) holds the chain from its first
change-log row and then inserts flags that name a table, a session or a
shoe: each insert's foreign-key check takes a KEY SHARE lock on those rows.
Had the table's paths locked them FOR UPDATE, a banker turn opening (session
locked, waiting for the chain) and that insert (chain held, waiting for the
session) would deadlock, and PostgreSQL would abort one of them: CI saw it
happen. The app locks the rows it changes FOR NO KEY UPDATE (no key of an
append-only record ever changes), which a foreign-key check does not wait
for. Here the worker holds the chain, the table's write is seen waiting for
it with its row locked, then the worker inserts its flag: both commit.
"""

from __future__ import annotations

import threading
import time
from datetime import date
from decimal import Decimal

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _waiting_for_chain(worker: int) -> bool:
    """Another backend waits for an advisory lock (the tablet's connection:
    its service may open a new one). pg_locks, which the runtime role reads,
    unlike other roles' rows of pg_stat_activity."""
    with connections["default"].cursor() as c:
        c.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                  "AND NOT granted AND pid <> %s", [worker])
        return c.fetchone()[0] > 0


def _waits(pid: int) -> list:
    with connections["default"].cursor() as c:
        c.execute("SELECT locktype, relation::regclass::text, mode FROM pg_locks "
                  "WHERE pid = %s AND NOT granted", [pid])
        return c.fetchall()


def _flag_item(table, session, shoe, croupier):
    from audit.surveillance.alerts import Raise
    from audit.surveillance.data import Alert

    alert = Alert(kind="live_table", subject=f"table:{table.pk}", test="banker_share",
                  statistic=9.0, p_value=1e-6, day=date.today().toordinal(),
                  evidence={})
    return Raise(ident=f"l:test:lock:{table.pk}", alert=alert,
                 place={"table_id": table.pk, "session_id": session.pk,
                        "shoe_id": shoe.pk if shoe else None,
                        "croupier_id": croupier.pk},
                 message="test", day=date.today(), code="live_table",
                 severity="warning")


def _table_write(which, session, shoe, croupier):
    from tables.services import banker_turn_open, shoe_close

    if which == "turn_open":  # ledger_pg.lock_for_turn: session, then chain
        return lambda: banker_turn_open(session=session.pk, user=croupier,
                                        seat=2, bank=Decimal("1000.00"))
    return lambda: shoe_close(shoe=shoe, user=croupier)  # ORM: shoe, then log


@pytest.mark.parametrize("which", ["turn_open", "shoe_close"])
def test_a_flag_raised_while_the_table_writes_deadlocks_nothing(
        which, table, session, shoe, croupier):
    from audit.models import Flag, SurveillanceRun
    from audit.surveillance.alerts import flags_write
    from casino.changelog import log_action

    item = _flag_item(table, session, shoe if which == "shoe_close" else None,
                      croupier)
    chain_held, table_waits = threading.Event(), threading.Event()
    pids: dict[str, int] = {}
    errors: dict[str, BaseException] = {}

    def worker():
        try:
            with transaction.atomic():
                with connection.cursor() as c:
                    c.execute("SELECT pg_backend_pid()")
                    pids["worker"] = c.fetchone()[0]
                now = timezone.now()
                run = SurveillanceRun.objects.create(
                    from_day=item.day, to_day=item.day, tables=[],
                    fdr=Decimal("0.0300"), source=SurveillanceRun.Source.LIVE,
                    status=SurveillanceRun.Status.DONE, stage="done", percent=100,
                    requested_at=now, dispatched_at=now, started_at=now,
                    finished_at=now, attempts=1)
                log_action(action="audit.surveillance.live", user=None,
                           device="celery", obj=run, new={})  # the chain held
                chain_held.set()
                assert table_waits.wait(10), "the table's write never waited"
                flags_write(run=run, items=[item])
        except BaseException as exc:  # noqa: BLE001 -- re-raised below
            errors["worker"] = exc
        finally:
            connection.close()

    def tablet():
        try:
            assert chain_held.wait(10)
            _table_write(which, session, shoe, croupier)()
        except BaseException as exc:  # noqa: BLE001 -- re-raised below
            errors["tablet"] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker), threading.Thread(target=tablet)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (
            "worker" in pids and _waiting_for_chain(pids["worker"])):
        if errors:
            break
        time.sleep(0.02)
    assert "worker" in pids and not errors, errors
    table_waits.set()  # the tablet holds its row and waits for the chain
    seen = []
    for _ in range(100):
        if not threads[0].is_alive():
            break
        seen.append(_waits(pids["worker"]))
        time.sleep(0.05)
    for t in threads:
        t.join(timeout=30)
    assert not errors, (errors, seen[-3:])
    assert Flag.objects.filter(ident=item.ident, session=session).count() == 1
    if which == "turn_open":
        assert session.turns.filter(seat=2, closed_at__isnull=True).exists()
    else:
        shoe.refresh_from_db()
        assert shoe.closed_at is not None
