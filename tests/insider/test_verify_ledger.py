"""verify_ledger re-proves the money from the cards (issue 11, finding 2).

With the database triggers bypassed, as a PostgreSQL superuser can
(`SET session_replication_role = replica`), a coup's commission, its stakes,
a banker turn, a rollup cell, a stake or a whole coup change; nothing in the
app looks, and the session's computed cagnotte moves with them. verify_ledger
settles every coup again from its cards, stakes and house rules, re-computes
turns, shoes, rollups and cagnottes, and names each difference (exit 1); the
nightly task makes each one a critical flag, once. Honest records (simulated
nights, hand-dealt coups with announcements, a passed bank, a bank mismatch,
corrections and what they re-settle, the demo casino) verify with no
difference. On SQLite (no triggers) the same rows are changed with plain SQL.
"""

from __future__ import annotations

import importlib
import json
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from tables.models import (
    BankerTurn,
    Coup,
    DailyRollup,
    Stake,
    TableDayRollup,
    TableSession,
)
from tables.rollups import GRAINS
from tests.reports.conftest import DAY1, DAY2, play

pytestmark = pytest.mark.django_db
D = Decimal
PARIS = ZoneInfo("Europe/Paris")
BANKER_WINS = (["2H", "3D"], ["8C", "TS"])  # punter 5 stands, banker natural 8
PUNTER_WINS = (["9H", "KD"], ["5C", "2S"])  # punter natural 9
TIE = (["3H", "4D"], ["2C", "5S"])  # 7 v 7


def verify(*args) -> tuple[int, str, dict | None]:
    """Run the command: (exit code, what it printed, the JSON if asked)."""
    out = StringIO()
    try:
        call_command("verify_ledger", *args, stdout=out)
        code, message = 0, ""
    except CommandError as exc:  # manage.py exits with its returncode
        code, message = exc.returncode, str(exc)
    text = out.getvalue()
    body = json.loads(text) if "--json" in args else None
    return code, text + message, body


