"""The surveillance's tests and subjects in words (translated on the pages)."""

from __future__ import annotations

import math
import re

from django.utils.translation import gettext_lazy as _

TESTS = {
    "false_draw_rate": _("False draws above the floor's rate"),
    "correction_rate": _("Coups corrected more often than on the floor"),
    "bank_mismatch_rate": _("Bank mismatches above the floor's rate"),
    "banker_wins": _("The banker won more coups than the odds give"),
    "banker_money": _("The banker won more money than the odds give"),
    "banker_share": _("Banker wins away from the odds on a gaming day"),
    "levy": _("Commission away from the expected levy"),
    "cusum_banker_share": _("The banker-win rate fell (CUSUM over its limit)"),
    "cusum_banker_share_up": _("The banker-win rate rose (CUSUM over its limit)"),
    "outcomes": _("The shoe's outcomes are away from the odds"),
    "runs": _("The shoe's wins come in runs the odds do not give"),
    "count": _("Cards dealt, burned and left do not make the shoe"),
    "rank_over": _("A rank seen more often than the shoe holds"),
    "rank_short": _("A rank short at the shoe's close"),
    # the live surveillance's tests (audit/surveillance/sequential.py)
    "croupier_false_draws": _("False draws above the floor's rate (live)"),
    "table_banker_share": _("The table's banker wins away from the odds (live)"),
    "live_croupier": _("False draws above the floor's rate (live)"),
    "live_banker": _("The banker won more coups than the odds give (live)"),
    "live_table": _("The table's banker wins away from the odds (live)"),
}

KINDS = {
    "croupier": _("croupier"),
    "banker": _("banker"),
    "table_day": _("table, gaming day"),
    "table_cusum": _("table"),
    "shoe": _("shoe"),
    "shoe_count": _("shoe count"),
    "live_croupier": _("croupier (live)"),
    "live_banker": _("banker (live)"),
    "live_table": _("table (live)"),
}


def test_label(code: str) -> str:
    return str(TESTS.get(code, code.replace("_", " ")))


FIGURES = {
    "coups": _("coups"),
    "count": _("count"),
    "rate": _("rate"),
    "floor_rate": _("floor's rate"),
    "rest_of_floor_rate": _("rate of the rest of the floor"),
    "ratio_to_rest": _("ratio to the rest of the floor"),
    "wins": _("banker wins"),
    "banker_wins": _("banker wins"),
    "expected_wins": _("expected banker wins"),
    "win_share": _("banker-win share"),
    "share": _("banker-win share"),
    "expected_share": _("expected share"),
    "money": _("banker's money"),
    "expected_money": _("expected money"),
    "sd": _("standard deviation"),
    "sd_money": _("standard deviation of the money"),
    "z": "z",
    "levy": _("commission"),
    "expected_levy": _("expected commission"),
    "chi_square": "χ²",
    "runs": _("runs"),
    "runs_z": _("runs (z)"),
    "p0": _("expected banker-win rate"),
    "p1": _("rate the CUSUM watches for"),
    "limit_h": _("CUSUM limit"),
    "arl0": _("in-control run length (coups)"),
    "false_alarm_probability": _("false-alarm probability"),
    "crossed_at_coup": _("crossed at coup"),
    "crossing_day": _("crossing day"),
    "q_value": _("adjusted p-value (q)"),
    "fdr": _("false discovery rate"),
    "decks": _("decks"),
    "burned": _("burned"),
    "dealt": _("dealt"),
    "left_counted": _("counted left"),
    "accounted": _("accounted for"),
    "expected": _("expected"),
    "difference": _("difference"),
    "rank": _("rank"),
    "seen": _("seen"),
    "allowed": _("allowed"),
    "table": _("table"),
    "shoe": _("shoe"),
    "day": _("gaming day"),
    "family": _("watched"),
    "who": _("who"),
    "log_lambda": _("log of the likelihood ratio (log Λ)"),
    "level": _("level (per subject and shift)"),
    "once_in_shifts": _("by chance about once in (shifts)"),
    "alpha": _("the house's bound on shifts with a false alert"),
    "since": _("the window's first gaming day"),
    "days": _("gaming days in the window"),
    "windows": _("windows charged to this alert (their first days)"),
    "subjects": _("subjects watched (the window's first day)"),
    "budget": _("subjects budgeted"),
    "over_budget": _("more subjects than budgeted"),
    "reference": _("reference"),
    "reference_rate": _("reference rate"),
    "reference_coups": _("coups of the reference"),
    "mix": _("free choices weighed at"),
}


