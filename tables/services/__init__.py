"""Services write; selectors read. Everything that changes the floor is here."""

from .access import croupier_check
from .corrections import (
    CorrectionPlan,
    CorrectionResult,
    correction_barred,
    coup_correct,
    coup_correct_preview,
)
from .coups import RecordResult, StakeInput, coup_accept, coup_record
from .floor import (
    gaming_day_for,
    house_rules_change,
    next_seat,
    session_close,
    session_croupier_change,
    session_open,
    shoe_close,
    shoe_open,
    table_create,
)
from .ledger import tied_after
from .play import CoupEvent, PlayResult, ShoeEvent, TurnOpen, TurnPass, shoe_play
from .turns import banker_turn_open, banker_turn_pass, passed_bank_offer

__all__ = [
    "CorrectionPlan",
    "CorrectionResult",
    "CoupEvent",
    "PlayResult",
    "ShoeEvent",
    "TurnOpen",
    "TurnPass",
    "coup_correct",
    "coup_correct_preview",
    "correction_barred",
    "croupier_check",
    "RecordResult",
    "StakeInput",
    "banker_turn_open",
    "banker_turn_pass",
    "coup_accept",
    "coup_record",
    "gaming_day_for",
    "house_rules_change",
    "next_seat",
    "passed_bank_offer",
    "session_close",
    "session_croupier_change",
    "session_open",
    "shoe_close",
    "shoe_open",
    "shoe_play",
    "table_create",
    "tied_after",
]
