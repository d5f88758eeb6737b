"""Reports as sheets: a stamp, typed columns, rows and a totals row.

One shape for every format: the CSV and XLSX writers and the PDF template
read a Sheet, so a number is the same number everywhere. Column kinds tell the
XLSX writer which number format to use (numbers stay numeric cells).
"""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache

from django.conf import settings
from django.db.models import Case, Count, F, IntegerField, When
from django.utils import timezone, translation

from tables.finding_words import code_word, severity_word, side_word
from tables.models import Finding
from tables.rollups import current_coups

from .selectors import CommissionReport, commission_report

# Writers tell a job's progress every PROGRESS_EVERY rows (and at the end of
# each sheet): a database write per row would cost more than the row.
PROGRESS_EVERY = 5000
TEXT, INT, MONEY, DECIMAL, FLAG = "text", "int", "money", "decimal", "flag"
TITLES = {
    "commission": "Commission report",
    "findings": "Findings report",
    "coups": "Coup detail export",
}


@dataclass
class Column:
    header: str
    kind: str = TEXT


@dataclass
class Sheet:
    name: str
    columns: list[Column]
    rows: list[list] = field(default_factory=list)
    total: list | None = None


@dataclass
class Document:
    title: str
    stamp: dict
    sheets: list[Sheet]
    report: CommissionReport | None = None  # the PDF draws its chart from it


