"""What of a page is still English in French mode: every sentence the French
catalogue translates (its English msgid, cut at its placeholders into
fragments of two words or more) that the page's visible text still shows,
and the codes people should never read (finding codes, statuses,
severities)."""

from __future__ import annotations

import re
from functools import cache

# Words that read the same in both languages, or names, never counted.
SAME = {"banco solo", "suivi", "Chemin de fer", "Chemmy", "Coup", "Bank"}
# Codes a person must not read (docs/floor.md: codes only where a machine reads).
CODES = re.compile(
    r"\b(false_draw|house_choice|bank_mismatch|shoe_count|cagnotte_count|"
    r"cards_past|integrity|warning|critical|open|confirmed|dismissed|"
    r"corrected|to_review)\b")


@cache
def fragments() -> tuple[str, ...]:
    from django.utils import translation
    from django.utils.translation import trans_real

    with translation.override("fr"):
        catalog = trans_real.translation("fr")._catalog
    out = set()
    for msgid, msgstr in catalog.items():
        if not isinstance(msgid, str) or not msgid or msgid == msgstr:
            continue
        for part in re.split(r"%\(\w+\)[sd]|%[sd]|\{\w*\}|<[^>]+>|[\n\"“”]", msgid):
            part = part.strip(" .,:;·—-()!?'")
            if len(part.split()) >= 2 and len(part) >= 9 and part not in SAME:
                out.add(part)
    return tuple(sorted(out, key=len, reverse=True))


def english_left(text: str) -> list[str]:
    """The English fragments and codes found in ``text`` (a page's visible
    text in French mode); [] when it is all French."""
    found = [f for f in fragments() if f in text]
    found += sorted(set(CODES.findall(text)))
    return found
