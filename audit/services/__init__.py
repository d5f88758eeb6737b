"""Services write: flags and decisions, corrections as reviewed, the cagnotte."""

from .cagnotte import (
    cagnotte_attest,
    cagnotte_count,
    cagnotte_recheck,
    latest_count,
    session_commission,
    session_locked,
)
from .flags import (
    coup_correct_reviewed,
    finding_key,
    flag_confirm,
    flag_dismiss,
    flags_sync,
)
from .four_eyes import decision_barred, may_decide

__all__ = [
    "cagnotte_attest",
    "cagnotte_count",
    "cagnotte_recheck",
    "coup_correct_reviewed",
    "decision_barred",
    "finding_key",
    "flag_confirm",
    "flag_dismiss",
    "flags_sync",
    "latest_count",
    "may_decide",
    "session_commission",
    "session_locked",
]
