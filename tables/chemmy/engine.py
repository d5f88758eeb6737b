"""One coup, judged: naturals, the punter's rule, the banker's tableau, the outcome
(docs/rules.md, "Naturals", "The punter's rule", "The banker's tableau"
and "Outcome").

``evaluate`` takes the cards as dealt and never voids a coup: a broken rule is a
finding on the verdict, and the cards as dealt decide the outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from .cards import _ALIASES, POINTS, parse_hand
from .findings import FINDING_SEVERITY, Finding
from .tableau import COLUMNS, STANDARD_TABLEAU, Action, Tableau

__all__ = [
    "FINDING_SEVERITY",
    "Finding",
    "Outcome",
    "Verdict",
    "evaluate",
]


class Outcome(StrEnum):
    BANKER = "banker"
    PUNTER = "punter"
    TIE = "tie"


@dataclass(frozen=True, slots=True)
class Verdict:
    punter: tuple[str, ...]
    banker: tuple[str, ...]
    punter_total: int
    banker_total: int
    outcome: Outcome
    natural: str | None
    punter_third: int | None
    punter_choice: str | None
    banker_choice: str | None
    tableau_version: str
    findings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "punter": list(self.punter),
            "banker": list(self.banker),
            "punter_total": self.punter_total,
            "banker_total": self.banker_total,
            "outcome": self.outcome.value,
            "natural": self.natural,
            "punter_third": self.punter_third,
            "punter_choice": self.punter_choice,
            "banker_choice": self.banker_choice,
            "tableau_version": self.tableau_version,
            "findings": [f.to_dict() for f in self.findings],
        }


_DRAW: Final = Action.DRAW
_OPTIONAL: Final = Action.OPTIONAL
_BANKER: Final = Outcome.BANKER
_PUNTER: Final = Outcome.PUNTER
_TIE: Final = Outcome.TIE
# punter two-card total 0..7 -> True: must draw, False: must stand, None: optional
_PUNTER_MUST_DRAW: Final = (True,) * 5 + (None,) + (False,) * 2
_NO_FINDINGS: Final[tuple[Finding, ...]] = ()


def evaluate(
    punter: Sequence[str],
    banker: Sequence[str],
    *,
    tableau: Tableau = STANDARD_TABLEAU,
) -> Verdict:
    """Judge one coup as dealt: totals that count, outcome, choices, findings.

    Raises CoupError (field "punter", "banker", "punter[i]"...) on broken input.
    """
    # Hot path: this runs for every coup of a season's re-audit, so the common
    # case is inlined (one dict lookup per card, shared immutable findings).
    aliases = _ALIASES
    try:
        if type(punter) is list and len(punter) == 2:
            p: tuple[str, ...] = (aliases[punter[0]], aliases[punter[1]])
        else:
            p = parse_hand(punter, field="punter")
        if type(banker) is list and len(banker) == 2:
            b: tuple[str, ...] = (aliases[banker[0]], aliases[banker[1]])
        else:
            b = parse_hand(banker, field="banker")
    except (KeyError, TypeError):
        p = parse_hand(punter, field="punter")
        b = parse_hand(banker, field="banker")
    points = POINTS
    p2 = (points[p[0]] + points[p[1]]) % 10
    b2 = (points[b[0]] + points[b[1]]) % 10
    if p2 >= 8 or b2 >= 8:
        return _natural(p, b, p2, b2, tableau.version)

    punter_drew = len(p) == 3
    must = _PUNTER_MUST_DRAW[p2]
    findings = _NO_FINDINGS
    punter_choice = None
    if must is None:
        punter_choice = "draw" if punter_drew else "stand"
    elif must is not punter_drew:
        findings = (_false_draw("punter", p2, b2, None, must),)

    third: int | None = None
    if punter_drew:
        value = points[p[2]]
        third = value
        pt = (p2 + value) % 10
        action = tableau.cells[b2 * COLUMNS + 1 + value]
    else:
        pt = p2
        action = tableau.cells[b2 * COLUMNS]

    banker_choice = None
    if len(b) == 3:
        bt = (b2 + points[b[2]]) % 10
        if action is _OPTIONAL:
            banker_choice = "draw"
        elif action is not _DRAW:
            findings += (_false_draw("banker", p2, b2, third, False),)
    else:
        bt = b2
        if action is _OPTIONAL:
            banker_choice = "stand"
        elif action is _DRAW:
            findings += (_false_draw("banker", p2, b2, third, True),)

    outcome = _BANKER if bt > pt else _PUNTER if pt > bt else _TIE
    return Verdict(
        p,
        b,
        pt,
        bt,
        outcome,
        None,
        third,
        punter_choice,
        banker_choice,
        tableau.version,
        findings,
    )


def _natural(
    p: tuple[str, ...], b: tuple[str, ...], p2: int, b2: int, version: str
) -> Verdict:
    # Rules 1-3: the punter's natural is checked first; nobody draws after a
    # natural, and a third card dealt anyway is a finding that does not count.
    natural = "punter" if p2 >= 8 else "banker"
    total = p2 if natural == "punter" else b2
    findings: tuple[Finding, ...] = ()
    if len(p) == 3:
        findings += (_after_natural("punter", natural, p[2], total),)
    if len(b) == 3:
        findings += (_after_natural("banker", natural, b[2], total),)
    outcome = _BANKER if b2 > p2 else _PUNTER if p2 > b2 else _TIE
    return Verdict(p, b, p2, b2, outcome, natural, None, None, None, version, findings)


def _after_natural(side: str, natural: str, card: str, total: int) -> Finding:
    return Finding.create(
        "draw_after_natural",
        side=side,
        message=(
            f"{side.capitalize()} was dealt a third card ({card}) after the "
            f"{natural}'s natural {total}: it does not count."
        ),
        natural=natural,
        card=card,
    )


_FALSE_DRAWS: dict[tuple[str, int, int, int | None, bool], Finding] = {}


def _false_draw(
    side: str, p2: int, b2: int, third: int | None, required_draw: bool
) -> Finding:
    """The false_draw finding; totals are the two-card totals the rule was read on.

    Findings are immutable and depend only on these five values, so each is
    built once and shared.
    """
    key = (side, p2, b2, third, required_draw)
    found = _FALSE_DRAWS.get(key)
    if found is None:
        found = _FALSE_DRAWS.setdefault(key, _build_false_draw(*key))
    return found


def _build_false_draw(
    side: str, p2: int, b2: int, third: int | None, required_draw: bool
) -> Finding:
    required, actual = ("draw", "stand") if required_draw else ("stand", "draw")
    did = "stood" if required_draw else "drew"
    needs = "a draw" if required_draw else "standing"
    if side == "punter":
        message = f"Punter {did} on {p2}: the rule requires {needs}."
    else:
        against = "with the punter standing" if third is None else f"against a {third}"
        message = f"Banker {did} on {b2} {against}: the tableau requires {needs}."
    return Finding.create(
        "false_draw",
        side=side,
        message=message,
        punter_total=p2,
        banker_total=b2,
        punter_third=third,
        required=required,
        actual=actual,
    )
