"""A finding's flag starts in its coup's own transaction (issue "a real
shift", item 14): the flag — and its "raised" step — are written with the
coup, at the coup's recorded time, on both write paths (the ORM's; and
PostgreSQL's batch, still one round trip for the coup's rows). The floor
opened hours later raises nothing and moves no time. Flags of coups recorded
before (no flag yet) are still raised by flags_sync, at their coup's time.
Runs on SQLite and, with DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from audit.models import Flag, FlagEvent
from audit.services import flags_sync
from tables import services
from tables.services import hooks, ledger_pg

from .conftest import FALSE_DRAW, stake

FIELDS = ("ident", "kind", "code", "severity", "side", "message", "gaming_day",
          "seq", "raised_at", "live", "status", "croupier_id", "author_id")


def the_flag(coup) -> Flag:
    return Flag.objects.get(coup=coup)


def assert_raised_with(coup):
    flag = the_flag(coup)
    assert flag.finding == coup.findings.get()
    assert flag.raised_at == coup.created_at
    (event,) = flag.events.all()
    assert (event.action, event.at, event.user_id) == ("raised", coup.created_at, None)
    return flag


def test_the_flag_is_written_with_the_coup_at_its_time(shoe, turn, deal, pitboss,
                                                        clock):
    dealt_at = timezone.now() - timedelta(hours=3)
    with clock(dealt_at, timedelta(seconds=20)):
        coup = deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    flag = assert_raised_with(coup)  # before anyone opened anything
    # the floor, three hours on: nothing to raise, no time moved
    floor = Client()
    floor.force_login(pitboss)
    assert floor.get("/floor/queue/").status_code == 200
    assert flags_sync() == 0
    assert list(FlagEvent.objects.values_list("at", flat=True)) == [coup.created_at]
    page = floor.get(f"/floor/flags/{flag.pk}/").content.decode()
    assert timezone.localtime(coup.created_at).strftime("%Y-%m-%d %H:%M:%S") in page


def test_a_coup_refused_leaves_no_flag(shoe, turn, deal, croupier):
    from tables.errors import Conflict

    with pytest.raises(Conflict):
        services.coup_record(shoe_id=shoe.pk, user=croupier, punter=FALSE_DRAW[0],
                             banker=FALSE_DRAW[1], stakes=[stake("200", seat=3)],
                             expected_seq=7)
    assert not Flag.objects.exists() and not FlagEvent.objects.exists()


def test_a_shoe_played_in_one_batch_raises_its_flags_too(shoe, turn, croupier):
    """shoe_play (the simulator, imports) writes through the ORM path."""
    from tables.simulation import simulate

    simulate(user=croupier, tables=1, shoes=1, seed=5, false_draw_rate=0.1,
             table_prefix="Batch")
    from tables.models import Finding

    findings = Finding.objects.filter(coup__shoe__session__table__name__startswith=
                                      "Batch")
    assert findings.exists()
    assert not findings.filter(flag__isnull=True).exists()
    assert flags_sync() == 0


def test_old_coups_without_a_flag_get_one_at_their_time(shoe, turn, deal, clock,
                                                        monkeypatch):
    """A coup recorded before flags were raised with it (no writer
    registered then): flags_sync raises its flag, dated by the coup."""
    monkeypatch.setattr(hooks, "_writers", [])
    with clock(timezone.now() - timedelta(days=2), timedelta(seconds=20)):
        coup = deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    assert not Flag.objects.exists()
    monkeypatch.undo()
    assert flags_sync() == 1
    assert_raised_with(coup)


@pytest.mark.postgres
def test_postgres_batch_writes_the_flag_in_the_same_round_trip(shoe, turn, deal,
                                                               monkeypatch):
    deal(shoe, FALSE_DRAW, [stake("200", seat=3)])  # warm the caches
    batches = []
    real = ledger_pg._execute

    def spy(statements, **kw):
        batches.append([ledger_pg.statement_parts(sql) for sql, _ in statements])
        return real(statements, **kw)

    monkeypatch.setattr(ledger_pg, "_execute", spy)
    coup = deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    # the lock; the coup's rows and the chain; with the chain held, the flags,
    # rollups and log row (the flags after the chain, as flags_sync's), the
    # flags first and on their own (an event reads its flag's id)
    assert len(batches) == 3
    assert "INSERT tables_finding" in batches[1][0]
    assert batches[1][0][-1] == "casino_chain_head"
    assert batches[2][:2] == [["INSERT audit_flag"], ["INSERT audit_flagevent"]]
    assert batches[2][2][-2:] == ["INSERT casino_changelog", "INSERT casino_seal"]
    assert_raised_with(coup)


@pytest.mark.postgres
def test_postgres_fast_and_orm_paths_write_the_same_flag(manager, croupier,
                                                         monkeypatch):
    from decimal import Decimal

    def one_coup(name):
        table = services.table_create(user=manager, name=name, seats=9,
                                      minimum_banco=Decimal("100.00"))
        session = services.session_open(table=table, user=croupier)
        shoe = services.shoe_open(session=session, user=croupier, burned=5)
        services.banker_turn_open(session=session, user=croupier, seat=1,
                                  bank=Decimal("1000.00"))
        coup = services.coup_record(shoe_id=shoe.pk, user=croupier,
                                    punter=FALSE_DRAW[0], banker=FALSE_DRAW[1],
                                    stakes=[stake("200", seat=3)]).coup
        flag = the_flag(coup)
        row = {f: getattr(flag, f) for f in FIELDS}
        row["ident"] = row["ident"].split(":", 3)[3]
        row.pop("raised_at")
        return row, list(flag.events.values_list("action", "detail", "user_id"))

    assert connection.vendor == "postgresql"
    fast = one_coup("Fast")
    monkeypatch.setattr(ledger_pg, "supported", lambda: False)
    orm = one_coup("ORM")
    assert fast == orm
