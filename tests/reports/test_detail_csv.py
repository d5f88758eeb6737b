"""The coup detail CSV on PostgreSQL is built by the database (each line in
SQL, audit/reports/detail.py) for speed; it must be byte for byte the file the
Python csv.writer path writes (the SQLite path, and what the export wrote
before). Both are built here on the same coups and compared: corrections
(only current revisions), findings, ties, garages, money with cents, names
with commas, quotes and accents, coups either side of the gaming-day cut-off,
times with and without microseconds."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from audit.reports import detail, sheets
from tables.models import Coup

from .conftest import DAY1, DAY2, DAY3, at, close_sessions, play

PARIS = ZoneInfo("Europe/Paris")
STAMP = {"title": "Coup detail export", "period": "2025-03-03 to 2025-03-05",
         "gaming_day_note": "cut-off 06:00", "house_rules": [],
         "software_version": "test", "generated_at": "now", "generated_by": "t"}


def _correct_some(pitboss, how_many: int) -> int:
    """Raise a stake of some coups (a second revision; the coups after it in
    the shoe are re-settled as new revisions too)."""
    from tables import services
    from tables.rollups import current_coups

    done = 0
    for coup in current_coups().order_by("id"):
        if done == how_many:
            break
        stakes = [services.StakeInput(amount=s.amount, seat=s.seat,
                                      standing=s.standing or None)
                  for s in coup.stakes.all()]
        stakes[0] = services.StakeInput(amount=stakes[0].amount + Decimal("10"),
                                        seat=stakes[0].seat,
                                        standing=stakes[0].standing)
        try:
            services.coup_correct(coup=coup, user=pitboss, reason="mis-keyed",
                                  punter=coup.punter_cards,
                                  banker=coup.banker_cards, stakes=stakes)
        except Exception:  # noqa: BLE001 - this stake may not fit: try another
            continue
        done += 1
    return done


def _both(params, tmp_path) -> tuple[bytes, bytes, int]:
    sql_path, py_path = tmp_path / "sql.csv", tmp_path / "py.csv"
    calls: list[int] = []
    n_sql = detail.write_coups_csv(params, sql_path, stamp=STAMP,
                                   progress=calls.append)
    n_py = detail.write_coups_csv(params, py_path, stamp=STAMP, python=True)
    assert n_sql == n_py
    assert calls == [k * sheets.PROGRESS_EVERY
                     for k in range(1, n_sql // sheets.PROGRESS_EVERY + 1)]
    return sql_path.read_bytes(), py_path.read_bytes(), n_sql


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_sql_built_csv_is_the_python_csv_byte_for_byte(
    croupier, croupier2, pitboss, tmp_path, monkeypatch
):
    from tables.simulation import simulate
    from tests.conftest import make_user

    odd = make_user('Zoë "la, rousse"', "croupier")  # not through a form
    play(croupier, DAY1, tables=2, shoes=1, seed=1, rate=0.05,
         prefix='Table, "Ré" ü')
    play(odd, DAY2, tables=1, shoes=1, seed=2, rate=0.05, prefix="Ch\u00e2teau")
    # either side of the 06:00 cut-off (DAY2's gaming day until DAY3 05:59),
    # at moments with microseconds (one ending in a zero)
    for hour, minute, micro in ((5, 59, 123450), (6, 0, 0)):
        moment = datetime(DAY3.year, DAY3.month, DAY3.day, hour, minute, 59,
                          micro, tzinfo=PARIS)
        with at(moment):
            report = simulate(user=croupier2, tables=1, shoes=1, seed=3 + hour,
                              false_draw_rate=0.05, table_prefix=f"Dawn {hour}")
        close_sessions(croupier2, report.table_ids, DAY3)
    assert _correct_some(pitboss, 3) == 3

    coups = Coup.objects.all()
    # what the comparison covers, or it proves nothing
    assert coups.filter(revision__gt=1).exists()
    assert coups.filter(finding_count__gt=0).exists()
    assert coups.filter(outcome="tie").exists()
    assert coups.exclude(garage=0).exists()
    assert any(c.commission % 1 for c in coups)  # cents
    assert coups.filter(gaming_day=DAY2, created_at__gt=datetime(
        DAY3.year, DAY3.month, DAY3.day, tzinfo=PARIS)).exists()
    assert coups.filter(gaming_day=DAY3).exists()
    assert any(c.created_at.microsecond for c in coups)

    monkeypatch.setattr(sheets, "PROGRESS_EVERY", 7)  # several chunks
    params = {"from_day": str(DAY1 - timedelta(days=1)),
              "to_day": str(DAY3 + timedelta(days=1)), "tables": []}
    sql, py, n = _both(params, tmp_path)
    assert sql == py
    from tables.rollups import current_coups

    assert n == current_coups().count() < coups.count() > n
    text = sql.decode()
    assert '"Table, ""Ré"" ü' in text and '"Zoë ""la, rousse"""' in text
    assert "\r\n" in text and "\n" not in text.replace("\r\n", "")
    body = list(csv.reader(io.StringIO(text)))
    assert body[-n - 1][0] == "gaming_day"
    assert {r[0] for r in body[-n:]} == {str(DAY1), str(DAY2), str(DAY3)}

    # one table, one day: the filters are the same on both paths
    some = Coup.objects.filter(gaming_day=DAY2).first()
    params = {"from_day": str(DAY2), "to_day": str(DAY2),
              "tables": [some.shoe.session.table_id]}
    sql, py, n = _both(params, tmp_path)
    assert sql == py and n > 0


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("value", [
    "plain", "", "a,b", 'say "hi"', '"', "line\nbreak", "cr\rhere", "crlf\r\n",
    " spaced ", "tab\there", "back\\slash", "\\.", "Zoë, ünï — 東", "'quote'",
    "semi;colon",
])
def test_text_is_quoted_as_csv_writer_quotes_it(value):
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"SELECT {detail._quoted('x')} FROM (SELECT %s::text AS x) t",
                    [value])
        got = cur.fetchone()[0]
    out = io.StringIO(newline="")
    csv.writer(out).writerow([value, "end"])
    assert got + ",end\r\n" == out.getvalue()


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("cards", [
    [], ["9H"], ["9H", "KD", "2C"], ["10S", "AH"], ['a"b', "c,d"], ["x\\y", "z"],
    ["é", "東"], ["a", "", "b"], ['", "', "q"], ["2H", "3H", "4H", "5H"], [],
])
def test_cards_are_joined_as_the_python_writer_joins_them(cards):
    import json

    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(f"SELECT {detail._cards('x')} FROM (SELECT %s::jsonb AS x) t",
                    [json.dumps(cards)])
        assert cur.fetchone()[0] == " ".join(cards)


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("moment", [
    datetime(2025, 3, 3, 22, 0, tzinfo=PARIS),
    datetime(2025, 3, 30, 2, 30, 5, 7, tzinfo=ZoneInfo("UTC")),
    datetime(2025, 10, 26, 1, 59, 59, 999999, tzinfo=ZoneInfo("UTC")),
    datetime(2025, 1, 1, 0, 0, 0, 100000, tzinfo=PARIS),
    datetime(999, 12, 31, 23, 0, tzinfo=ZoneInfo("UTC")),
])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_times_are_written_as_python_writes_them(moment, zone):
    """ISO 8601 in UTC ("Z"), whatever the session's time zone."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT %s::timestamptz", [moment])
        as_read = cur.fetchone()[0]  # what the Python path gets
        cur.execute("SELECT set_config('TimeZone', %s, true)", [zone])
        cur.execute(f"SELECT {detail._timestamp('x')} FROM "
                    f"(SELECT %s::timestamptz AS x) t", [moment])
        got = cur.fetchone()[0]
    assert got == detail._cell(as_read)
    assert got.endswith("Z") and datetime.fromisoformat(got) == moment
    assert ("." in got) == bool(moment.microsecond)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_it_reads_on_a_connection_of_its_own(
    _migration_rows, croupier, tmp_path, monkeypatch
):
    """As in a worker (autocommit): the rows come through a second connection,
    in a transaction (streamed, not kept whole on the server), while progress
    is written on the usual one and committed at once; the second connection
    is closed after, even when the build fails."""
    from django.db import connection, connections

    play(croupier, DAY1, tables=1, shoes=1, seed=4, rate=0.05,
         prefix='Q, "quoted"')
    monkeypatch.setattr(sheets, "PROGRESS_EVERY", 10)
    opened = []
    real = connections.create_connection

    def spy(alias):
        opened.append(real(alias))
        return opened[-1]

    monkeypatch.setattr(connections, "create_connection", spy)
    seen = []

    def progress(n):
        assert connection.get_autocommit() and not connection.in_atomic_block
        with connection.cursor() as cur:  # free while the reader streams
            cur.execute("SELECT %s", [n])
            seen.append(cur.fetchone()[0])
        assert opened[-1].in_atomic_block is False
        assert not opened[-1].get_autocommit()  # the reader's transaction

    sql, py = tmp_path / "sql.csv", tmp_path / "py.csv"
    n = detail.write_coups_csv({"from_day": str(DAY1), "to_day": str(DAY1)}, sql,
                               stamp=STAMP, progress=progress)
    assert len(opened) == 1 and opened[0].connection is None  # closed
    assert seen == list(range(10, n + 1, 10)) and n > 10
    detail.write_coups_csv({"from_day": str(DAY1), "to_day": str(DAY1)}, py,
                           stamp=STAMP, python=True)
    assert sql.read_bytes() == py.read_bytes()

    def boom(n):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        detail.write_coups_csv({"from_day": str(DAY1), "to_day": str(DAY1)}, sql,
                               stamp=STAMP, progress=boom)
    assert len(opened) == 2 and opened[1].connection is None
