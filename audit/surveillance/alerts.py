"""Alerts into the pit boss's queue: flags of kind "surveillance".

One flag per subject, test and period, whichever run finds it (the flag's
unique ident): a nightly run delivered twice, or a manager's run over a
period the nightly one already covered, raises nothing twice. The ident
follows what the alert is about:

- a croupier, a banker, over the run's period:
  ``v:<test>:<subject>:<from day>:<to day>``;
- a table's CUSUM crossing, dated its crossing day (which does not move as
  the trailing window slides on): ``v:<test>:<subject>:<day>``;
- a table's gaming day (the subject names the day), a shoe (one of a kind):
  ``v:<test>:<subject>``;
- a shoe whose count does not add up: the ident of the close's own
  shoe_count flag (``h:<shoe>:shoe_count``), so the fact the close already
  put in the queue is not raised twice.

Each new flag gets its "raised" step, its evidence (SurveillanceEvidence:
append-only and bound to the trail by the log row that raises it) and a
change-log row. Severity: warning for a statistical alert, critical for a
certain one (a shoe's count: no statistics, p = 0). The croupier concerned
is on the flag, so four eyes bar him from deciding it (services.flags).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import date

import numpy as np
from django.db import connection
from django.utils import timezone

from casino.changelog import log_actions

from ..models import Flag, FlagEvent, SurveillanceEvidence, SurveillanceRun
from .data import Alert, CoupRows, ShoeClose

CERTAIN = ("shoe_count",)
MAX_POINTS = 400  # a chart's series in the evidence, at most
WRITE_LOCK = 0x53564C  # "SVL": the advisory lock of alerts_write

# What each test says, in words (the flag's message; the page translates the
# test's name and shows the figures from the evidence).
WORDS = {
    "false_draw_rate": "false draws above the floor's rate",
    "correction_rate": "coups corrected more often than on the floor",
    "bank_mismatch_rate": "bank mismatches above the floor's rate",
    "banker_wins": "the banker won more coups than the odds give",
    "banker_money": "the banker won more money than the odds give",
    "banker_share": "banker wins away from the odds",
    "levy": "commission below what the coups' levies give",
    "cusum_banker_share": "the banker-win rate fell (CUSUM crossed its limit)",
    "cusum_banker_share_up": "the banker-win rate rose (CUSUM crossed its limit)",
    "outcomes": "the shoe's outcomes are away from the odds",
    "runs": "the shoe's wins come in runs the odds do not give",
    "count": "cards dealt, burned and left do not make the shoe",
    "rank_over": "a rank seen more often than the shoe holds",
    "rank_short": "a rank short at the close",
}


def alert_ident(alert: Alert, from_day: date, to_day: date) -> str:
    if alert.kind == "shoe_count" and alert.test == "count":
        # The same fact as the close's shoe_count finding, whose flag
        # (audit/services/flag_raise.py) is raised with the close: one item
        # in the queue, whichever saw it first.
        return f"h:{alert.subject.removeprefix('shoe:')}:shoe_count"
    if alert.kind in ("croupier", "banker"):
        return (f"v:{alert.test}:{alert.subject}:{from_day.isoformat()}:"
                f"{to_day.isoformat()}")[:120]
    if alert.kind == "table_cusum":
        return f"v:{alert.test}:{alert.subject}:{date.fromordinal(alert.day)}"[:120]
    return f"v:{alert.test}:{alert.subject}"[:120]


def plain(value, depth: int = 0):
    """JSON-ready: numpy scalars and arrays to Python, non-finite floats to
    None, long series thinned to MAX_POINTS (first and last kept)."""
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        items = list(value)
        if len(items) > MAX_POINTS:
            step = len(items) / MAX_POINTS
            picked = [items[int(i * step)] for i in range(MAX_POINTS - 1)]
            items = [*picked, items[-1]]
        return [plain(v, depth + 1) for v in items]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _num(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _subject_ids(subject: str) -> dict[str, int]:
    """"seat:3@session:12" -> {"seat": 3, "session": 12}; "table:4@day:7390"."""
    out = {}
    for part in subject.split("@"):
        name, _, value = part.partition(":")
        if value.isdigit():
            out[name] = int(value)
    return out


class _Places:
    """Where each subject sits on the floor (table, session, shoe, croupier),
    read once per run."""

    def __init__(self, rows: CoupRows, shoes: list[ShoeClose]):
        self.rows = rows
        self.shoes = {s.shoe: s for s in shoes}

    def dominant_croupier(self, mask: np.ndarray) -> int | None:
        if not mask.any():
            return None
        return int(Counter(self.rows.croupier[mask].tolist()).most_common(1)[0][0])

    def place(self, alert: Alert) -> dict:
        ids = _subject_ids(alert.subject)
        r = self.rows
        out: dict = {"table_id": None, "session_id": None, "shoe_id": None,
                     "croupier_id": None}
        if alert.kind == "croupier":
            out["croupier_id"] = ids.get("croupier")
        elif alert.kind in ("table_day", "table_cusum"):
            out["table_id"] = ids.get("table")
            if alert.kind == "table_day" and "table" in ids and len(r):
                mask = (r.table == ids["table"]) & (r.day == alert.day)
                out["croupier_id"] = self.dominant_croupier(mask)
        elif alert.kind in ("shoe", "shoe_count"):
            shoe = ids.get("shoe")
            out["shoe_id"] = shoe
            if shoe is not None:
                if len(r):
                    out["croupier_id"] = self.dominant_croupier(r.shoe == shoe)
                closed = self.shoes.get(shoe)
                if closed is not None:
                    out["table_id"] = closed.table
        elif alert.kind == "banker":
            if "session" in ids:
                out["session_id"] = ids["session"]
            mask = r.banker == alert.subject if len(r) else np.zeros(0, bool)
            if len(r) and mask.any():
                tables = np.unique(r.table[mask])
                if len(tables) == 1:
                    out["table_id"] = int(tables[0])
        return out


def _fill_places(places: list[dict]) -> None:
    """Sessions and tables the subjects imply (a shoe's session and table, a
    session's table), in two small queries."""
    from tables.models import Shoe, TableSession

    shoes = {p["shoe_id"] for p in places if p["shoe_id"]}
    shoe_rows = dict(Shoe.objects.filter(pk__in=shoes).values_list(
        "pk", "session_id")) if shoes else {}
    for p in places:
        if p["shoe_id"] and not p["session_id"]:
            p["session_id"] = shoe_rows.get(p["shoe_id"])
    sessions = {p["session_id"] for p in places if p["session_id"]}
    tables = dict(TableSession.objects.filter(pk__in=sessions).values_list(
        "pk", "table_id")) if sessions else {}
    for p in places:
        if p["session_id"] and not p["table_id"]:
            p["table_id"] = tables.get(p["session_id"])


def _usernames(ids: set[int]) -> dict[int, str]:
    from django.contrib.auth import get_user_model

    if not ids:
        return {}
    return dict(get_user_model().objects.filter(pk__in=ids)
                .values_list("pk", "username"))


def message(alert: Alert, who: str = "") -> str:
    words = WORDS.get(alert.test, alert.test.replace("_", " "))
    p = _num(alert.p_value)
    figures = "certain" if alert.test in CERTAIN or alert.kind in CERTAIN else (
        f"p = {p:.2g}" if p is not None else "")
    subject = f"{who} ({alert.subject})" if who else alert.subject
    return f"{subject}: {words} ({figures})."[:400]


def alerts_write(*, run: SurveillanceRun, alerts: list[Alert], rows: CoupRows,
                 shoes: list[ShoeClose]) -> int:
    """Raise the flags of the run's alerts that no run raised before; returns
    how many are new. Inside the run's transaction (runs._pipeline)."""
    if not alerts:
        return 0
    write_lock()
    idents = [alert_ident(a, run.from_day, run.to_day) for a in alerts]
    seen = set(Flag.objects.filter(ident__in=idents).values_list("ident", flat=True))
    where = _Places(rows, shoes)
    fresh: list[tuple[str, Alert, dict]] = []
    for ident, alert in zip(idents, alerts, strict=True):
        if ident in seen:
            continue
        seen.add(ident)
        fresh.append((ident, alert, where.place(alert)))
    if not fresh:
        return 0
    _fill_places([p for _, _, p in fresh])
    names = _usernames({p["croupier_id"] for _, a, p in fresh
                        if a.kind == "croupier" and p["croupier_id"]})
    return len(flags_write(run=run, items=[
        Raise(ident=ident, alert=alert, place=place, message=message(
            alert, names.get(place["croupier_id"], "")
            if alert.kind == "croupier" else ""),
            day=date.fromordinal(alert.day) if alert.day else run.to_day)
        for ident, alert, place in fresh]))


def write_lock() -> None:
    """Writers of surveillance flags take turns (PostgreSQL): two runs over
    overlapping periods (the nightly one, a manager's), or a run and a live
    look, see each other's flags instead of colliding on an ident."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK])


@dataclass(frozen=True)
class Raise:
    """One new surveillance flag to write: its ident (not raised before),
    the alert, where it sits (table_id, session_id, shoe_id, croupier_id),
    its message and gaming day; ``code`` and ``severity`` default to the
    alert's test and to warning (critical for a certain one)."""

    ident: str
    alert: Alert
    place: dict
    message: str
    day: date
    code: str = ""
    severity: str = ""


def flags_write(*, run: SurveillanceRun, items: list[Raise]) -> list[Flag]:
    """Write the flags, each with its "raised" step, its evidence row
    (SurveillanceEvidence, bound to the trail by the change-log row that
    raises it) and that row. The caller holds write_lock and has checked
    that no flag has these idents (the nightly and manual runs: alerts_write;
    the live looks: live.py)."""
    if not items:
        return []
    now = timezone.now()
    flags = []
    for it in items:
        alert = it.alert
        certain = alert.kind in CERTAIN or alert.test in CERTAIN
        flags.append(Flag(
            ident=it.ident, kind=Flag.Kind.SURVEILLANCE,
            code=(it.code or alert.test)[:32],
            severity=it.severity or ("critical" if certain else "warning"),
            side="", message=it.message[:400], gaming_day=it.day, raised_at=now,
            **it.place))
    Flag.objects.bulk_create(flags)
    if flags[0].pk is None:  # a database that returns no ids
        ids = dict(Flag.objects.filter(ident__in=[f.ident for f in flags])
                   .values_list("ident", "pk"))
        for f in flags:
            f.pk = ids[f.ident]
    events, evidence = [], []
    for flag, it in zip(flags, items, strict=True):
        alert = it.alert
        events.append(FlagEvent(flag=flag, at=now, action="raised",
                                detail={"run": run.pk, "test": alert.test}))
        body = plain(alert.evidence or {})
        body.setdefault("kind", alert.kind)
        evidence.append(SurveillanceEvidence(
            flag=flag, run=run, subject=alert.subject[:80], test=alert.test[:40],
            statistic=_num(alert.statistic), p_value=_num(alert.p_value),
            q_value=_num((alert.evidence or {}).get("q_value")),
            evidence=body, created_at=now))
    FlagEvent.objects.bulk_create(events)
    SurveillanceEvidence.objects.bulk_create(evidence)
    if evidence[0].pk is None:  # the trail binds each row by its id
        by_flag = dict(SurveillanceEvidence.objects.filter(
            flag__in=flags).values_list("flag_id", "pk"))
        for e in evidence:
            e.pk = by_flag[e.flag_id]
    log_actions([
        {"action": "audit.surveillance.alert", "user": None, "device": "celery",
         "obj": flag, "rows": [ev],
         "new": {"run": run.pk, "ident": flag.ident, "test": ev.test,
                 "subject": ev.subject, "severity": flag.severity,
                 "p_value": ev.p_value, "statistic": ev.statistic}}
        for flag, ev in zip(flags, evidence, strict=True)
    ])
    return flags
