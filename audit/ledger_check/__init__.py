"""Re-proving the money from the cards: `manage.py verify_ledger` and the
nightly check (audit/services/ledger_flags.py). Reads only.

The change log says who wrote what; this says whether what is stored is what
the rules give. Every current coup revision of the sessions in range is
settled again by the rules engine (tables/chemmy) from its inputs alone: the
cards, the stakes as announced (amount, seat or standing label,
announcement), the house rules version the coup references, and the bank
carried forward along its banker turn as re-settled here. Every stored
result is compared with it: totals, outcome, choices, the punter's seat, bank
before and after, covered, garage, commission, each stake's covered, declined
and payout, the cards left, the next banker, the gaming day, the findings.
Then the banker turns (bank, coups, garage, commission, closing amount, the
opening of a bank taken over after a pass), the shoes' running state, the
daily rollup cells and each session's cagnotte are re-computed from the
re-settled coups, and compared with what is stored.

It walks the record as a correction re-settles it (tables/services/
resettle.py): the turn structure as recorded stands; a turn whose bank a
correction lost mid-way goes on with the banks recorded at the table; a
recorded suivi stands. So everything the application writes (coups, a shoe
recorded in one call, corrections and the coups they re-settle) verifies
with no difference; tests/insider/test_verify_ledger.py shows it, and that
each kind of tampering is named.

What it cannot see: a row rewritten together with everything derived from
it, down to the next coup's bank, the turn, the rollup cell and the cagnotte.
Binding each ledger row to its change-log row (verify_trail) covers that.

Sessions are checked whole (a turn, a shoe or a cagnotte does not stop at a
gaming day's cut-off), one at a time, their coups streamed in chunks. On
PostgreSQL the run reads one snapshot (REPEATABLE READ), so coups recorded
meanwhile at a live table never look like a difference.
"""

from __future__ import annotations

from datetime import date, timedelta

from django.db import transaction
from django.db.models import Count, F, Max, Min, Q

from tables.models import (
    Coup,
    CroupierMonthRollup,
    DailyRollup,
    HouseRules,
    SeatMonthRollup,
    Shoe,
    TableauVersion,
    TableDayRollup,
    TableSession,
)
from tables.rollups import GRAINS, OUTCOME_FIELD, month_of

from .differences import LIMIT, Difference, LedgerCheck, dict_diff, diff
from .walk import SessionWalk, empty_cell

__all__ = ["LIMIT", "Difference", "LedgerCheck", "ledger_verify"]
ROLLUP_FIELDS = ("coups", *OUTCOME_FIELD.values(), "covered", "covered_sq",
                 "commission", "levy_mean", "levy_var", "findings")


