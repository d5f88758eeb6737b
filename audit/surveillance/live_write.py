"""Live alerts into the pit boss's queue (issue 38), and the nightly run's
word on them.

Each subject whose live test crossed is raised once per test and gaming day
(ident ``l:<test>:<subject>:<day>``) as a flag of kind surveillance,
severity warning, through alerts.flags_write (the nightly run's writer): its
"raised" step, its evidence row (SurveillanceEvidence: counts, expectation,
p, level, the reference, the series of the chart) bound to the trail by the
change-log row that raises it. The look that raises is a SurveillanceRun of
source "live" (done at once) that the evidence rows name, so the run's page
lists its alerts.

Where it sits: the table and session where the subject is now (his latest
session of the day), and the croupier concerned -- the croupier's own
alert, the croupier who dealt most of a banker's or a table's coups
tonight: four eyes bar him from deciding it (services.four_eyes), and
pages and API hide it from him (selectors.hidden_from).

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

from ..models import Flag, FlagEvent, SurveillanceRun
from . import alerts, livetests
from .data import Alert

# A day's look is live.DayLook (live.py imports this module: not named here).

# Each family's flag code (selectors.LIVE_CODES, in FAMILIES' order).
CODES = {"croupier": "live_croupier", "banker": "live_banker",
         "table": "live_table"}

log = logging.getLogger(__name__)
VERDICTS = ("nightly_confirmed", "nightly_left")


def live_ident(test: str, subject: str, day: date) -> str:
    return f"l:{test}:{subject}:{day.isoformat()}"[:120]


def _dominant(keys: np.ndarray, weights: np.ndarray) -> int | None:
    if not len(keys):
        return None
    ids, idx = np.unique(keys, return_inverse=True)
    return int(ids[np.bincount(idx.ravel(), weights).argmax()])


def _place(look, family: str, subject: str) -> dict:
    """Table, session and croupier of a live alert (from the day's groups)."""
    g = look.groups
    if family == "croupier":
        mine = g.croupier == int(subject.split(":")[1])
    elif family == "banker":
        mine = g.banker == subject
    else:
        mine = g.table == int(subject.split(":")[1])
    session = int(g.session[mine].max())
    here = mine & (g.session == session)
    croupier = int(subject.split(":")[1]) if family == "croupier" else \
        _dominant(g.croupier[mine], g.n[mine])
    return {"table_id": int(g.table[here][0]), "session_id": session,
            "shoe_id": None, "croupier_id": croupier}


def _subject_coups(day: date, family: str, subject: str):
    qs = current_coups().filter(gaming_day=day)
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


def _series(look, family: str, subject: str) -> dict:
    """The chart: the subject's events and what the null expects, shoe by
    shoe in the order dealt, summed as the night goes (one aggregate query,
    for a crossed subject only)."""
    false_draw = Finding.objects.filter(coup=OuterRef("pk"), code="false_draw")
    rows = list(
        _subject_coups(look.day, family, subject).order_by()
        .alias(has_false_draw=Exists(false_draw))
        .values_list("shoe_id", "shoe__number", "rules_id", "tableau_version")
        .annotate(n=Count("id"), wins=Count("id", filter=Q(outcome="banker")),
                  fd=Count("id", filter=Q(has_false_draw=True)))
        .order_by("shoe_id"))
    plays = {p: i for i, p in enumerate(look.groups.plays)}
    shoes: dict[int, list] = {}
    for shoe, number, rules, tableau, n, wins, fd in rows:
        if family == "croupier":
            q = look.q_croupier.get(int(subject.split(":")[1]), 0.0)
            seen = fd
        else:
            i = plays.get((rules, tableau))
            q = float(look.q_play[i]) if i is not None else 0.0
            seen = wins
        cell = shoes.setdefault(shoe, [number, 0, 0.0])
        cell[1] += seen
        cell[2] += n * q
    labels, observed, expected, so_far, exp_far = [], [], [], 0, 0.0
    for number, seen, exp in shoes.values():
        so_far, exp_far = so_far + seen, exp_far + exp
        labels.append(f"n° {number}")
        observed.append(so_far)
        expected.append(round(exp_far, 3))
    return {"labels": labels, "observed": observed, "expected": expected,
            "cumulative": True}


def _evidence(look, a, place: dict, table: str, who: str) -> dict:
    family = a.family
    t = look.trailing
    ev = {
        "family": family, "table": table, "who": who,
        "day": look.day.toordinal(), "coups": a.coups, "count": a.events,
        "expected": round(a.expected, 4), "log_lambda": round(a.log_lambda, 4),
        "level": a.level, "once_in_shifts": livetests.chance_in_shifts(a.p_value),
        "alpha": settings.SURVEILLANCE_LIVE_ALPHA,
        "subjects": len(look.tallies[family].subjects),
        "budget": look.budget[family],
        "over_budget": len(look.tallies[family].subjects) > look.budget[family],
    }
    if family == "croupier":
        ev["reference_rate"] = look.q_croupier.get(place["croupier_id"])
        if t.reference.source == "trailing":
            ev["reference"] = (f"the floor's false draws over the {t.reference.days} "
                               "gaming days before")
            ev["reference_coups"] = t.reference.coups
        else:
            ev["reference"] = ("tonight's rest of the floor (fewer than "
                               "enough coups on the days before)")
    else:
        ev["mix"] = (f"the floor's mix of free choices on {t.mix_from}"
                     if t.mix is not None else
                     "every free cell drawn (no surveyed day before)")
    ev["series"] = _series(look, family, a.subject)
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
    """A day's fresh live alerts, ready to write."""

    look: object  # live.DayLook
    items: list


def live_alerts_prepare(look) -> Prepared:
    """The crossed subjects of a day's look not raised before, with their
    place, words and evidence (read before anything is written: the
    chart's series is a query). Two looks never run at once (live.py's
    lock), so what is not raised now is not raised by another look."""
    if not look.crossed:
        return Prepared(look, [])
    idents = [live_ident(a.test, a.subject, look.day) for a in look.crossed]
    seen = set(Flag.objects.filter(ident__in=idents).values_list("ident", flat=True))
    fresh = []
    for ident, a in zip(idents, look.crossed, strict=True):
        if ident not in seen:
            seen.add(ident)
            fresh.append((ident, a, _place(look, a.family, a.subject)))
    if not fresh:
        return Prepared(look, [])
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
    return Prepared(look, items)


def live_alerts_write(prepared: Prepared) -> int:
    """Write a day's prepared alerts (last in the look's transaction: from
    the first change-log row the trail's chain is held); returns how many."""
    look, items = prepared.look, prepared.items
    if not items:
        return 0
    alerts.write_lock()
    now = timezone.now()
    run = SurveillanceRun.objects.create(
        from_day=look.day, to_day=look.day, tables=[],
        fdr=Decimal(str(settings.SURVEILLANCE_LIVE_ALPHA)).quantize(Decimal("0.0001")),
        source=SurveillanceRun.Source.LIVE, status=SurveillanceRun.Status.DONE,
        stage="done", percent=100, requested_at=now, dispatched_at=now,
        started_at=now, finished_at=now, attempts=1, coups=look.groups.coups,
        tests=sum(len(t.subjects) for t in look.tallies.values()),
        alerts=len(look.crossed), alerts_new=len(items),
        summary={"live": True, "alert_idents": [i.ident for i in items],
                 "budget": look.budget, "levels": look.levels})
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
