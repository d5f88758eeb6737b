"""Statistics a pit boss asks for, over a range of gaming days (current coup
revisions only).

- per croupier: coups per hour and findings per 100 coups (mis-keys are a
  training signal);
- per player (a table's seat): how often he draws at 5 as punter, his
  optional draws as banker, his false draws;
- per table: coups per hour by hour of the day.

Coups per hour is measured over the time a croupier actually dealt: his coups
are cut into runs (a relief croupier, or a pause over 30 minutes, ends a
run), and the rate is (coups - 1) / time over the runs, so breaks and the
other croupiers' turns at the same table do not count as his dealing time.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.db.models.functions import ExtractHour, TruncDate
from django.utils import timezone

from tables.models import Finding, Table
from tables.rollups import current_coups

PAUSE = timedelta(minutes=30)
# Below this much dealing time a rate says nothing (two coups a second apart
# are not 3,600 coups an hour).
MIN_HOURS = 5 / 60


def floor_stats(day_from: date, day_to: date, table: int | None = None):
    """The three statistics and how far their data goes: read from the
    reports replica when there is one, all from one snapshot of it (they
    read whole ranges of coups, as reports do), else from the primary."""
    from casino import replica

    with replica.reading(), replica.snapshot() as position:
        body = {"croupiers": croupier_stats(day_from, day_to, table),
                "seats": seat_stats(day_from, day_to, table),
                "tables": table_hours(day_from, day_to, table)}
    return body, position


def _rate(num: float | int, den: float) -> Decimal | None:
    if not den:
        return None
    return Decimal(str(num / den)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


def _coups(day_from: date, day_to: date, table: int | None):
    qs = current_coups().filter(gaming_day__range=(day_from, day_to))
    return qs.filter(shoe__session__table_id=table) if table else qs


def croupier_stats(day_from: date, day_to: date, table: int | None = None):
    coups = _coups(day_from, day_to, table)
    counts: dict[int, int] = defaultdict(int)
    seconds: dict[int, float] = defaultdict(float)
    intervals: dict[int, int] = defaultdict(int)
    run_user, run_start, last_at, run_n, run_session = None, None, None, 0, None

    def close_run():
        if run_user is not None and run_n > 1:
            seconds[run_user] += (last_at - run_start).total_seconds()
            intervals[run_user] += run_n - 1

    rows = coups.order_by("shoe__session_id", "shoe__number", "seq").values_list(
        "entered_by_id", "created_at", "shoe__session_id")
    for user, at, session in rows.iterator(chunk_size=5000):
        counts[user] += 1
        if (user != run_user or session != run_session
                or last_at is None or at - last_at > PAUSE):
            close_run()
            run_user, run_start, run_n, run_session = user, at, 0, session
        run_n += 1
        last_at = at
    close_run()
    findings: dict[int, dict[str, int]] = defaultdict(dict)
    for r in (Finding.objects.filter(coup__in=coups)
              .values("coup__entered_by_id", "code").annotate(n=Count("id"))):
        findings[r["coup__entered_by_id"]][r["code"]] = r["n"]
    names = dict(get_user_model().objects.filter(pk__in=counts)
                 .values_list("pk", "username"))
    out = []
    for user, n in sorted(counts.items(), key=lambda kv: names.get(kv[0], "")):
        total = sum(findings[user].values())
        out.append({
            "croupier": user, "name": names.get(user, "?"), "coups": n,
            "hours": Decimal(str(seconds[user] / 3600)).quantize(Decimal("0.01")),
            "coups_per_hour": (_rate(intervals[user], seconds[user] / 3600)
                               if seconds[user] / 3600 >= MIN_HOURS else None),
            "findings": total, "findings_by_code": dict(sorted(findings[user].items())),
            "findings_per_100": _rate(100 * total, n),
        })
    return out


def seat_stats(day_from: date, day_to: date, table: int | None = None):
    coups = _coups(day_from, day_to, table)
    cells: dict[tuple, dict] = defaultdict(lambda: {
        "punter_hands": 0, "at_five": 0, "drew_at_five": 0, "banker_coups": 0,
        "banker_options": 0, "banker_option_draws": 0, "false_draws": 0,
    })
    for r in (coups.exclude(punter_seat=None)
              .values("shoe__session__table_id", "punter_seat")
              .annotate(n=Count("id"), five=Count("id", filter=~Q(punter_choice="")),
                        drew=Count("id", filter=Q(punter_choice="draw")))):
        c = cells[(r["shoe__session__table_id"], r["punter_seat"])]
        c["punter_hands"] += r["n"]
        c["at_five"] += r["five"]
        c["drew_at_five"] += r["drew"]
    for r in (coups.values("shoe__session__table_id", "banker_seat")
              .annotate(n=Count("id"), opt=Count("id", filter=~Q(banker_choice="")),
                        drew=Count("id", filter=Q(banker_choice="draw")))):
        c = cells[(r["shoe__session__table_id"], r["banker_seat"])]
        c["banker_coups"] += r["n"]
        c["banker_options"] += r["opt"]
        c["banker_option_draws"] += r["drew"]
    table_of = "coup__shoe__session__table_id"
    for side in ("punter", "banker"):
        seat = f"coup__{side}_seat"
        for r in (Finding.objects.filter(coup__in=coups, code="false_draw", side=side)
                  .values(table_of, seat).annotate(n=Count("id"))):
            cells[(r[table_of], r[seat])]["false_draws"] += r["n"]
    names = dict(Table.objects.values_list("pk", "name"))
    out = []
    order = sorted(cells.items(), key=lambda kv: (names.get(kv[0][0], ""), kv[0][1]))
    for (table_id, seat), c in order:
        out.append({
            "table": table_id, "table_name": names.get(table_id, "?"), "seat": seat,
            **c, "draw_at_five_pct": _rate(100 * c["drew_at_five"], c["at_five"]),
            "banker_option_draw_pct": _rate(
                100 * c["banker_option_draws"], c["banker_options"]),
        })
    return out


def table_hours(day_from: date, day_to: date, table: int | None = None):
    """Per table and local hour of the day: coups per hour, averaged over the
    days that hour was played."""
    tz = timezone.get_current_timezone()
    rows = (_coups(day_from, day_to, table)
            .annotate(hour=ExtractHour("created_at", tzinfo=tz),
                      day=TruncDate("created_at", tzinfo=tz))
            .values("shoe__session__table_id", "hour", "day")
            .annotate(n=Count("id")))
    cells: dict[tuple, list[int]] = defaultdict(list)
    for r in rows:
        cells[(r["shoe__session__table_id"], r["hour"])].append(r["n"])
    names = dict(Table.objects.values_list("pk", "name"))
    tables: dict[int, dict] = {}
    for (table_id, hour), per_day in cells.items():
        t = tables.setdefault(table_id, {"table": table_id,
                                         "table_name": names.get(table_id, "?"),
                                         "hours": {}})
        t["hours"][hour] = _rate(sum(per_day), len(per_day))
    return sorted(tables.values(), key=lambda t: t["table_name"])