@contextmanager
def triggers_off():
    """A cursor that writes past the append-only triggers, as a database
    superuser would: off its runtime role, in replication mode (which skips
    every trigger, foreign keys included). SQLite has no triggers."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            yield cursor
            return
        cursor.execute("SELECT current_user, session_user")
        current, session = cursor.fetchone()
        cursor.execute("RESET ROLE")
        cursor.execute("SET session_replication_role = replica")
        try:
            yield cursor
        finally:
            cursor.execute("SET session_replication_role = origin")
            if current != session:
                cursor.execute(f"SET ROLE {connection.ops.quote_name(current)}")


def tamper(sql: str, params=()) -> None:
    with triggers_off() as cursor:
        cursor.execute(sql, params)


def coup_name(coup: Coup) -> str:
    return (f"coup {coup.pk} (shoe {coup.shoe.number}, seq {coup.seq}, "
            f"rev {coup.revision})")


def stake(amount, seat=2, announcement="none", standing=None):
    from tables.services import StakeInput

    return StakeInput(amount=D(str(amount)), seat=seat, standing=standing,
                      announcement=announcement)


def hand_dealt(user, shoe, session):
    """Coups as a tablet records them, one by one: a banco solo won, its
    suivi (a tie), a declared bank that differs (999 against 1950), a standing
    punter, a bank lost; a new bank passed on and taken over at its amount."""
    from tables import services

    def deal(cards, stakes, **extra):
        return services.coup_record(shoe_id=shoe.pk, user=user, punter=cards[0],
                                    banker=cards[1], stakes=stakes, **extra).coup

    deal(BANKER_WINS, [stake("1000", seat=3, announcement="banco_solo")])
    deal(TIE, [stake("1950", seat=3, announcement="suivi")])
    # the tie's stake stays on the table (house rule tie_rule "stay")
    deal(PUNTER_WINS, [stake("1950", seat=3), stake("100"),
                       stake("50", seat=None, standing="rail")],
         declared_bank=D("999"))
    second = services.banker_turn_open(session=session, user=user, seat=2,
                                       bank=D("500"))
    deal(BANKER_WINS, [stake("200", seat=5), stake("300", seat=6)])
    services.banker_turn_pass(turn=second, user=user)
    second.refresh_from_db()
    third = services.banker_turn_open(session=session, user=user, seat=3,
                                      bank=second.bank)
    assert third.took_passed_bank
    deal(BANKER_WINS, [stake("100", seat=4)])


def correct(pitboss, seq: int, punter, banker) -> None:
    from tables.services import StakeInput, coup_correct

    coup = Coup.objects.filter(seq=seq, shoe__session__table__name="Sim 10-1") \
        .order_by("-revision").first()
    stakes = [StakeInput(amount=s.amount, seat=s.seat, standing=s.standing or None,
                         announcement=s.announcement) for s in coup.stakes.all()]
    coup_correct(coup=coup, user=pitboss, reason="cards mis-keyed", punter=punter,
                 banker=banker, stakes=stakes)


@pytest.fixture
def night(croupier):
    """A simulated gaming day, closed."""
    play(croupier, DAY1, tables=1, shoes=1, seed=3, rate=0.05)


# -- honest records -------------------------------------------------------------


def test_honest_records_verify_with_no_difference(croupier, croupier2, pitboss,
                                                  session, shoe, turn):
    from audit.services import cagnotte_count
    from tables.services import session_close

    play(croupier, DAY1, tables=2, shoes=1, seed=1, rate=0.05)
    play(croupier2, DAY2, tables=1, shoes=2, seed=10, rate=0.1)
    hand_dealt(croupier, shoe, session)
    session_close(session=session, user=croupier)
    cagnotte_count(session=session, counted=D("1.00"), user=pitboss)
    # Corrections: who won changes mid-turn, a third card moves the shoe's
    # counts; every later coup is re-settled (new revisions where it changes).
    correct(pitboss, 3, ["9H", "KD"], ["2C", "3C"])
    correct(pitboss, 7, ["2D", "3D"], ["9S", "QC"])
    correct(pitboss, 12, ["2H", "3D", "4C"], ["KS", "QH"])
    assert Coup.objects.filter(revision__gt=1).count() > 3
    call_command("demo", stdout=StringIO())

    code, out, _ = verify()
    assert code == 0, out
    coups = Coup.objects.filter(revision=1).count()
    turns = BankerTurn.objects.count()
    cells = DailyRollup.objects.exclude(coups=0).count()
    sessions = TableSession.objects.count()
    assert out.strip() == (f"Ledger re-settled: {coups} coups, {turns} turns, "
                           f"{cells} rollup cells, {sessions} sessions: "
                           "no difference")
    code, out, body = verify("--json", "--from", str(DAY2), "--to", str(DAY2))
    assert code == 0 and body["ok"] and body["differences"] == []
    assert body["sessions"] == 1 and body["coups"] > 50


def test_bad_days_are_refused(night):
    with pytest.raises(CommandError, match="--from: expected a gaming day"):
        call_command("verify_ledger", "--from", "2025-13-01")
    with pytest.raises(CommandError, match="--to: must be on or after --from"):
        call_command("verify_ledger", "--from", str(DAY2), "--to", str(DAY1))


# -- tampering, each named -------------------------------------------------------


@pytest.mark.tampers
def test_a_commission_raised_outside_the_app_is_named(night):
    from audit.services import session_commission

    coup = Coup.objects.filter(commission=0, outcome="punter").first()
    session = coup.shoe.session
    before = session_commission(session)
    tamper(f"UPDATE {Coup._meta.db_table} SET commission = %s WHERE id = %s",
           [D("50.00"), coup.pk])
    assert session_commission(session) == before + 50  # the box "should" hold more

    code, out, _ = verify()
    assert code == 1
    assert f"{coup_name(coup)}: commission stored 50.00, re-settled 0.00" in out
    assert (f"session {session.pk} ({session.table.name}, gaming day {DAY1}): "
            f"cagnotte (commission over its coups) stored {before + 50}, "
            f"re-settled {before}") in out
    assert "Ledger differs: 2 differences" in out
    _, _, body = verify("--json")
    assert body["ok"] is False
    assert {(d["coup_id"], d["field"], d["stored"], d["expected"])
            for d in body["differences"]} >= {(coup.pk, "commission", "50.00",
                                               "0.00")}


@pytest.mark.tampers
def test_stakes_times_ten_are_named(night):
    coup = Coup.objects.filter(outcome="banker", finding_count=0).first()
    tamper(f"UPDATE {Stake._meta.db_table} SET amount = amount * 10, "
           "covered = covered * 10, declined = declined * 10, "
           "payout = payout * 10 WHERE coup_id = %s", [coup.pk])

    code, out, _ = verify()
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith(coup_name(coup))]
    assert lines, out
    # The stakes no longer add up to what the coup covered and settled.
    assert any(": covered stored" in line or "stake 0" in line for line in lines)


@pytest.mark.tampers
def test_a_turn_bank_changed_is_named(night):
    turn = BankerTurn.objects.filter(coups__gt=1, end="passed").first()
    tamper(f"UPDATE {BankerTurn._meta.db_table} SET bank = bank + 100 "
           "WHERE id = %s", [turn.pk])

    code, out, _ = verify()
    assert code == 1
    name = (f"banker turn {turn.pk} (session {turn.session_id}, number "
            f"{turn.number}, seat {turn.seat})")
    assert f"{name}: bank stored {turn.bank + 100}, re-computed {turn.bank}" in out


@pytest.mark.tampers
def test_a_rollup_cell_changed_is_named(night):
    cell = DailyRollup.objects.filter(commission__gt=0).first()
    tamper(f"UPDATE {DailyRollup._meta.db_table} SET commission = "
           "commission - 10 WHERE id = %s", [cell.pk])

    code, out, _ = verify()
    assert code == 1
    assert (f"rollup cell {cell.pk} (table {cell.table.name}, gaming day "
            f"{cell.gaming_day}, croupier {cell.croupier.username}, banker seat "
            f"{cell.banker_seat}): commission stored {cell.commission - 10}, "
            f"re-computed {cell.commission}") in out


@pytest.mark.tampers
@pytest.mark.parametrize("model", [g.model for g in GRAINS[1:]],
                         ids=lambda m: m.__name__)
def test_a_report_rollup_changed_is_named(night, model):
    """The coarser rows the reports read are checked too: a superuser's edit
    of a table-day, a croupier's month or a seat's month is named."""
    row = model.objects.filter(commission__gt=0).order_by("pk").first()
    tamper(f"UPDATE {model._meta.db_table} SET commission = commission - 10, "
           "coups = coups + 1 WHERE id = %s", [row.pk])

    code, out, _ = verify()
    assert code == 1
    name = f"{model._meta.verbose_name} {row.pk} (table {row.table_id}, "
    assert name in out
    assert (f"commission stored {row.commission - 10}, re-computed "
            f"{row.commission}") in out
    assert f"coups stored {row.coups + 1}, re-computed {row.coups}" in out


@pytest.mark.tampers
def test_a_deleted_report_rollup_row_is_named(night):
    row = TableDayRollup.objects.filter(coups__gt=0).order_by("pk").first()
    tamper(f"DELETE FROM {TableDayRollup._meta.db_table} WHERE id = %s", [row.pk])

    code, out, _ = verify()
    assert code == 1
    assert (f"table day rollup (table {row.table_id}, gaming day {row.gaming_day}, "
            f"rules {row.rules_id}): row stored missing") in out


@pytest.mark.tampers
def test_a_deleted_stake_is_named(night):
    # Every stake fully covered (a garage left): one gone, less is covered.
    coup = next(c for c in Coup.objects.filter(garage__gt=0).order_by("pk")
                if c.stakes.count() > 1)
    gone = coup.stakes.order_by("position").first()
    tamper(f"DELETE FROM {Stake._meta.db_table} WHERE id = %s", [gone.pk])

    code, out, _ = verify()
    assert code == 1
    assert f"{coup_name(coup)}: stake positions stored" in out
    assert f"{coup_name(coup)}: covered stored {coup.covered}, re-settled" in out


@pytest.mark.tampers
def test_a_deleted_coup_is_named(night):
    coup = Coup.objects.filter(finding_count=0, seq__gt=2).order_by("seq").first()
    tamper(f"DELETE FROM {Stake._meta.db_table} WHERE coup_id = %s", [coup.pk])
    tamper(f"DELETE FROM {Coup._meta.db_table} WHERE id = %s", [coup.pk])

    code, out, _ = verify()
    assert code == 1
    shoe = coup.shoe
    last = shoe.next_seq - 1
    assert (f"shoe {shoe.pk} (session {shoe.session_id}, number {shoe.number}): "
            f"coup seqs stored 1-{coup.seq - 1}, {coup.seq + 1}-{last}, "
            f"expected 1-{last}") in out
    assert f"banker turn {coup.turn_id} " in out  # its coups and money


@pytest.mark.tampers
def test_a_range_checks_the_sessions_of_its_days(night, croupier2):
    play(croupier2, DAY2, tables=1, shoes=1, seed=4)
    coup = Coup.objects.filter(gaming_day=DAY2, commission__gt=0).first()
    tamper(f"UPDATE {Coup._meta.db_table} SET commission = commission + 1 "
           "WHERE id = %s", [coup.pk])
    assert verify("--from", str(DAY1), "--to", str(DAY1))[0] == 0
    code, out, _ = verify("--from", str(DAY2), "--to", str(DAY2))
    assert code == 1 and f"{coup_name(coup)}: commission stored" in out


@pytest.mark.postgres
@pytest.mark.tampers
def test_the_triggers_refuse_the_edit_and_the_bypass_is_caught(night):
    """As the app: the UPDATE is refused. As a superuser with the triggers
    off: it lands, nothing else notices, verify_ledger names it."""
    coup = Coup.objects.filter(commission=0, outcome="punter").first()
    update = f"UPDATE {Coup._meta.db_table} SET commission = 50.00 WHERE id = %s"
    with pytest.raises(DatabaseError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(update, [coup.pk])
    assert verify()[0] == 0
    tamper(update, [coup.pk])
    code, out, _ = verify()
    assert code == 1
    assert f"{coup_name(coup)}: commission stored 50.00, re-settled 0.00" in out


# -- the nightly run and the review queue -----------------------------------------


def _schedules():
    from django.apps import apps

    # put back after a transactional test's flush, as the migrations leave them
    for name in ("audit.migrations.0003_ledger_mismatch",
                 "audit.migrations.0004_gaming_day_close"):
        importlib.import_module(name).create(apps, None)


@pytest.mark.tampers
def test_the_nightly_task_raises_one_critical_flag_per_difference_once(night):
    from audit.models import Flag
    from audit.tasks import verify_ledger_task
    from casino.models import ChangeLog

    coup = Coup.objects.filter(commission=0, outcome="punter").first()
    tamper(f"UPDATE {Coup._meta.db_table} SET commission = 50.00 WHERE id = %s",
           [coup.pk])
    turn = BankerTurn.objects.filter(coups__gt=1).first()
    tamper(f"UPDATE {BankerTurn._meta.db_table} SET garage_total = "
           "garage_total + 5 WHERE id = %s", [turn.pk])
    _, out, body = verify("--json")
    expected = {d["text"] for d in body["differences"]}
    assert len(expected) == 3  # the coup, the session's cagnotte, the turn

    # The beat schedule's run on the morning after DAY1: the previous day.
    result = verify_ledger_task.apply(kwargs={"day": DAY1.isoformat()}).get()
    assert result["differences"] == 3 and result["flags_raised"] == 3
    flags = Flag.objects.filter(kind="ledger")
    assert {f.message for f in flags} == expected
    assert {(f.code, f.severity, f.status) for f in flags} == {
        ("ledger_mismatch", "critical", "open")}
    on_coup = flags.get(coup=coup)
    assert (on_coup.shoe_id, on_coup.seq, on_coup.croupier_id) == (
        coup.shoe_id, coup.seq, coup.entered_by_id)
    assert all(f.events.get().action == "raised" for f in flags)

    again = verify_ledger_task.apply(kwargs={"day": DAY1.isoformat()}).get()
    assert again["differences"] == 3 and again["flags_raised"] == 0
    assert Flag.objects.filter(kind="ledger").count() == 3
    runs = ChangeLog.objects.filter(action="audit.ledger.verified").order_by("id")
    assert [r.new["flags_raised"] for r in runs] == [3, 0]
    assert runs[0].new["from_day"] == runs[0].new["to_day"] == DAY1.isoformat()


@pytest.mark.tampers
def test_the_nightly_run_takes_the_previous_gaming_day(night, croupier2):
    from audit.services.ledger_flags import ledger_nightly

    play(croupier2, DAY2, tables=1, shoes=1, seed=4)
    coup = Coup.objects.filter(gaming_day=DAY1, commission__gt=0).first()
    tamper(f"UPDATE {Coup._meta.db_table} SET commission = commission + 1 "
           "WHERE id = %s", [coup.pk])
    # 06:30 on DAY2's date, past the 06:00 cut-off: gaming day DAY2 has
    # begun, so the previous one, DAY1, is re-settled.
    morning = datetime(DAY2.year, DAY2.month, DAY2.day, 6, 30, tzinfo=PARIS)
    summary = ledger_nightly(now=morning, cutoff_hour=6)
    assert summary["from_day"] == DAY1 and summary["flags_raised"] == 2
    later = ledger_nightly(now=morning + timedelta(days=1), cutoff_hour=6)
    assert later["from_day"] == DAY2 and later["differences"] == 0


@pytest.mark.tampers
def test_the_queue_page_and_the_api_show_a_ledger_flag(night, pitboss, client,
                                                       as_user):
    from audit.models import Flag
    from audit.services.ledger_flags import ledger_nightly

    coup = Coup.objects.filter(commission=0, outcome="punter").first()
    tamper(f"UPDATE {Coup._meta.db_table} SET commission = 50.00 WHERE id = %s",
           [coup.pk])
    ledger_nightly(day=DAY1)
    flag = Flag.objects.get(kind="ledger", coup=coup)

    r = as_user(pitboss).get("/api/v1/flags/", {"kind": "ledger",
                                                "severity": "critical"})
    assert r.status_code == 200, r.content
    rows = r.json()["results"]
    assert len(rows) == 2
    row = next(x for x in rows if x["id"] == flag.pk)
    assert (row["kind"], row["kind_label"], row["code"], row["severity"]) == (
        "ledger", "ledger mismatch", "ledger_mismatch", "critical")
    assert row["message"] == flag.message
    counts = as_user(pitboss).get("/api/v1/flags/counts/").json()
    assert {"value": "ledger_mismatch", "label": "ledger_mismatch",
            "count": 2} in counts["code"]

    client.force_login(pitboss)
    page = client.get("/floor/queue/").content.decode()
    assert 'data-code="ledger_mismatch"' in page and "nightly re-settlement" in page
    assert 'class="badge critical"' in page
    page = client.get(f"/floor/flags/{flag.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "verify_ledger" in text and "commission stored 50.00" in text


def test_the_nightly_schedule_is_in_the_database():
    """The re-settlement runs in the hourly gaming-day close, at each cut-off
    in use (audit/reports/nightly.py; tests/reports/test_gaming_day_close.py),
    not at a fixed 06:30."""
    from django_celery_beat.models import PeriodicTask

    from casino.celery import app

    _schedules()
    assert not PeriodicTask.objects.filter(task="audit.verify_ledger").exists()
    task = PeriodicTask.objects.get(task="reports.gaming_day_close")
    assert (task.crontab.hour, task.crontab.minute) == ("*", "15")
    assert str(task.crontab.timezone) == "Europe/Paris" and task.enabled
    app.loader.import_default_modules()
    assert "audit.verify_ledger" in app.tasks
    options = app.tasks["audit.verify_ledger"]
    assert options.acks_late and options.reject_on_worker_lost
