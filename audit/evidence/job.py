"""The evidence bundle as a report job (the reports page's download): the
job's params name the period and the tables, the file is the bundle, and
its stamp names the anchor that closes it, signed like every report's
(casino/signing.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from django.utils import timezone

from audit.reports.sheets import software_version, stamp_signed

from .build import evidence_build


def evidence_file(job, path: Path, *, progress) -> tuple[int, dict]:
    p = job.params
    manifest = evidence_build(
        from_day=date.fromisoformat(p["from_day"]),
        to_day=date.fromisoformat(p["to_day"]),
        table_ids=p.get("tables") or None, path=path, progress=progress)
    rows = manifest["parts"]["ledger.jsonl"]["lines"]
    windows = manifest["windows"]
    from audit.reports.selectors import rules_of_period

    user = job.requested_by
    # what every report's stamp says (sheets.make_stamp), the anchor apart:
    # the bundle's is the last row it holds (issue 35: the job page's stamp
    # had no house rules, software, time or author)
    stamp = {
        "title": "Evidence bundle",
        "period": f"gaming days {p['from_day']} to {p['to_day']}",
        "gaming_day_note": "a gaming day starts at the table's cut-off hour",
        "house_rules": rules_of_period(
            date.fromisoformat(p["from_day"]), date.fromisoformat(p["to_day"]),
            p.get("tables") or None),
        "software_version": software_version(),
        "generated_at": timezone.localtime().isoformat(timespec="seconds"),
        "generated_by": user.username if user else "nightly schedule",
        "ledger_rows": rows,
        "log_rows": manifest["parts"]["log.jsonl"]["lines"],
        "verify_with": ("python tools/verify_evidence.py FILE --public-key KEY "
                        "[--witness-key VKEY]"),
    }
    if windows:
        from casino.models import ChangeLog

        last = windows[-1]["last"]
        digest, link = ChangeLog.objects.filter(pk=last).values_list(
            "hash", "link").get()
        stamp["trail_anchor"] = f"row {last} {digest}"
        stamp["trail_anchor_link"] = link
    return rows, stamp_signed(stamp)
