"""The evidence bundle as a report job (the reports page's download): the
job's params name the period and the tables, the file is the bundle, and
its stamp names the anchor that closes it, signed like every report's
(casino/signing.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from audit.reports.sheets import stamp_signed

from .build import evidence_build


def evidence_file(job, path: Path, *, progress) -> tuple[int, dict]:
    p = job.params
    manifest = evidence_build(
        from_day=date.fromisoformat(p["from_day"]),
        to_day=date.fromisoformat(p["to_day"]),
        table_ids=p.get("tables") or None, path=path, progress=progress)
    rows = manifest["parts"]["ledger.jsonl"]["lines"]
    windows = manifest["windows"]
    stamp = {
        "title": "Evidence bundle",
        "period": f"gaming days {p['from_day']} to {p['to_day']}",
        "ledger_rows": rows,
        "log_rows": manifest["parts"]["log.jsonl"]["lines"],
        "verify_with": "python tools/verify_evidence.py FILE --public-key KEY",
    }
    if windows:
        from casino.models import ChangeLog

        last = windows[-1]["last"]
        digest, link = ChangeLog.objects.filter(pk=last).values_list(
            "hash", "link").get()
        stamp["trail_anchor"] = f"row {last} {digest}"
        stamp["trail_anchor_link"] = link
    return rows, stamp_signed(stamp)
