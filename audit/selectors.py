"""Selectors read: the floor, the review queue and its counts, a flag's file."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils.translation import gettext_lazy as _

from casino.models import ChangeLog
from tables.chemmy import punter_action
from tables.models import BankerTurn, Coup, Shoe, TableauVersion, TableSession
from tables.rollups import current_coups

from .models import Flag

LIVE_CODES = ("live_croupier", "live_banker", "live_table")


def hidden_from(user) -> int | None:
    """The reader's id when surveillance alerts name him as the croupier
    concerned (a croupier never sees alerts about himself, on any path: the
    queue and its counts, the API, the floor, a flag's page), else None
    (nothing to hide: the shared copies of the floor and the queue serve
    him). One indexed query."""
    pk = getattr(user, "pk", None)
    if pk is None or not Flag.objects.filter(
            kind=Flag.Kind.SURVEILLANCE, croupier_id=pk).exists():
        return None
    return pk


def visible(qs: QuerySet, hidden: int | None) -> QuerySet:
    """Flags less the surveillance alerts about ``hidden`` (hidden_from)."""
    if hidden is None:
        return qs
    return qs.exclude(kind=Flag.Kind.SURVEILLANCE, croupier_id=hidden)


SEVERITY_ORDER = Case(
    When(severity="critical", then=Value(0)), default=Value(1),
    output_field=IntegerField(),
)
FILTERS = ("table", "code", "side", "croupier", "gaming_day", "status", "severity")
# docs/rules.md, quoted on a flag's page, in the reader's language (issue
# 24, item 8: a finding's name in words, never its code).
RULE_QUOTES = {
    "false_draw": _("Drawing in an S cell or standing in a D cell is a false draw "
                    "by the banker. Standing on 0–4 or drawing on 6–7 is a false "
                    "draw by the punter."),
    "house_choice": _("An optional cell (the punter's 5, the banker's O cells) that "
                      "the house rules prescribe, played the other way, is a "
                      "finding: the house rule was not followed."),
    "draw_after_natural": _("A third card dealt to either side after a natural is "
                            "a finding; that card does not count in the totals."),
    "deal_below_seven": _("A coup may only begin with at least 7 cards left in the "
                          "shoe; a coup begun with fewer is a finding."),
    "card_count_exceeded": _("A card seen more times in one shoe than the shoe has "
                             "decks is a finding (a mis-keyed card or a foreign "
                             "card)."),
    "shoe_count": _("At a shoe's close the cards dealt, burned and counted left "
                    "must make 52 × decks; any other total is a finding: cards "
                    "missing from the shoe or added to it."),
    "bank_mismatch": _("The bank the croupier declared differs from the "
                       "carried-forward bank."),
    "cagnotte_variance": _("The counted cagnotte at closing differs from the "
                           "computed commission."),
    "turn_structure": _("A correction changed who won; the turn structure as "
                        "recorded stands and money is re-computed along it. Check "
                        "how the bank really went on."),
    "ledger_mismatch": _("The nightly re-settlement (manage.py verify_ledger) "
                         "settled the coups again from their cards, stakes and "
                         "house rules: this stored value is not what they give. "
                         "The application never writes such a row: it was changed "
                         "outside it, or written wrong. Check the change log "
                         "(verify_trail) and the table's paper record."),
}
COLUMNS = ["stood"] + [str(v) for v in range(10)]


_CENTS = Decimal(1).scaleb(-BankerTurn._meta.get_field("bank").decimal_places)


def _money(value) -> Decimal:
    """A bank read through a subquery, at its field's places: SQLite gives
    such a column back as it stored it (1000, not 1000.00), PostgreSQL at the
    column's scale."""
    return Decimal(value).quantize(_CENTS)


def floor_tables(hidden: int | None = None) -> list[dict]:
    """Every open table: who deals, the bank, coups, the shoe, open flags.
    One query whatever the number of tables, reading only the columns the
    floor shows, as plain values (no model instances: at 500 tables
    building them was a third of the floor's CPU). A row is a dict of dicts:
    session {pk, gaming_day, opened_at}, table {pk, name}, croupier (user
    name or None), turn {seat, bank} or None, shoe {number, cards_left} or
    None, coups, critical, warning, live (open live surveillance alerts at
    the table). ``hidden``: the reader, when alerts about him are left out
    (hidden_from)."""
    # Each session's open turn and shoe, its coups and its open flags are
    # read in subqueries, each an index probe on that session: a join of the
    # open sessions to the open turns or shoes was planned, whenever the
    # statistics counted few open rows, as every pair of them (a second at
    # 1,000 tables), and five queries given the sessions' ids as lists of
    # 1,000 took 30 ms of the web's CPU.
    # A shoe's coups are its numbers 1 .. next_seq - 1, each one coup whatever
    # its revisions (corrections keep the number): summed per session from
    # the shoes, not counted over the coups (with a month of coups that count
    # read them all).
    open_ = {"session": OuterRef("pk"), "closed_at__isnull": True}
    turn = BankerTurn.objects.filter(**open_).order_by()
    shoe = Shoe.objects.filter(**open_).order_by()
    coups = (Shoe.objects.filter(session=OuterRef("pk")).order_by()
             .values("session").annotate(n=Sum(F("next_seq") - 1)).values("n"))

    def flags(which: Q) -> Subquery:
        # (on the session and the status alone: a severity too was planned on
        # the status index, every open flag of that severity for each table)
        return Subquery(
            visible(Flag.objects.filter(session=OuterRef("pk"),
                                        status=Flag.Status.OPEN), hidden)
            .order_by().values("session")
            .annotate(n=Count("id", filter=which)).values("n"))

    rows = (
        TableSession.objects.filter(closed_at__isnull=True)
        .annotate(
            seat=Subquery(turn.values("seat")[:1]),
            bank=Subquery(turn.values("bank")[:1]),
            number=Subquery(shoe.values("number")[:1]),
            cards_left=Subquery(shoe.annotate(
                left=52 * F("decks") - F("burned") - F("dealt")).values("left")[:1]),
            coups=Subquery(coups), critical=flags(Q(severity="critical")),
            warning=flags(Q(severity="warning")),
            live=flags(Q(code__in=LIVE_CODES)))
        .order_by("table__name")
        .values_list("pk", "gaming_day", "opened_at", "table_id", "table__name",
                     "croupier__username", "seat", "bank", "number", "cards_left",
                     "coups", "critical", "warning", "live")
    )
    return [{
        "session": {"pk": pk, "gaming_day": day, "opened_at": opened_at},
        "table": {"pk": table_id, "name": table_name}, "croupier": croupier,
        "turn": None if seat is None else {"seat": seat, "bank": _money(bank)},
        "shoe": None if number is None else {"number": number,
                                             "cards_left": cards_left},
        "coups": coups or 0, "critical": critical or 0, "warning": warning or 0,
        "live": live or 0,
    } for (pk, day, opened_at, table_id, table_name, croupier, seat, bank, number,
           cards_left, coups, critical, warning, live) in rows]


def closing_work(days: int = 14) -> list[dict]:
    """Closed sessions of the last days whose box is not counted, or whose
    latest count is not attested yet (the pit boss's and manager's to-do)."""
    from datetime import timedelta

    from django.utils import timezone

    from .models import CagnotteAttestation, CagnotteCount

    since = timezone.localdate() - timedelta(days=days)
    # Only the sessions with work left are read (the database picks them):
    # every table's closed sessions of two weeks are thousands of rows. An
    # attested count locks its session (services.session_locked: no recount
    # after it), so a session is done once any of its counts is attested.
    attested = CagnotteAttestation.objects.filter(count__session=OuterRef("pk"))
    sessions = list(
        TableSession.objects.filter(closed_at__isnull=False, gaming_day__gte=since)
        .filter(~Exists(attested))
        .select_related("table").order_by("-closed_at"))
    latest: dict[int, CagnotteCount] = {}
    for c in (CagnotteCount.objects.filter(session__in=[s.pk for s in sessions])
              .order_by("counted_at", "pk")):
        latest[c.session_id] = c
    out = []
    for s in sessions:
        count = latest.get(s.pk)
        out.append({"session": s, "count": count,
                    "todo": "count" if count is None else "attest"})
    return out


def idle_tables() -> list:
    """Active tables without an open session. NOT IN over the open sessions'
    tables, read once and hashed: NOT EXISTS was planned as a nested loop
    over every pair of tables and open sessions whenever the statistics
    counted few open sessions (at 1,000 tables, 25 ms of every floor page)."""
    from tables.models import Table

    open_ = TableSession.objects.filter(closed_at__isnull=True).values("table_id")
    return list(Table.objects.filter(active=True).exclude(pk__in=open_)
                .order_by("name"))


@dataclass(frozen=True)
class QueueFilter:
    table: int | None = None
    code: str | None = None
    side: str | None = None
    croupier: int | None = None
    gaming_day: date | None = None
    status: str | None = "open"
    severity: str | None = None
    hidden: int | None = None  # the reader, when alerts about him are hidden

    def lookups(self, skip: str | None = None) -> dict:
        out = {}
        for name in FILTERS:
            value = getattr(self, name)
            if name == skip or value in (None, ""):
                continue
            key = {"table": "table_id", "croupier": "croupier_id"}.get(name, name)
            out[key] = "" if (name == "side" and value == "-") else value
        return out


def flag_queue(f: QueueFilter) -> QuerySet[Flag]:
    """Flags sorted by severity, then age (oldest first)."""
    return (
        visible(Flag.objects.filter(**f.lookups()), f.hidden)
        .select_related(*QUEUE_RELATED)
        .annotate(sev=SEVERITY_ORDER)
        .order_by("sev", "raised_at", "pk")
    )


QUEUE_RELATED = ("table", "croupier", "coup", "session", "shoe", "finding")


def flag_queue_ids(f: QueueFilter) -> QuerySet:
    """The queue's flag ids in its order, to page: sorting thousands of open
    flags joined to their coups, findings and tables took most of the queue
    page's database time; the page's fifty are read after (flags_by_id)."""
    return (visible(Flag.objects.filter(**f.lookups()), f.hidden)
            .annotate(sev=SEVERITY_ORDER)
            .order_by("sev", "raised_at", "pk").values_list("pk", flat=True))


def flags_by_id(ids: list[int]) -> list[Flag]:
    """Those flags with what the queue shows of them, in the order given."""
    found = Flag.objects.select_related(*QUEUE_RELATED).in_bulk(ids)
    flags = [found[i] for i in ids if i in found]
    live = [f.pk for f in flags if f.code in LIVE_CODES]
    if live:  # their sentence is said from their evidence (flag_words)
        from .models import SurveillanceEvidence

        evidence = dict(SurveillanceEvidence.objects.filter(flag_id__in=live)
                        .order_by("-id").values_list("flag_id", "evidence"))
        for f in flags:
            if f.pk in evidence:
                f.live_evidence = evidence[f.pk]
    return flags


def flag_counts(f: QueueFilter) -> dict[str, list[dict]]:
    """For each filter, the count of each of its values given the others."""
    out: dict[str, list[dict]] = {}
    labels = {"table": "table__name", "croupier": "croupier__username"}
    for name in FILTERS:
        field = {"table": "table_id", "croupier": "croupier_id"}.get(name, name)
        rows = visible(Flag.objects.filter(**f.lookups(skip=name)), f.hidden)
        if name in labels:
            # a flag about a person (a banker, a croupier's rate) has no
            # table, a finding on a closed shoe no croupier: no entry that
            # the filter could not select ("None")
            rows = rows.exclude(**{f"{field}__isnull": True})
        rows = (rows.values(field, *([labels[name]] if name in labels else []))
                .annotate(n=Count("id")).order_by(field))
        out[name] = [
            {"value": r[field] if r[field] != "" else "-",
             "label": str(r.get(labels.get(name, field)) or r[field] or "-"),
             "count": r["n"]}
            for r in rows
        ]
    out["total"] = [{"value": None, "label": "all",
                     "count": visible(Flag.objects.filter(**f.lookups()),
                                      f.hidden).count()}]
    return out


def tableau_grid(version: str, highlight: tuple[int, int] | None) -> dict:
    row = TableauVersion.objects.filter(version=version).first()
    rows = []
    if row is not None:
        for total in range(8):
            cells = row.rows[str(total)] if str(total) in row.rows else row.rows[total]
            rows.append({"total": total, "cells": [
                {"action": a, "hit": highlight == (total, i)}
                for i, a in enumerate(cells)
            ]})
    return {"version": version, "columns": COLUMNS, "rows": rows}


def _highlight(flag: Flag) -> tuple[tuple[int, int] | None, dict | None]:
    """The tableau cell (banker total, column) and the punter rule in play."""
    if flag.code != "false_draw" or flag.finding is None:
        return None, None
    d = flag.finding.detail
    if flag.side == "banker":
        third = d.get("punter_third")
        return (d["banker_total"], 0 if third is None else third + 1), None
    total = d["punter_total"]
    return None, {"total": total, "action": punter_action(total).value,
                  "required": d.get("required"), "actual": d.get("actual")}


def flag_file(flag: Flag) -> dict:
    """Everything the flag's page shows."""
    coup = flag.coup
    cell, punter_rule = _highlight(flag)
    out = {
        "flag": flag, "events": list(flag.events.select_related("user", "coup")),
        "rule": RULE_QUOTES.get(flag.code, ""), "punter_rule": punter_rule,
        "coup": coup, "revisions": [], "around": [], "trail": [],
        "grid": None,
    }
    if coup is not None:
        out["revisions"] = list(
            Coup.objects.filter(shoe_id=coup.shoe_id, seq=coup.seq)
            .select_related("entered_by", "corrected_by")
            .prefetch_related("stakes", "findings").order_by("revision"))
        out["around"] = list(
            current_coups().filter(shoe_id=coup.shoe_id,
                                   seq__range=(coup.seq - 2, coup.seq + 2))
            .select_related("entered_by").order_by("seq"))
        out["grid"] = tableau_grid(coup.tableau_version, cell)
        ids = [str(r.pk) for r in out["revisions"]]
        out["trail"] = list(ChangeLog.objects.filter(
            Q(object_type="tables.coup", object_id__in=ids)
            | Q(object_type="audit.flag", object_id=str(flag.pk))
        ).select_related("user").order_by("id"))
    else:
        out["trail"] = list(ChangeLog.objects.filter(
            object_type="audit.flag", object_id=str(flag.pk)
        ).select_related("user").order_by("id"))
    return out


def coup_history(coup: Coup) -> list[Coup]:
    return list(
        Coup.objects.filter(shoe_id=coup.shoe_id, seq=coup.seq)
        .select_related("entered_by", "corrected_by")
        .prefetch_related("stakes", "findings").order_by("revision"))