# ---- an alert in one sentence a manager reads (issue 35) ---------------------

# What a croupier does more often than the rest of the floor, by test.
_CROUPIER_DOES = {
    "false_draw_rate": (
        _("{who} false-draws {ratio} times as often as the rest of the floor "
          "over {coups} coups"),
        _("{who} false-drew {count} times in {coups} coups, where the rest of "
          "the floor never did"),
    ),
    "correction_rate": (
        _("{who}'s coups are corrected {ratio} times as often as the rest of "
          "the floor's, over {coups} coups"),
        _("{who}'s coups were corrected {count} times in {coups} coups, where "
          "the rest of the floor's never were"),
    ),
    "bank_mismatch_rate": (
        _("{who} declares a bank that is not the bank carried forward {ratio} "
          "times as often as the rest of the floor, over {coups} coups"),
        _("{who} declared a bank that was not the bank carried forward {count} "
          "times in {coups} coups, where the rest of the floor never did"),
    ),
}


def _number(value, places: int = 0) -> str:
    from django.utils.formats import number_format

    # number_format cuts the places it drops; a figure is rounded
    return number_format(round(float(value), places), places, force_grouping=True)


def chance_words(p: float | None) -> str:
    """"this happens by chance less than once in 10,000,000": the p-value
    as the odds of seeing as much on an honest floor."""
    if p is None:
        return ""
    if p <= 0:
        return str(_("this is a fact, not chance"))
    if p >= 0.5:
        return str(_("this happens by chance about every other time"))
    # 1/p rounded down to a power of ten, at most a billion (still true, and
    # a figure beyond that tells a manager nothing more)
    once = 10 ** min(int(math.floor(-math.log10(p))), 9)
    return str(_("this happens by chance less than once in {n}")).format(
        n=_number(once))


def alert_sentence(code: str, who: str, evidence: dict | None,
                   p: float | None) -> str:
    """One sentence for a manager, from the alert's own evidence: "Croupier
    X false-draws 3 times as often as the rest of the floor over 4,550
    coups; this happens by chance less than once in 10,000,000." The
    statistics behind it stay on the page, one click away."""
    ev = evidence or {}
    chance = chance_words(p)
    said = None
    if code in _CROUPIER_DOES and ev.get("coups"):
        ratio, never = _CROUPIER_DOES[code]
        if ev.get("ratio_to_rest"):
            said = str(ratio).format(who=who, ratio=_number(ev["ratio_to_rest"], 1),
                                     coups=_number(ev["coups"]))
        else:
            said = str(never).format(who=who, count=_number(ev.get("count", 0)),
                                     coups=_number(ev["coups"]))
    elif code == "banker_wins" and ev.get("expected_wins") is not None:
        said = str(_("{who} won {wins} coups as banker where the odds give "
                     "{expected}")).format(
            who=who, wins=_number(ev.get("wins", 0)),
            expected=_number(ev["expected_wins"], 1))
    elif code == "banker_money" and ev.get("expected_money") is not None:
        said = str(_("{who} won {money} as banker where the odds give "
                     "{expected}")).format(
            who=who, money=_number(ev.get("money", 0), 2),
            expected=_number(ev["expected_money"], 2))
    if said is None:
        said = f"{test_label(code)}: {who}"
    return f"{said}; {chance}." if chance else f"{said}."


# ---- a live alert in one sentence, for the queue (issue 38) ------------------

_LIVE = {
    "live_croupier": _("{table}: croupier {who} has false-drawn {count} times in "
                       "{coups} coups tonight; the floor's rate would give "
                       "{expected}; this happens by chance about once in "
                       "{once} shifts"),
    "live_banker": _("{table}: the banker ({who}) has won {count} of {coups} "
                     "coups tonight; the odds would give {expected}; this "
                     "happens by chance about once in {once} shifts"),
    "live_table": _("{table}: the bank has won {count} of {coups} coups "
                    "tonight; the odds would give {expected}; this happens by "
                    "chance about once in {once} shifts"),
}
# A window of several gaming days (the test started on {since}).
_LIVE_SINCE = {
    "live_croupier": _("{table}: croupier {who} has false-drawn {count} times in "
                       "{coups} coups since {since} ({days} gaming days); the "
                       "floor's rate would give {expected}; this happens by "
                       "chance about once in {once} shifts"),
    "live_banker": _("{table}: the banker ({who}) has won {count} of {coups} "
                     "coups since {since} ({days} gaming days); the odds would "
                     "give {expected}; this happens by chance about once in "
                     "{once} shifts"),
    "live_table": _("{table}: the bank has won {count} of {coups} coups since "
                    "{since} ({days} gaming days); the odds would give "
                    "{expected}; this happens by chance about once in {once} "
                    "shifts"),
}


