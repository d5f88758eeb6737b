"""The PostgreSQL write path of coup_record (tables/services/ledger_pg.py)
writes exactly what the ORM path writes, in two statements, and its
change-log rows (digest computed by the database) verify."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Q

from casino.models import ChangeLog
from casino.trail import trail_verify
from tables import services
from tables.models import BankerTurn, Coup, DailyRollup, Finding, Shoe, Stake
from tables.services import ledger_pg

pytestmark = pytest.mark.postgres

D = Decimal
# A game: banker wins, a tie (its stake stays for the next coup), a false
# draw (banker 3 against a punter's 8 must stand), a declared bank that does
# not match, a standing player, then the
# punter wins and the bank is lost (the turn closes, the response names the
# next banker).
GAME = [
    (["2H", "3D"], ["8C", "TS"], [("300", 2, None)], None),
    (["4H", "3D"], ["7C", "KS"], [("200", 3, None)], None),
    # the tie's stake stays on the table (house rule tie_rule "stay")
    (["2H", "3D", "8S"], ["2C", "AS", "5D"],
     [("200", 3, None), ("100", 4, None), ("50", None, "Mme R.")], None),
    (["2H", "3D"], ["8C", "TS"], [("100", 5, None)], D("999.00")),
    (["9H", "KD"], ["5C", "2S"], [("400", 2, None)], None),
]
SKIP = {"id", "coup", "coup_id", "shoe", "shoe_id", "turn", "turn_id", "rules",
        "rules_id", "created_at", "session", "session_id", "table", "table_id",
        "opened_at", "closed_at", "idempotency_key", "at", "object_id",
        "prev_hash", "hash", "link"}


def play(shoe, user, key):
    payloads = []
    for i, (punter, banker, stakes, declared) in enumerate(GAME):
        result = services.coup_record(
            shoe_id=shoe.pk, user=user, punter=punter, banker=banker,
            stakes=[services.StakeInput(amount=D(a), seat=s, standing=w)
                    for a, s, w in stakes],
            declared_bank=declared, idempotency_key=f"{key}-{i}",
        )
        assert result.created
        payloads.append(result.coup)
    # The bank was lost: the next seat opens a turn (a second turn, after one).
    services.banker_turn_open(session=shoe.session, user=user,
                              seat=payloads[-1].next_banker_seat, bank=D("150.00"))
    return payloads


def rows(model, **where):
    return [
        {k: v for k, v in row.items() if k not in SKIP}
        for row in model.objects.filter(**where).order_by("id").values()
    ]


def snapshot(shoe):
    session = shoe.session
    coups = Coup.objects.filter(shoe=shoe)
    return {
        "coups": rows(Coup, shoe=shoe),
        "stakes": rows(Stake, coup__in=coups),
        "findings": rows(Finding, coup__in=coups),
        "turns": rows(BankerTurn, session=session),
        "shoe": rows(Shoe, pk=shoe.pk),
        "rollup": rows(DailyRollup, table_id=session.table_id),
        "log": [  # the shoe's id differs between the two tables, nothing else
            {k: v for k, v in row.items() if k not in SKIP}
            | {"new": {k: v for k, v in row["new"].items() if k != "shoe"}}
            # Digests bind ids and times, which differ: the same rows bound.
            | {"ledger": {label: len(v) for label, v in row["ledger"].items()}}
            for row in ChangeLog.objects.filter(
                Q(action="tables.coup.recorded", object_id__in=[
                    str(pk) for pk in coups.values_list("pk", flat=True)])
                | Q(action="tables.turn.opened", object_id__in=[
                    str(pk) for pk in session.turns.values_list("pk", flat=True)])
            ).order_by("id").values()
        ],
    }


def open_table(name, manager, croupier):
    table = services.table_create(user=manager, name=name, seats=9,
                                  minimum_banco=D("100.00"))
    session = services.session_open(table=table, user=croupier)
    shoe = services.shoe_open(session=session, user=croupier, burned=5)
    services.banker_turn_open(session=session, user=croupier, seat=1,
                              bank=D("1000.00"))
    return shoe


def test_both_paths_write_the_same_rows(db, manager, croupier, monkeypatch):
    fast_shoe = open_table("Fast", manager, croupier)
    fast = play(fast_shoe, croupier, "fast")

    monkeypatch.setattr(ledger_pg, "supported", lambda: False)
    orm_shoe = open_table("ORM", manager, croupier)
    orm = play(orm_shoe, croupier, "orm")

    a, b = snapshot(fast_shoe), snapshot(orm_shoe)
    assert a["coups"] and a["findings"], "the game has coups and findings"
    assert len(a["turns"]) == 2 and sum(
        r["action"] == "tables.turn.opened" for r in a["log"]) == 2
    assert {f["code"] for f in a["findings"]} >= {"false_draw", "bank_mismatch"}
    for part in a:
        assert a[part] == b[part], part
    assert trail_verify().ok, trail_verify().problem
    # What the API answers from (the instances in hand) matches too.
    assert [c.pk for c in fast] == list(
        Coup.objects.filter(shoe=fast_shoe).order_by("seq").values_list("pk", flat=True)
    )
    assert fast[-1].next_banker_seat == orm[-1].next_banker_seat == 2
    assert trail_verify().ok


def test_a_coup_is_three_statements_the_chain_held_for_the_last_two(
        db, shoe, turn, croupier):
    services.coup_record(  # warm: tableau cache, roles cache
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D"], banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=D("100"), seat=2)],
    )
    sent = []

    def spy(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        services.coup_record(
            shoe_id=shoe.pk, user=croupier, punter=["4H", "3D"], banker=["7C", "KS"],
            stakes=[services.StakeInput(amount=D("100"), seat=2)],
        )
    # The lock (shoe, turn, coup id), without the chain; once the coup is
    # judged and its rows made, one statement: its own rows then the chain
    # lock and its head (last); then, with the chain held, one more: the
    # rollup rows and the log row, signed here with the trail key (never sent
    # to the database). Savepoint statements only when nested in a test
    # transaction.
    work = [s for s in sent if "SAVEPOINT" not in s]
    assert len(work) == 3, work
    assert "FOR NO KEY UPDATE OF shoe, turn" in work[0]
    assert "casino_chain_head" not in work[0]
    assert ledger_pg.statement_parts(work[1]) == [
        "UPDATE tables_bankerturn",
        "INSERT tables_coup",
        "INSERT tables_stake",
        "UPDATE tables_shoe",
        "casino_chain_head",
    ], work[1]
    assert ledger_pg.statement_parts(work[2]) == [
        # its row of every rollup grain (tables/rollups.py GRAINS)
        "INSERT tables_dailyrollup",
        "INSERT tables_tabledayrollup",
        "INSERT tables_croupiermonthrollup",
        "INSERT tables_seatmonthrollup",
        "INSERT casino_changelog",
        # the seal index: which log row last wrote the shoe and the turn
        # (casino/models.py Seal), keyed by that log row's hash
        "INSERT casino_seal",
    ], work[2]
    from django.conf import settings

    from casino.trail import key_id_of

    log = ChangeLog.objects.order_by("-id").first()
    assert settings.TRAIL_KEY not in " ".join(sent)  # the key stays here
    assert log.key_id == key_id_of(settings.TRAIL_KEY)
    # Prepared, and kept by psycopg on the connection for the next coup.
    prepared = [query for query, _ in connection.connection._prepared._names]
    assert any(b"FOR NO KEY UPDATE OF shoe, turn" in q for q in prepared)
    assert any(q.startswith(b'WITH w0 AS (UPDATE "tables_bankerturn"')
               for q in prepared)
    assert any(q.startswith(b'WITH w0 AS (INSERT INTO "tables_dailyrollup"')
               for q in prepared)


def test_missing_turn_falls_back_with_the_precise_refusal(db, shoe, croupier):
    from tables.errors import Conflict

    with pytest.raises(Conflict) as refused:
        services.coup_record(
            shoe_id=shoe.pk, user=croupier, punter=["4H", "3D"],
            banker=["7C", "KS"],
            stakes=[services.StakeInput(amount=D("100"), seat=2)],
        )
    assert refused.value.field == "turn"
    assert not Coup.objects.exists()


def test_log_action_rows_chain_on_postgresql(db, croupier):
    from django.db import transaction

    from casino.changelog import log_action

    with transaction.atomic():
        first = log_action(action="test.one", user=croupier, new={"a": "é", "n": 1})
        second = log_action(action="test.two", reason="quote \" and \\ back")
    stored = ChangeLog.objects.get(pk=second.pk)
    assert stored.prev_hash == first.hash == ChangeLog.objects.get(pk=first.pk).hash
    assert (stored.hash, stored.prev_hash) == (second.hash, second.prev_hash)
    assert (stored.link, len(first.link)) == (second.link, 64)
    assert trail_verify().ok


@pytest.mark.django_db(transaction=True)
def test_the_prepared_lock_survives_rollbacks_and_reconnects(manager, croupier):
    from tables.chemmy import CoupError

    shoe = open_table("Prepared", manager, croupier)

    def coup(seat):
        return services.coup_record(
            shoe_id=shoe.pk, user=croupier, punter=["4H", "3D"], banker=["7C", "KS"],
            stakes=[services.StakeInput(amount=D("100"), seat=seat)],
        )

    connection.close()  # a fresh database session: the statement is prepared
    with pytest.raises(CoupError):  # in a transaction that then rolls back
        coup(seat=1)  # seat 1 holds the bank: refused after the lock
    assert coup(seat=2).created  # still prepared: used, not re-prepared
    connection.close()  # a new session prepares it again
    assert coup(seat=2).created  # a tie again: its stake stayed on the table
    assert list(Coup.objects.filter(shoe=shoe).values_list("seq", flat=True)) == [1, 2]



def test_a_turn_opening_is_two_statements_the_chain_after_its_row(
        db, session, shoe, croupier):
    sent = []

    def spy(execute, sql, params, many, context):
        sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        turn = services.banker_turn_open(session=session, user=croupier, seat=1,
                                         bank=D("1000.00"))
    # The session locked with the last sealed digests of the rows the turn
    # builds on, then the chain lock and its head (after the row lock, in the
    # same statement); the turn, its log row and its seal, one statement.
    work = [s for s in sent if "SAVEPOINT" not in s]
    assert len(work) == 2, work
    assert "FOR NO KEY UPDATE OF session" in work[0]
    assert work[0].startswith("SELECT locked.*, casino_sealed(")
    assert ", casino_chain_head($1) FROM (" in work[0]
    assert ledger_pg.statement_parts(work[1]) == [
        "INSERT tables_bankerturn", "INSERT casino_changelog", "INSERT casino_seal",
    ], work[1]
    log = ChangeLog.objects.order_by("-id").first()
    assert log.action == "tables.turn.opened" and log.object_id == str(turn.pk)
    assert trail_verify().ok


@pytest.mark.django_db(transaction=True)
def test_a_coup_refused_by_its_own_rows_never_waits_for_the_chain(manager, croupier):
    """The coup's rows and the chain are one statement: the rows first. A
    key already used on another body fails at the coup's row (the unique
    index), while another session holds the chain, without waiting for it."""
    import psycopg

    from casino.trail import ADVISORY_LOCK_KEY
    from tables.errors import Conflict

    shoe = open_table("Chain order", manager, croupier)

    def coup(seat):
        return services.coup_record(
            shoe_id=shoe.pk, user=croupier, punter=["4H", "3D"], banker=["7C", "KS"],
            stakes=[services.StakeInput(amount=D("100"), seat=seat)],
            idempotency_key="chain-order",
        )

    assert coup(seat=2).created
    holder = psycopg.connect(**connection.get_connection_params())
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        with connection.cursor() as cursor:  # waiting would fail, not hang
            cursor.execute("SET lock_timeout = '3s'")
        with pytest.raises(Conflict) as refused:
            coup(seat=3)  # the same key on another body
        assert refused.value.field == "Idempotency-Key"
    finally:
        holder.rollback()
        holder.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert Coup.objects.filter(shoe=shoe).count() == 1


def test_values_are_what_djangos_preparation_makes(db, shoe, turn, croupier,
                                                   monkeypatch):
    """ledger_pg passes an aware datetime, a date and a finite Decimal as
    they are (Django's preparation on PostgreSQL gives them back unchanged)
    and prepares everything else through the ORM: for every row a coup
    writes (a false draw, so findings too), the values are the ORM's own."""
    from datetime import date, datetime

    from psycopg.types.json import Jsonb

    from casino.changelog import log_entry_rows, log_rows_signed
    from casino.models import ChangeLog
    from tables.rollups import GRAINS

    seen = {}
    real = ledger_pg.coup_write

    def spy(**kw):
        seen.update(kw)
        return real(**kw)

    monkeypatch.setattr(ledger_pg, "coup_write", spy)
    services.coup_record(  # banker 3 against a punter's third 8: a false draw
        shoe_id=shoe.pk, user=croupier, punter=["2H", "3D", "8S"],
        banker=["2C", "AS", "5D"], stakes=[services.StakeInput(amount=D("100"),
                                                                seat=2)],
    )
    prepared = seen["prepared"]
    assert prepared.findings
    log = log_rows_signed("", log_entry_rows([seen["log"]]))
    cells = [grain.model(**grain.filters(seen["table_id"], grain.key(prepared.coup)),
                         findings={"false_draw": 1}) for grain in GRAINS]
    rows = [prepared.coup, *prepared.stakes, *prepared.findings, seen["turn"],
            seen["shoe"], *cells, *log]
    assert any(isinstance(r, ChangeLog) for r in rows)

    def plain(value):
        return ("jsonb", value.obj) if isinstance(value, Jsonb) else value

    kinds = set()
    for obj in rows:
        fields = ledger_pg._fields(type(obj), None, True)
        ours = ledger_pg._values(obj, fields)
        django = [f.get_db_prep_save(f.pre_save(obj, True), connection)
                  for f, _ in fields]
        assert [plain(v) for v in ours] == [plain(v) for v in django], obj
        # the types too, but for integers: Django wraps some (Int2, Int4) for
        # client-side binding, these statements bind server-side
        assert [type(v) for v in ours] == [
            int if isinstance(v, int) and type(v) is not bool else type(v)
            for v in django], obj
        kinds |= {type(v) for v in ours}
    assert {D, datetime, date, Jsonb} <= kinds
    # anything else than exactly the type goes through the ORM
    stake = prepared.stakes[0]
    field = type(stake)._meta.get_field("amount")
    kind = dict(ledger_pg._fields(type(stake), ("amount",), False))[field]
    assert ledger_pg._unchanged(kind, D("1.00"))
    for odd in (D("NaN"), D("Infinity"), "1.00", 1):
        assert not ledger_pg._unchanged(kind, odd)
    when = type(prepared.coup)._meta.get_field("created_at")
    when_kind = dict(ledger_pg._fields(type(prepared.coup), ("created_at",),
                                       False))[when]
    assert not ledger_pg._unchanged(when_kind, datetime(2026, 1, 1))  # naive
