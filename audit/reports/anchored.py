"""Where the database records the trail's anchors (casino/anchors.py): each
gaming-day close's (audit.GamingDayClose of kind "anchor": its summary holds
the row and digest it anchored, audit/reports/nightly.py) and each report's
stamp (ReportJob.stamp["trail_anchor"], "row N DIGEST", audit/reports/
sheets.py). verify_trail asks that every one of them has its file in
TRAIL_ANCHOR_DIR: an emptied folder cannot pass as "0 anchors checked"."""

from __future__ import annotations

import re
from collections.abc import Iterator

from casino.anchors import Recorded

_STAMP = re.compile(r"row ([0-9]{1,18}) ([0-9a-f]{64})")


def recorded() -> Iterator[Recorded | str]:
    """Every anchor recorded in the database (an empty record: the log was
    empty when it was taken), or a string for a record that no longer reads
    as one."""
    from audit.models import GamingDayClose

    from .models import ReportJob

    closes = (GamingDayClose.objects.filter(kind=GamingDayClose.Kind.ANCHOR)
              .order_by("id").values_list("id", "gaming_day", "cutoff_hour",
                                          "summary"))
    for pk, day, cutoff, summary in closes:
        where = f"the gaming-day close of {day} at cut-off {cutoff}:00 (close {pk})"
        if not summary:
            continue
        row, digest = (summary.get("row"), summary.get("hash")
                       ) if isinstance(summary, dict) else (None, None)
        if (not isinstance(row, int) or not isinstance(digest, str)
                or not re.fullmatch(r"[0-9a-f]{64}", digest)):
            yield f"{where}: its summary {summary!r} does not read as an anchor"
            continue
        yield Recorded(row, digest, where)
    stamps = (ReportJob.objects.filter(stamp__has_key="trail_anchor")
              .order_by("id").values_list("id", "stamp__trail_anchor"))
    for pk, text in stamps:
        if not text:
            continue
        where = f"report #{pk}'s stamp"
        match = _STAMP.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            yield f"{where}: its trail anchor {text!r} does not read as one"
            continue
        yield Recorded(int(match[1]), match[2], where)
