"""Live alerts into the pit boss's queue (issue 38), and the nightly run's
word on them.

Each subject a look raises (live.py: ``livetests.raise_once``, at most once
a look and only for a window no earlier alert charged) is raised once per
test and gaming day (ident ``l:<test>:<subject>:<day>``, tonight's day) as
a flag of kind surveillance, severity warning, through alerts.flags_write
(the nightly run's writer): its "raised" step, its evidence row
(SurveillanceEvidence: the window's first day ``since``, its gaming days
``days``, the windows the alert charged ``windows``, the counts and
expectation over the window, p, level, the reference, the series of the
chart) bound to the trail by the change-log row that raises it. The windows
charged are read back by ``live_charged`` (one query). The look that raises
is a SurveillanceRun of source "live" (done at once) that the evidence rows
name, so the run's page lists its alerts.

Where it sits: the table and session where the subject is now (his latest
session: tonight's if he plays tonight, else his latest in the window), and
the croupier concerned -- the croupier's own alert, the croupier who dealt
most of a banker's or a table's coups in the window: four eyes bar him from
deciding it (services.four_eyes), and pages and API hide it from him
(selectors.hidden_from).

The nightly run over a day adds one step to each live alert of that day
(append-only; it never closes or erases one): ``nightly_confirmed`` when
its own alert names the same subject (the croupier's false-draw rate, the
banker's wins or money, the table's day or its CUSUM crossing that day),
``nightly_left`` when it does not: the pit boss decides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone, translation

from casino.changelog import log_action, log_actions
from tables.models import Finding, Table
from tables.rollups import current_coups

from ..models import Flag, FlagEvent, SurveillanceEvidence, SurveillanceRun
from . import alerts, livetests
from .data import Alert

# A look is live.WindowLook (live.py imports this module: not named here).

# Each family's flag code (selectors.LIVE_CODES, in FAMILIES' order).
CODES = {"croupier": "live_croupier", "banker": "live_banker",
         "table": "live_table"}

log = logging.getLogger(__name__)
VERDICTS = ("nightly_confirmed", "nightly_left")


def live_ident(test: str, subject: str, day: date) -> str:
    return f"l:{test}:{subject}:{day.isoformat()}"[:120]


def live_charged(first: date) -> dict[tuple[str, str], set[int]]:
    """The windows (their first days, as ordinals) the live alerts raised
    since ``first`` charged, per (family, subject): one query. An alert
    raised before the windows (its evidence names none) charged the window
    of its own day."""
    family_of = {code: family for family, code in CODES.items()}
    rows = (SurveillanceEvidence.objects
            .filter(flag__kind=Flag.Kind.SURVEILLANCE,
                    flag__code__in=list(CODES.values()),
                    flag__gaming_day__gte=first)
            .order_by()
            .values_list("flag__code", "subject", "flag__gaming_day",
                         "evidence__windows"))
    out: dict[tuple[str, str], set[int]] = {}
    for code, subject, day, charged in rows:
        starts = {day.toordinal()}
        if isinstance(charged, list):
            starts = set()
            for iso in charged:
                try:
                    starts.add(date.fromisoformat(str(iso)).toordinal())
                except ValueError:
                    continue
        out.setdefault((family_of[code], subject), set()).update(starts)
    return out


def _dominant(keys: np.ndarray, weights: np.ndarray) -> int | None:
    if not len(keys):
        return None
    ids, idx = np.unique(keys, return_inverse=True)
    return int(ids[np.bincount(idx.ravel(), weights).argmax()])


def _mine(g, family: str, subject: str) -> np.ndarray:
    if family == "croupier":
        return g.croupier == int(subject.split(":")[1])
    if family == "banker":
        return g.banker == subject
    return g.table == int(subject.split(":")[1])


def _place(look, family: str, subject: str, since: date) -> dict:
    """Table, session and croupier of a live alert: the subject's latest
    session (tonight's if he plays tonight, else his latest in the window),
    and the croupier concerned (his own alert; else who dealt most of the
    subject's coups in the window)."""
    parts = [p for d, p in sorted(look.parts.items(), reverse=True) if d >= since]
    place = None
    keys, weights = [], []
    for p in parts:
        g = p.groups
        mine = _mine(g, family, subject)
        if not mine.any():
            continue
        keys.append(g.croupier[mine])
        weights.append(g.n[mine])
        if place is None:
            session = int(g.session[mine].max())
            here = mine & (g.session == session)
            place = {"table_id": int(g.table[here][0]), "session_id": session,
                     "shoe_id": None}
    croupier = int(subject.split(":")[1]) if family == "croupier" else \
        _dominant(np.concatenate(keys), np.concatenate(weights))
    return {**place, "croupier_id": croupier}


def _subject_coups(since: date, day: date, family: str, subject: str):
    qs = current_coups().filter(gaming_day__range=(since, day))
    kind, _, rest = subject.partition(":")
    if family == "croupier":
        return qs.filter(entered_by_id=int(rest))
    if family == "table":
        return qs.filter(shoe__session__table_id=int(rest))
    if kind == "card":
        return qs.filter(turn__player_card=rest)
    seat, _, session = rest.partition("@session:")
    return qs.filter(Q(turn__player_card__isnull=True) | Q(turn__player_card=""),
                     banker_seat=int(seat), shoe__session_id=int(session))


def _series(look, family: str, subject: str, since: date) -> dict:
    """The chart: the subject's events and what each day's null expects,
    shoe by shoe in the order dealt from the window's first day, summed as
    the days go (one aggregate query, for a raised subject only). Labels
    carry the day when the window spans several."""
    false_draw = Finding.objects.filter(coup=OuterRef("pk"), code="false_draw")
    rows = list(
        _subject_coups(since, look.day, family, subject).order_by()
        .alias(has_false_draw=Exists(false_draw))
        .values_list("gaming_day", "shoe_id", "shoe__number", "rules_id",
                     "tableau_version")
        .annotate(n=Count("id"), wins=Count("id", filter=Q(outcome="banker")),
                  fd=Count("id", filter=Q(has_false_draw=True)))
        .order_by("gaming_day", "shoe_id"))
    several = since < look.day
    plays = {d: {p: i for i, p in enumerate(part.groups.plays)}
             for d, part in look.parts.items()}
    shoes: dict[tuple, list] = {}
    for day, shoe, number, rules, tableau, n, wins, fd in rows:
        part = look.parts.get(day)
        if part is None:
            continue
        if family == "croupier":
            q = part.q_croupier.get(int(subject.split(":")[1]))
            if q is None:  # not watched that day: not in the test
                continue
            seen = fd
        else:
            i = plays[day].get((rules, tableau))
            q = float(part.q_play[i]) if i is not None else 0.0
            seen = wins
        label = f"{day.isoformat()} n° {number}" if several else f"n° {number}"
        cell = shoes.setdefault((day, shoe), [label, 0, 0.0])
        cell[1] += seen
        cell[2] += n * q
    labels, observed, expected, so_far, exp_far = [], [], [], 0, 0.0
    for label, seen, exp in shoes.values():
        so_far, exp_far = so_far + seen, exp_far + exp
        labels.append(label)
        observed.append(so_far)
        expected.append(round(exp_far, 3))
    return {"labels": labels, "observed": observed, "expected": expected,
            "cumulative": True}


def _reference_words(parts: list) -> str:
    """Where the croupier's reference came from, over the window's days (the
    words match words.evidence_text's: the page translates them)."""
    sources = {p.trailing.reference.source for p in parts}
    days = max(p.trailing.reference.days for p in parts)
    if len(parts) == 1:
        return (f"the floor's false draws over the {days} gaming days before"
                if sources == {"trailing"} else
                "tonight's rest of the floor (fewer than enough coups on the "
                "days before)")
    if sources == {"trailing"}:
        return f"the floor's false draws over the {days} gaming days before each day"
    if sources == {"tonight"}:
        return ("each day's rest of the floor (fewer than enough coups on the "
                "days before)")
    return (f"the floor's false draws over the {days} gaming days before each "
            "day, or that day's rest of the floor where those held too few coups")


def _evidence(look, a, place: dict, table: str, who: str) -> dict:
    family = a.family
    since = date.fromordinal(a.since)
    parts = [p for d, p in look.parts.items() if d >= since]
    t = look.trailing
    start = look.window(family, a.since)
    budget = look.budgets[since][family]
    subjects = len(start.tally.subjects)
    ev = {
        "family": family, "table": table, "who": who,
        "day": look.day.toordinal(), "since": since.isoformat(),
        "days": (look.day - since).days + 1,
        "windows": [date.fromordinal(s).isoformat() for s in a.windows],
        "coups": a.coups, "count": a.events,
        "expected": round(a.expected, 4), "log_lambda": round(a.log_lambda, 4),
        "level": a.level, "once_in_shifts": livetests.chance_in_shifts(a.p_value),
        "alpha": settings.SURVEILLANCE_LIVE_ALPHA,
        "subjects": subjects, "budget": budget, "over_budget": subjects > budget,
    }
    if family == "croupier":
        # the mean of each day's reference over his coups in the window
        ev["reference_rate"] = round(a.expected / a.coups, 8) if a.coups else None
        ev["reference"] = _reference_words(parts)
        if t.reference.source == "trailing":
            ev["reference_coups"] = t.reference.coups
    else:
        # the words match words.evidence_text's (the page translates them)
        if len({p.trailing.mix_from for p in parts}) > 1:
            ev["mix"] = ("each day at the floor's mix of the latest surveyed day "
                         "before it (every free cell drawn before any)")
        elif t.mix is not None:
            ev["mix"] = f"the floor's mix of free choices on {t.mix_from}"
        else:
            ev["mix"] = "every free cell drawn (no surveyed day before)"
    ev["series"] = _series(look, family, a.subject, since)
    return ev


def _who(family: str, subject: str, names: dict[int, str]) -> str:
    kind, _, rest = subject.partition(":")
    if family == "croupier":
        return names.get(int(rest), subject)
    if family == "banker":
        if kind == "card":
            return f"card {rest}"
        return f"seat {rest.partition('@')[0]}"
    return ""


@dataclass(eq=False)
class Prepared:
    """A look's fresh live alerts, ready to write: the flags' items and the
    alerts (livetests.LiveAlert) they raise."""

    look: object  # live.WindowLook
    items: list
    alerts: list


def live_alerts_prepare(look) -> Prepared:
    """The subjects a look raises (``look.raised``: raise_once's) not
    raised before on this gaming day, with their place, words and evidence
    (read before anything is written: the chart's series is a query). Two
    looks never run at once (live.py's lock), so what is not raised now is
    not raised by another look."""
    if not look.raised:
        return Prepared(look, [], [])
    idents = [live_ident(a.test, a.subject, look.day) for a in look.raised]
    seen = set(Flag.objects.filter(ident__in=idents).values_list("ident", flat=True))
    fresh = []
    for ident, a in zip(idents, look.raised, strict=True):
        if ident not in seen:
            seen.add(ident)
            fresh.append((ident, a, _place(look, a.family, a.subject,
                                           date.fromordinal(a.since))))
    if not fresh:
        return Prepared(look, [], [])
    tables = dict(Table.objects.filter(pk__in={p["table_id"] for _, _, p in fresh})
                  .values_list("pk", "name"))
    names = alerts._usernames({p["croupier_id"] for _, _, p in fresh
                               if p["croupier_id"]})
    from .words import live_sentence

    items = []
    for ident, a, place in fresh:
        code = CODES[a.family]
        ev = _evidence(look, a, place, tables.get(place["table_id"], ""),
                       _who(a.family, a.subject, names))
        with translation.override("en"):
            text = live_sentence(code, ev)
        items.append(alerts.Raise(
            ident=ident, alert=Alert(kind=code, subject=a.subject, test=a.test,
                                     statistic=a.log_lambda, p_value=a.p_value,
                                     day=look.day.toordinal(), evidence=ev),
            place=place, message=text, day=look.day, code=code,
            severity="warning"))
    return Prepared(look, items, [a for _, a, _ in fresh])


def live_alerts_write(prepared: Prepared) -> int:
    """Write a look's prepared alerts (last in the look's transaction: from
    the first change-log row the trail's chain is held); returns how many."""
    look, items = prepared.look, prepared.items
    if not items:
        return 0
    alerts.write_lock()
    now = timezone.now()
    first = min(date.fromordinal(a.since) for a in prepared.alerts)
    run = SurveillanceRun.objects.create(
        from_day=first, to_day=look.day, tables=[],
        fdr=Decimal(str(settings.SURVEILLANCE_LIVE_ALPHA)).quantize(Decimal("0.0001")),
        source=SurveillanceRun.Source.LIVE, status=SurveillanceRun.Status.DONE,
        stage="done", percent=100, requested_at=now, dispatched_at=now,
        started_at=now, finished_at=now, attempts=1, coups=look.groups.coups,
        tests=sum(len(w.tally.subjects) for ws in look.windows.values() for w in ws),
        alerts=len({(a.family, a.subject) for a in look.crossed}),
        alerts_new=len(items),
        summary={"live": True, "alert_idents": [i.ident for i in items],
                 "window_days": look.window_days,
                 "budget": look.budget, "levels": look.levels,
                 "budgets": {d.isoformat(): b for d, b in look.budgets.items()}})
    log_action(action="audit.surveillance.live", user=None, device="celery",
               obj=run, new={"day": look.day.isoformat(), "coups": run.coups,
                             "tests": run.tests, "alerts_new": len(items)})
    return len(alerts.flags_write(run=run, items=items))


# -- the nightly run's word on the live alerts of its day ----------------------

def _confirms(family: str, subject: str, day: date, found: list[Alert]) -> str | None:
    """The nightly alert (its kind:test:subject) that says the same as a live
    alert, or None."""
    ordinal = day.toordinal()
    for a in found:
        same = (
            (family == "croupier" and a.kind == "croupier"
             and a.test == "false_draw_rate" and a.subject == subject)
            or (family == "banker" and a.kind == "banker" and a.subject == subject)
            or (family == "table" and (
                (a.kind == "table_day" and a.subject == f"{subject}@day:{ordinal}")
                or (a.kind == "table_cusum" and a.subject == subject
                    and a.day == ordinal))))
        if same:
            return f"{a.kind}:{a.test}:{a.subject}"
    return None


def live_verdicts(*, run: SurveillanceRun, found: list[Alert]) -> int:
    """The nightly run's step on each live alert of its days (once each):
    confirmed by its own alert on the same subject, or left to the pit boss.
    Inside the run's transaction (runs._pipeline)."""
    if run.source != SurveillanceRun.Source.NIGHTLY:
        return 0
    family_of = {code: family for family, code in CODES.items()}
    done = FlagEvent.objects.filter(flag=OuterRef("pk"), action__in=VERDICTS)
    rows = list(Flag.objects.filter(
        kind=Flag.Kind.SURVEILLANCE, code__in=list(CODES.values()),
        gaming_day__range=(run.from_day, run.to_day))
        .filter(~Exists(done)).order_by("pk")
        .values_list("pk", "code", "gaming_day", "evidence__subject").distinct())
    if not rows:
        return 0
    now = timezone.now()
    events = []
    for pk, code, day, subject in rows:
        by = _confirms(family_of[code], subject or "", day, found)
        events.append(FlagEvent(
            flag_id=pk, at=now, action=VERDICTS[0] if by else VERDICTS[1],
            detail={"run": run.pk, "nightly": by}))
    FlagEvent.objects.bulk_create(events)
    log_actions([
        {"action": f"audit.surveillance.{e.action}", "user": None,
         "device": "celery", "obj": Flag(pk=e.flag_id),
         "new": {"run": run.pk, "nightly": e.detail["nightly"]}}
        for e in events])
    return len(events)