@lru_cache(maxsize=1)
def software_version() -> str:
    root = settings.BASE_DIR
    with open(root / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
            text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"chemmy-audit {version}" + (f" ({commit})" if commit else "")


def make_stamp(*, kind: str, params: dict, user, rules: list[dict]) -> dict:
    """What regulators ask on every report: title, period, house rules in
    force, software version, generated at and by whom, and the change log's
    head as it stood (an anchor: it is also written to TRAIL_ANCHOR_DIR, and
    whoever holds the report holds a copy the database cannot take back)."""
    from casino.anchors import trail_anchor

    anchor = trail_anchor(reason=f"report stamp: {TITLES[kind]}")
    return {
        "title": TITLES[kind],
        "period": f"gaming days {params['from_day']} to {params['to_day']}",
        "gaming_day_note": "a gaming day starts at the table's cut-off hour",
        "group_by": params.get("group_by", ""),
        "house_rules": rules,
        "software_version": software_version(),
        "generated_at": timezone.localtime().isoformat(timespec="seconds"),
        "generated_by": user.username if user else "nightly schedule",
        "trail_anchor": f"row {anchor.row} {anchor.hash}" if anchor else "",
        # the anchored row's public link (casino/trail.py): what an outsider
        # walks the log to, with no key
        "trail_anchor_link": anchor.link if anchor else "",
    }


def stamp_signed(stamp: dict) -> dict:
    """The finished stamp (its data position added) signed with the casino's
    Ed25519 key (casino/signing.py: the statement is the stamp's canonical
    JSON without "signature"; "signing_key_id" is in it). Signed as the
    database will give it back (plain JSON values)."""
    import json

    from casino.signing import stamp_sign

    return stamp_sign(json.loads(json.dumps(stamp)))


def rules_text(rule: dict) -> str:
    """One version's rules on a report: everything its expected commission
    was computed with (a stamp written before a rule existed lacks it)."""
    rounding = rule.get("commission_rounding", "half_up").replace("_", " ")
    cells = rule.get("banker_prescriptions") or {}
    play = (f"punter's 5 {rule.get('punter_five', 'free')}, banker's optional "
            "cells " + (", ".join(f"{k} {v}" for k, v in cells.items()) or "free")
            + " (a free cell counted as a draw in the odds)")
    return (
        f"{rule['table']}: rules v{rule['version']}, {rule['decks']} decks, "
        f"commission {rule['commission_rate']} rounded to {rule['commission_unit']} "
        f"{rounding}, minimum banco {rule['minimum_banco']}, "
        f"tableau {rule['tableau']}, {play}, "
        f"cut-off {rule['gaming_day_cutoff']}:00"
        + (f" (from {rule['from_day']})" if rule.get("from_day") else "")
        + (f", {rule['coups']} coups" if "coups" in rule else "")
    )


# The language reports are written in (their titles, headers and stamps are
# English): a finding's words follow it, whoever asked for the report and in
# whatever language his page was (an eager build runs in his request).
REPORT_LANGUAGE = "en"


def findings_header(code: str) -> str:
    """A commission report's column of one finding's counts: "false draws"
    rather than "false_draw"."""
    with translation.override(REPORT_LANGUAGE):
        return f"{code_word(code)} (findings)"


def commission_document(*, params: dict, user) -> Document:
    report = commission_report(
        from_day=date.fromisoformat(params["from_day"]),
        to_day=date.fromisoformat(params["to_day"]),
        group_by=params.get("group_by", "table"),
        table_ids=params.get("tables") or None,
    )
    codes = report.finding_codes
    columns = [
        Column(params.get("group_by", "table").replace("_", " ")),
        Column("coups", INT), Column("banker wins", INT), Column("punter wins", INT),
        Column("ties", INT), Column("covered", MONEY), Column("commission", MONEY),
        Column("cagnotte counted", MONEY), Column("cagnotte variance", MONEY),
        Column("expected commission", MONEY), Column("95% low", MONEY),
        Column("95% high", MONEY), Column("z", DECIMAL), Column("outside band", FLAG),
    ] + [Column(findings_header(code), INT) for code in codes]

    def line(r) -> list:
        return [
            r.label, r.coups, r.banker_wins, r.punter_wins, r.ties, r.covered,
            r.commission, r.counted, r.cagnotte_variance, r.expected, r.band_low,
            r.band_high, r.z, "yes" if r.outside else "",
        ] + [r.findings.get(code, 0) for code in codes]

    main = Sheet("Commission", columns, [line(r) for r in report.rows],
                 line(report.total))
    flagged = Sheet(
        "Outside band",
        [Column("table and gaming day"), Column("coups", INT),
         Column("covered", MONEY), Column("commission", MONEY),
         Column("expected commission", MONEY), Column("95% low", MONEY),
         Column("95% high", MONEY), Column("z", DECIMAL)],
        [[c.label, c.coups, c.covered, c.commission, c.expected, c.band_low,
          c.band_high, c.z] for c in report.flagged],
    )
    stamp = make_stamp(kind="commission", params=params, user=user, rules=report.rules)
    return Document(TITLES["commission"], stamp, [main, flagged], report)


def findings_document(*, params: dict, user) -> Document:
    """False draws and the other findings by table, croupier, player (the seat
    whose side broke the rule) and code, over the current coup revisions."""
    coups = current_coups().filter(
        gaming_day__gte=params["from_day"], gaming_day__lte=params["to_day"]
    )
    if params.get("tables"):
        coups = coups.filter(shoe__session__table_id__in=params["tables"])
    seat = Case(
        When(side="punter", then=F("coup__punter_seat")),
        When(side="banker", then=F("coup__banker_seat")),
        output_field=IntegerField(),
    )
    rows = (
        Finding.objects.filter(coup__in=coups)
        .annotate(seat=seat)
        .values("coup__shoe__session__table__name", "coup__entered_by__username",
                "seat", "side", "code", "severity")
        .annotate(n=Count("id"))
        .order_by("coup__shoe__session__table__name", "coup__entered_by__username",
                  "seat", "code")
    )
    # Words where a person reads; the code in a column of its own, last, for
    # a machine that filters (docs/floor.md, "Words for people, codes for machines").
    columns = [Column("table"), Column("croupier"), Column("player seat", INT),
               Column("side"), Column("finding"), Column("severity"),
               Column("findings", INT), Column("code")]
    with translation.override(REPORT_LANGUAGE):
        body = [[r["coup__shoe__session__table__name"],
                 r["coup__entered_by__username"], r["seat"], side_word(r["side"]),
                 code_word(r["code"]), severity_word(r["severity"]), r["n"],
                 r["code"]] for r in rows]
        by_code: dict[str, int] = {}
        for r in body:
            by_code[r[7]] = by_code.get(r[7], 0) + r[6]
        main = Sheet("Findings", columns, body,
                     ["Total", "", None, "", "", "", sum(by_code.values()), ""])
        codes = Sheet("By finding",
                      [Column("finding"), Column("findings", INT), Column("code")],
                      [[code_word(c), n, c] for c, n in sorted(by_code.items())])
    from .selectors import rules_of_period

    # every version the period's coups were played under, with its coups
    rules = rules_of_period(date.fromisoformat(params["from_day"]),
                            date.fromisoformat(params["to_day"]),
                            params.get("tables") or None)
    stamp = make_stamp(kind="findings", params=params, user=user, rules=rules)
    return Document(TITLES["findings"], stamp, [main, codes])
