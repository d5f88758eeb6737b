"""Selectors read: a run's alerts, the latest run of each period, a flag's
evidence and the chart its page draws."""

from __future__ import annotations

from datetime import date

from django.db.models import Prefetch

from ..models import Flag, SurveillanceEvidence, SurveillanceRun
from ..selectors import visible


def run_alerts(run: SurveillanceRun, *, hidden: int | None = None) -> list[Flag]:
    """The flags of the alerts the run found, each with its evidence
    (attributes subject, statistic, p_value, q_value, alert_evidence,
    raised_by_run), most severe and smallest p first."""
    idents = (run.summary or {}).get("alert_idents") or []
    flags = list(
        visible(Flag.objects.filter(ident__in=idents), hidden)
        .select_related("croupier", "decided_by", "table")
        .prefetch_related(Prefetch("evidence", SurveillanceEvidence.objects
                                   .order_by("id"), to_attr="_evidence")))
    for f in flags:
        ev = f._evidence[0] if f._evidence else None
        f.subject = ev.subject if ev else None
        f.statistic = ev.statistic if ev else None
        f.p_value = ev.p_value if ev else None
        f.q_value = ev.q_value if ev else None
        f.alert_evidence = ev.evidence if ev else None
        f.raised_by_run = ev.run_id if ev else None
    flags.sort(key=lambda f: (f.severity != "critical",
                              f.p_value if f.p_value is not None else 1.0, f.pk))
    return flags


def latest_runs(limit: int = 12) -> list[SurveillanceRun]:
    """The latest run of each period (from, to, tables), newest first."""
    out, seen = [], set()
    for run in (SurveillanceRun.objects.exclude(source=SurveillanceRun.Source.LIVE)
                .select_related("requested_by")[:200]):
        key = (run.from_day, run.to_day, tuple(run.tables or ()))
        if key in seen:
            continue
        seen.add(key)
        out.append(run)
        if len(out) == limit:
            break
    return out


def _iso(ordinal) -> str | None:
    try:
        return date.fromordinal(int(ordinal)).isoformat()
    except (TypeError, ValueError, OverflowError):
        return None


def evidence_chart(kind: str, test: str, ev: dict) -> dict | None:
    """The chart of a flag's page, from its evidence: the croupier's point in
    the floor's funnel; the table's CUSUM path (each day's highest value)
    against its limit; bars of observed against expected (a shoe's outcomes,
    a table's or a banker's wins by gaming day)."""
    if not ev:
        return None
    if kind.startswith("live_") and (ev.get("series") or {}).get("labels"):
        sr = ev["series"]  # the night so far, shoe by shoe (live_write.py)
        return {"type": "bars", "labels": sr["labels"],
                "observed": sr.get("observed", []),
                "expected": sr.get("expected", [])}
    if kind == "croupier" and ev.get("funnel"):
        f = ev["funnel"]
        return {"type": "funnel", "n": f.get("n", []),
                "lo95": f.get("lo95", []), "hi95": f.get("hi95", []),
                "lo998": f.get("lo998", []), "hi998": f.get("hi998", []),
                "points": f.get("points", []),
                "subject": {"n": ev.get("coups"), "rate": ev.get("rate")}}
    if kind == "table_cusum" and ev.get("series"):
        sr = ev["series"]
        return {"type": "cusum", "labels": [_iso(d) for d in sr.get("day", [])],
                "values": sr.get("cusum_max", []), "limit": ev.get("limit_h")}
    if kind == "shoe" and ev.get("counts"):
        names = ["banker", "punter", "tie"]
        return {"type": "bars", "labels": names,
                "observed": [ev["counts"].get(k) for k in names],
                "expected": [ev.get("expected", {}).get(k) for k in names]}
    series = ev.get("series") or {}
    if series.get("day") and ("banker_wins" in series or "wins" in series):
        return {"type": "bars", "labels": [_iso(d) for d in series["day"]],
                "observed": series.get("banker_wins", series.get("wins")),
                "expected": series.get("expected_wins", [])}
    return None


# A live alert's figures in the order a reader asks: who, where, since when,
# what was seen against what the null gives, how unlikely, the bound.
LIVE_ORDER = ("table", "who", "family", "day", "since", "days", "windows", "coups",
              "count", "expected", "reference", "reference_rate", "reference_coups",
              "mix", "log_lambda", "once_in_shifts", "level", "alpha", "subjects",
              "budget", "over_budget")
# Evidence figures that are names or ordinals, not amounts: never grouped.
_NOT_AMOUNTS = ("shoe", "table", "rank", "decks")


def _figure(key: str, value):
    """One evidence figure as the page shows it, in the reader's language:
    days as days, yes/no in words, counts grouped (1,000,000,000)."""
    from django.utils.formats import number_format
    from django.utils.translation import gettext

    if key in ("day", "crossing_day") and isinstance(value, int):
        return _iso(value)
    if isinstance(value, bool):
        return gettext("yes") if value else gettext("no")
    if isinstance(value, int) and key not in _NOT_AMOUNTS:
        return number_format(value, force_grouping=True)
    if isinstance(value, float):
        return _decimal(value)
    if value is None:
        return "—"
    if key == "windows" and isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, str):
        from .words import evidence_text

        return evidence_text(value)
    return value


def _decimal(value: float, digits: int = 4) -> str:
    """A figure to ``digits`` significant digits with the reader's decimal
    separator (9.714; 9,714 in French)."""
    from django.utils.formats import get_format

    return f"{value:.{digits}g}".replace(".", get_format("DECIMAL_SEPARATOR"))


def flag_evidence(flag: Flag) -> dict:
    """What the flag's page shows of a surveillance alert."""
    ev = flag.evidence.order_by("id").first()
    if ev is None:
        return {}
    from .words import FIGURES, KINDS, test_label

    body = ev.evidence or {}
    kind = body.get("kind", "")
    figures = []
    keys = list(body)
    if kind.startswith("live_"):  # in the order a reader asks (unknown: last)
        keys.sort(key=lambda k: LIVE_ORDER.index(k) if k in LIVE_ORDER
                  else len(LIVE_ORDER))
    for key in keys:
        value = body[key]
        listed = key == "windows" and isinstance(value, list)
        if (isinstance(value, dict | list) and not listed) or key in (
                "kind", "sequence"):
            continue
        figures.append((str(FIGURES.get(key, key.replace("_", " "))),
                        _figure(key, value)))
    live = kind.startswith("live_")
    alpha = body.get("alpha")
    return {"surveillance": {
        "row": ev, "kind": kind, "figures": figures,
        "label": test_label(ev.test), "kind_label": str(KINDS.get(kind, kind)),
        "interval": body.get("wilson95") or body.get("band95"),
        "limits": body.get("limits_at_n"), "sequence": body.get("sequence"),
        "chart": evidence_chart(kind, ev.test, body),
        "p_value": None if ev.p_value is None else _decimal(ev.p_value, 3),
        "live": live,
        "live_alpha": _percent(alpha) if live else None,
    }}


def _percent(rate) -> str | None:
    """A rate as the percentage a sentence says: 0.03 -> "3", 0.025 -> "2.5"."""
    from django.utils.formats import number_format

    if not isinstance(rate, int | float) or isinstance(rate, bool):
        return None
    pct = round(100 * float(rate), 4)
    places = next(k for k in range(5) if round(pct, k) == pct)
    return number_format(pct, places)
