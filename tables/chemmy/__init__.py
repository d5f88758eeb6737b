"""Chemin de fer rules engine: pure Python, standard library only, no Django.

Its reference is docs/rules.md, the project's rule book (the code follows it);
each module's docstring names the section it implements. House rules (decks,
commission rate and unit, minimum banco, tableau version) are arguments, never
constants buried here.

- ``cards``: card codes, points, parsing (CoupError names the broken field)
- ``tableau``: the punter's rule and the banker's drawing table, as versioned data
- ``engine``: ``evaluate(punter, banker)`` -> Verdict (totals, outcome, findings)
- ``stakes``: announcements, coverage, garage, the punter-hand holder
- ``settlement``: commission, carry-forward, the banker turn's ledger
- ``shoe``: the seven-card rule and card counts
- ``house``: the house-rule variants (rounding mode, tie, cover, maximum bank,
  prescribed choices in the optional cells) and the ``house_choice`` finding
"""

from .cards import (
    ALL_CODES,
    POINTS,
    RANKS,
    SUITS,
    CoupError,
    hand_total,
    parse_card,
    parse_hand,
    point,
)
from .engine import Outcome, Verdict, evaluate
from .findings import FINDING_SEVERITY, Finding
from .house import (
    Choice,
    Cover,
    Prescriptions,
    Rounding,
    TieRule,
    cell_key,
    house_findings,
    rounding_mode,
)
from .settlement import (
    DEFAULT_COMMISSION_RATE,
    DEFAULT_COMMISSION_UNIT,
    Settlement,
    TurnLedger,
    bank_mismatch_finding,
    cagnotte_variance_finding,
    round_money,
    settle,
    turn_ledger,
)
from .shoe import (
    DEFAULT_DECKS,
    MIN_CARDS_TO_DEAL,
    cards_left,
    shoe_count_finding,
    shoe_findings,
)
from .stakes import (
    Announcement,
    Coverage,
    CoveredStake,
    StakeIn,
    cover_stakes,
    money,
    seat_rotation,
)
from .tableau import (
    PUNTO_BANCO_TABLEAU,
    STANDARD_TABLEAU,
    Action,
    Tableau,
    punter_action,
)

__all__ = [
    "ALL_CODES",
    "DEFAULT_COMMISSION_RATE",
    "DEFAULT_COMMISSION_UNIT",
    "DEFAULT_DECKS",
    "FINDING_SEVERITY",
    "MIN_CARDS_TO_DEAL",
    "POINTS",
    "PUNTO_BANCO_TABLEAU",
    "RANKS",
    "STANDARD_TABLEAU",
    "SUITS",
    "Action",
    "Announcement",
    "Choice",
    "Cover",
    "Prescriptions",
    "Rounding",
    "TieRule",
    "cell_key",
    "house_findings",
    "rounding_mode",
    "CoupError",
    "Coverage",
    "CoveredStake",
    "Finding",
    "Outcome",
    "Settlement",
    "StakeIn",
    "Tableau",
    "TurnLedger",
    "Verdict",
    "bank_mismatch_finding",
    "cagnotte_variance_finding",
    "cards_left",
    "cover_stakes",
    "evaluate",
    "hand_total",
    "money",
    "parse_card",
    "parse_hand",
    "point",
    "punter_action",
    "round_money",
    "seat_rotation",
    "settle",
    "shoe_count_finding",
    "shoe_findings",
    "turn_ledger",
]