def day_words(iso: str) -> str:
    """A gaming day as a sentence says it, in the reader's language:
    "Monday 30 November", "lundi 30 novembre" (Django's translated names);
    the text as it is when it is not a day."""
    from datetime import date

    from django.utils.formats import date_format

    try:
        day = date.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    # the same order in both languages; Django translates the names
    return date_format(day, "l j F")


def _who_words(who: str) -> str:
    """The banker's identity as the evidence stores it ("card 12", "seat
    3"), in the reader's language."""
    kind, _sep, rest = (who or "").partition(" ")
    if kind == "card":
        return str(_("card {n}")).format(n=rest)
    if kind == "seat":
        return str(_("seat {n}")).format(n=rest)
    return who or ""


def live_sentence(code: str, evidence: dict | None) -> str:
    """"Table 4: croupier X has false-drawn 9 times in 310 coups tonight;
    the floor's rate would give 1; this happens by chance about once in
    20,000 shifts" -- or, for a window of several gaming days, "... 21
    times in 2,310 coups since Monday 30 November (3 gaming days); ...".
    From the live alert's own evidence, in the reader's language (the
    queue, the flag's page)."""
    ev = evidence or {}
    words = _LIVE.get(code)
    if words is None or ev.get("coups") is None:
        return test_label(code)
    days = ev.get("days") or 1
    if days > 1 and ev.get("since"):
        words = _LIVE_SINCE[code]
    expected = float(ev.get("expected") or 0)
    who = ev.get("who") or ""
    return str(words).format(
        table=ev.get("table") or str(_("A table")),
        who=_who_words(who) if code == "live_banker" else who,
        count=_number(ev.get("count", 0)), coups=_number(ev["coups"]),
        expected=_number(expected, 0 if expected >= 10 else 1),
        once=_number(ev.get("once_in_shifts") or 0),
        since=day_words(ev.get("since") or ""), days=_number(days)) + "."


# ---- the live evidence's own sentences, on the page --------------------------

# Stored in English in the evidence (live_write.py: the API and the CSV give
# them as they are); the flag's page says them in the reader's language.
_EVIDENCE_TEXTS = [
    (re.compile(r"the floor's false draws over the (?P<days>\d+) gaming days before"),
     _("the floor's false draws over the {days} gaming days before")),
    (re.compile(r"the floor's false draws over the (?P<days>\d+) gaming days "
                r"before each day"),
     _("the floor's false draws over the {days} gaming days before each day")),
    (re.compile(r"the floor's false draws over the (?P<days>\d+) gaming days "
                r"before each day, or that day's rest of the floor where those "
                r"held too few coups"),
     _("the floor's false draws over the {days} gaming days before each day, or "
       "that day's rest of the floor where those held too few coups")),
    (re.compile(r"tonight's rest of the floor \(fewer than enough coups on the "
                r"days before\)"),
     _("tonight's rest of the floor (fewer than enough coups on the days before)")),
    (re.compile(r"each day's rest of the floor \(fewer than enough coups on the "
                r"days before\)"),
     _("each day's rest of the floor (fewer than enough coups on the days "
       "before)")),
    (re.compile(r"the floor's mix of free choices on (?P<day>[\d-]+)"),
     _("the floor's mix of free choices on {day}")),
    (re.compile(r"every free cell drawn \(no surveyed day before\)"),
     _("every free cell drawn (no surveyed day before)")),
    (re.compile(r"each day at the floor's mix of the latest surveyed day before "
                r"it \(every free cell drawn before any\)"),
     _("each day at the floor's mix of the latest surveyed day before it (every "
       "free cell drawn before any)")),
]


def evidence_text(value: str) -> str:
    """A sentence of the live evidence in the reader's language (the text
    as it is when it is none of them)."""
    for pattern, words in _EVIDENCE_TEXTS:
        found = pattern.fullmatch(value)
        if found:
            return str(words).format(**found.groupdict())
    return value
