"""A review flag in words, in the reader's language: its code, kind, status,
the steps of its history and its sentence (issue 24, item 8: the queue and
the flag page printed `warning`, `open`, `house_choice · banker`).

The finding's own words (codes, severities, sentences) live in
tables/finding_words.py, which the tablet shares; this adds what only the
review has: flag statuses and kinds, the audit's own codes, the history's
steps. Stored values stay codes: the API and the CSV's code columns give
them as they are.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tables import finding_words as fw

# The audit's own codes (no coup's engine raises them).
AUDIT_CODES = {
    "turn_structure": _("turn structure changed"),
    "ledger_mismatch": _("stored figure differs from the cards"),
    "record_changed": _("record changed outside the app"),
}
STATUSES = {
    "open": pgettext_lazy("flag status", "open"),
    "confirmed": pgettext_lazy("flag status", "confirmed"),
    "dismissed": pgettext_lazy("flag status", "dismissed"),
    "resolved": pgettext_lazy("flag status", "resolved"),
}
KINDS = {
    "finding": _("coup finding"),
    "cagnotte": _("cagnotte count"),
    "structure": _("turn structure"),
    "ledger": _("nightly re-settlement"),
    "shoe": _("shoe count"),
    "surveillance": _("surveillance"),
    "integrity": _("record changed outside the app"),
}
EVENTS = {
    "raised": _("raised"),
    "raised_again": _("raised again"),
    "moved": _("moved to the corrected coup"),
    "resolved": pgettext_lazy("flag event", "resolved"),
    "confirmed": pgettext_lazy("flag event", "confirmed"),
    "dismissed": pgettext_lazy("flag event", "dismissed"),
    "corrected": _("coup corrected"),
    "nightly_confirmed": _("confirmed by the nightly run"),
    "nightly_left": _("not found by the nightly run: the pit boss decides"),
}
# The queue's filters, by their query names.
FILTERS = {
    "table": _("Table"),
    "code": _("Finding"),
    "side": _("Side"),
    "croupier": _("Croupier"),
    "gaming_day": _("Gaming day"),
    "status": _("Status"),
    "severity": _("Severity"),
}


def _word(table: dict, value) -> str:
    word = table.get(value)
    return str(word) if word is not None else str(value)


def code_word(code: str, kind: str = "") -> str:
    """A flag's code in words: a finding's, the audit's own, or a
    surveillance test's."""
    from .surveillance.words import TESTS, test_label

    if kind == "surveillance" or code in TESTS:
        return test_label(code)
    if code in AUDIT_CODES:
        return str(AUDIT_CODES[code])
    return fw.code_word(code)


def status_word(value: str) -> str:
    return _word(STATUSES, value)


def kind_word(value: str) -> str:
    return _word(KINDS, value)


def event_word(value: str) -> str:
    return _word(EVENTS, value)


def filter_word(name: str) -> str:
    return _word(FILTERS, name)


def sanction_word(value: str) -> str:
    """A false-draw sanction (house rule) as the house-rules page says it."""
    from tables.models import HouseRules

    return _word(dict(HouseRules.Sanction.choices), value)


def option_word(name: str, value) -> str | None:
    """A queue filter's value in words (None: the value is its own label,
    e.g. a table's name)."""
    if name == "code":
        return code_word(value)
    if name == "side":
        return fw.side_word(value) if value != "-" else "—"
    if name == "status":
        return status_word(value)
    if name == "severity":
        return fw.severity_word(value)
    return None


def flag_text(flag) -> str:
    """What the flag is about, in a sentence in the reader's language: its
    coup's finding, its shoe's count, its session's cagnotte count; any other
    flag as it was stored."""
    if flag.finding_id:
        return fw.finding_text(flag.finding, flag.coup)
    if flag.kind == "shoe" and flag.shoe_id:
        from tables.models import ShoeFinding

        found = ShoeFinding.objects.filter(shoe_id=flag.shoe_id,
                                           code=flag.code).last()
        if found is not None:
            return fw.finding_text(found)
    if flag.kind == "surveillance" and flag.code.startswith("live_"):
        from .surveillance.words import live_sentence

        ev = getattr(flag, "live_evidence", None)
        if ev is None:
            row = flag.evidence.order_by("id").first()
            ev = row.evidence if row is not None else None
        if ev:
            return live_sentence(flag.code, ev)
    if flag.kind == "cagnotte" and flag.count_id:
        count = flag.count
        return fw.finding_text(_Stored(flag.code, {
            "counted": count.counted, "computed": count.computed}, flag.message))
    return flag.message


class _Stored:
    """A finding's shape (code, detail, message) for finding_text."""

    side = ""

    def __init__(self, code: str, detail: dict, message: str):
        self.code, self.detail, self.message = code, detail, message
