"""Services write; selectors read. Everything that changes the floor is here."""

from .coups import RecordResult, StakeInput, coup_record
from .floor import (
    banker_turn_open,
    banker_turn_pass,
    gaming_day_for,
    house_rules_change,
    next_seat,
    passed_bank_offer,
    session_close,
    session_open,
    shoe_close,
    shoe_open,
    table_create,
)

__all__ = [
    "RecordResult",
    "StakeInput",
    "banker_turn_open",
    "banker_turn_pass",
    "coup_record",
    "gaming_day_for",
    "house_rules_change",
    "next_seat",
    "passed_bank_offer",
    "session_close",
    "session_open",
    "shoe_close",
    "shoe_open",
    "table_create",
]