def ledger_verify(*, from_day: date | None = None,
                  to_day: date | None = None) -> LedgerCheck:
    """Re-settle the sessions with coups (or opened) on gaming days
    [from_day, to_day] (default: all of them) and name every difference."""
    if (from_day is None) != (to_day is None):
        raise ValueError("give both from_day and to_day, or neither")
    connection = transaction.get_connection()
    outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not outer:
            # One snapshot for the whole run: a coup recorded meanwhile is in
            # it with its turn, shoe and rollup cell, or not at all.
            with connection.cursor() as cursor:
                cursor.execute(
                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return _Run(from_day, to_day).run()


class _Run:
    def __init__(self, from_day, to_day):
        self.check = LedgerCheck(from_day, to_day)
        self.rules = {r.pk: r for r in HouseRules.objects.all()}
        # the tableaux house rules name (a version no rules name settles
        # nothing, and one inserted by hand may not even parse: verify_trail
        # names it)
        self.tableaux = {t.pk: t.as_engine() for t in TableauVersion.objects.filter(
            pk__in={r.tableau_id for r in self.rules.values()})}
        self.cells: dict[tuple, dict] = {}  # rollup cells from re-settled coups
        self.table_days: dict[tuple, dict] = {}  # (table, day, rules) rows

    def in_range(self, day: date) -> bool:
        c = self.check
        return c.from_day is None or c.from_day <= day <= c.to_day

    def sessions(self):
        c = self.check
        sessions = TableSession.objects.all()
        if c.from_day is not None:
            days = (c.from_day, c.to_day)
            touched = Coup.objects.filter(gaming_day__range=days).values(
                "shoe__session_id")
            sessions = sessions.filter(Q(gaming_day__range=days) | Q(pk__in=touched))
        return sessions

    def run(self) -> LedgerCheck:
        ids = list(self.sessions().order_by("pk").values_list("pk", flat=True))
        for session_id in ids:
            session = TableSession.objects.select_related("table").get(pk=session_id)
            SessionWalk(self, session).run()
            self.check.sessions += 1
        self.revisions()
        self.rollups()
        return self.check

    def revisions(self) -> None:
        """Each (shoe, seq) holds revisions 1..r, none missing."""
        groups = (
            Coup.objects.filter(shoe__session__in=self.sessions())
            .values("shoe_id", "seq")
            .annotate(n=Count("id"), top=Max("revision"), low=Min("revision"))
            .exclude(n=F("top"), low=1)
            .order_by("shoe_id", "seq")
        )
        for g in groups:
            shoe = Shoe.objects.select_related("session").get(pk=g["shoe_id"])
            revs = list(Coup.objects.filter(shoe_id=shoe.pk, seq=g["seq"])
                        .order_by("revision").values_list("revision", flat=True))
            self.check.add(diff(
                f"coup seq {g['seq']} of shoe {shoe.pk} (session "
                f"{shoe.session_id}, shoe number {shoe.number})", "revisions",
                ", ".join(map(str, revs)), f"1 to {g['top']}", verb="expected",
                table_id=shoe.session.table_id, session_id=shoe.session_id,
                gaming_day=shoe.session.gaming_day, shoe_id=shoe.pk, seq=g["seq"]))

    def rollups(self) -> None:
        c = self.check
        stored = DailyRollup.objects.select_related("table", "croupier")
        if c.from_day is not None:
            stored = stored.filter(gaming_day__range=(c.from_day, c.to_day))
        seen = set()
        for cell in stored.order_by("gaming_day", "table_id", "croupier_id",
                                    "banker_seat"):
            key = (cell.table_id, cell.gaming_day, cell.croupier_id,
                   cell.banker_seat)
            values = {f: getattr(cell, f) for f in ROLLUP_FIELDS}
            expected = self.cells.get(key)
            if expected is None and not any(values.values()):
                continue  # emptied by corrections: as good as absent
            seen.add(key)
            expected = expected or empty_cell()
            subject = (f"rollup cell {cell.pk} (table {cell.table.name}, gaming "
                       f"day {cell.gaming_day}, croupier {cell.croupier.username}, "
                       f"banker seat {cell.banker_seat})")
            ctx = {"table_id": cell.table_id, "gaming_day": cell.gaming_day,
                   "croupier_id": cell.croupier_id}
            for name in ROLLUP_FIELDS:
                if values[name] == expected[name]:
                    continue
                shown = (dict_diff(values[name], expected[name])
                         if name == "findings" else (values[name], expected[name]))
                c.add(diff(subject, name, *shown, verb="re-computed", **ctx))
        for key in sorted(set(self.cells) - seen, key=str):
            table_id, day, croupier_id, seat = key
            expected = self.cells[key]
            c.add(diff(
                f"rollup cell (table {table_id}, gaming day {day}, croupier "
                f"{croupier_id}, banker seat {seat})", "cell", "missing",
                f"{expected['coups']} coups, commission {expected['commission']}",
                verb="re-computed", table_id=table_id, gaming_day=day,
                croupier_id=croupier_id))
        c.rollup_cells = len(seen | set(self.cells))
        self.grains()

    def grains(self) -> None:
        """The coarser rollup rows the reports read (tables/rollups.py GRAINS),
        each against the re-settled coups: a table-day per house-rules version,
        a croupier's and a banker seat's month (months wholly inside the
        checked period only)."""
        c = self.check
        months: dict = {CroupierMonthRollup: {}, SeatMonthRollup: {}}
        for (table_id, day, croupier_id, seat), cell in self.cells.items():
            for model, key in ((CroupierMonthRollup, (table_id, month_of(day),
                                                      croupier_id)),
                               (SeatMonthRollup, (table_id, month_of(day), seat))):
                add_cell(months[model].setdefault(key, empty_cell()), cell)
        first = last = None
        if c.from_day is not None:
            first = month_of(c.from_day)
            if first != c.from_day:
                first = month_of(first + timedelta(days=31))
            last = month_of(c.to_day + timedelta(days=1)) - timedelta(days=1)
            last = month_of(last) if last >= first else None
        for grain in GRAINS[1:]:
            model = grain.model
            stored = model.objects.all()
            if model is TableDayRollup:
                expected = self.table_days
                if c.from_day is not None:
                    stored = stored.filter(gaming_day__range=(c.from_day, c.to_day))
            else:
                expected = months[model]
                if c.from_day is not None:
                    if last is None:
                        continue  # no whole month in the period
                    stored = stored.filter(month__range=(first, last))
                    expected = {k: v for k, v in expected.items()
                                if first <= k[1] <= last}
            name = model._meta.verbose_name
            seen = set()
            for row in stored.order_by("pk"):
                key = (row.table_id, *(getattr(row, f) for f in grain.fields))
                values = {f: getattr(row, f) for f in ROLLUP_FIELDS}
                want = expected.get(key)
                if want is None and not any(values.values()):
                    continue
                seen.add(key)
                want = want or empty_cell()
                subject = f"{name} {row.pk} ({_key_words(grain, key)})"
                for field in ROLLUP_FIELDS:
                    if values[field] == want[field]:
                        continue
                    shown = (dict_diff(values[field], want[field])
                             if field == "findings" else (values[field], want[field]))
                    c.add(diff(subject, field, *shown, verb="re-computed",
                               table_id=row.table_id))
            for key in sorted(set(expected) - seen, key=str):
                want = expected[key]
                c.add(diff(f"{name} ({_key_words(grain, key)})", "row", "missing",
                           f"{want['coups']} coups, commission {want['commission']}",
                           verb="re-computed", table_id=key[0]))


def _key_words(grain, key: tuple) -> str:
    names = ("table", *(f.removesuffix("_id").replace("_", " ") for f in grain.fields))
    return ", ".join(f"{n} {v}" for n, v in zip(names, key, strict=True))


def add_cell(into: dict, cell: dict) -> None:
    for name, value in cell.items():
        if name == "findings":
            for code, n in value.items():
                into["findings"][code] = into["findings"].get(code, 0) + n
        else:
            into[name] += value
