"""One wording for a coup's result, wherever a result is written.

The winner comes first with his total, then the loser's: "Banker wins 7 to
5", "Punter wins 9 to 7"; a tie is "Tie at 6". The tablet's result panel and
recent coups, the floor and audit pages (template filter ``result`` in
tables/templatetags/coups.py) and the tablet's script all say it this way:
the script gets these very sentences in its strings table (js_strings,
``result_<outcome>``) and words them with its twin, resultText() in
static/tablet/coup/words.js. tests/test_wording.py holds the two together.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

# {p}: the punter's total, {b}: the banker's (the totals that count).
RESULTS: dict[str, str] = {
    "banker": gettext_noop("Banker wins {b} to {p}"),
    "punter": gettext_noop("Punter wins {p} to {b}"),
    "tie": gettext_noop("Tie at {p}"),
}


def result_strings() -> dict[str, str]:
    """The sentences in the active language, keyed as the script reads them."""
    return {f"result_{k}": _(v) for k, v in RESULTS.items()}


def result_text(outcome: str, punter_total: int, banker_total: int) -> str:
    """"Banker wins 7 to 5" in the active language; an unknown outcome is
    shown as it is stored rather than hidden."""
    template = RESULTS.get(outcome)
    if template is None:
        return str(outcome)
    return _(template).format(p=punter_total, b=banker_total)


def coup_result(coup) -> str:
    """result_text for a coup, a coup revision's dict or a state summary."""
    if isinstance(coup, Mapping):
        get = coup.get
    else:
        def get(name):
            return getattr(coup, name, None)
    return result_text(get("outcome"), get("punter_total"), get("banker_total"))
