"""Findings: what the audit records for a pit boss (RULES.md, "Findings the audit
produces"). A finding never voids a coup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

__all__ = ["FINDING_SEVERITY", "Finding"]

# RULES.md's table: code -> severity.
FINDING_SEVERITY: Final[Mapping[str, str]] = MappingProxyType(
    {
        "false_draw": "warning",
        "draw_after_natural": "warning",
        "deal_below_seven": "warning",
        "card_count_exceeded": "critical",
        "bank_mismatch": "critical",
        "cagnotte_variance": "critical",
    }
)
SIDES: Final = ("punter", "banker", None)
_RESERVED: Final = frozenset({"code", "severity", "side", "message"})


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str
    side: str | None
    detail: Mapping[str, object] = field(hash=False)
    message: str

    def __post_init__(self) -> None:
        expected = FINDING_SEVERITY.get(self.code)
        if expected is None:
            raise ValueError(f"code: unknown finding code {self.code!r}")
        if self.severity != expected:
            raise ValueError(
                f"severity: {self.code} is {expected!r} (RULES.md), "
                f"not {self.severity!r}"
            )
        if self.side not in SIDES:
            raise ValueError(
                f"side: must be 'punter', 'banker' or None, not {self.side!r}"
            )
        clash = _RESERVED.intersection(self.detail)
        if clash:
            raise ValueError(f"detail: reserved key(s) {', '.join(sorted(clash))}")
        if not isinstance(self.detail, MappingProxyType):
            # Read-only, so one Finding can be shared between verdicts.
            object.__setattr__(self, "detail", MappingProxyType(dict(self.detail)))

    @classmethod
    def create(
        cls, code: str, *, side: str | None, message: str, **detail: object
    ) -> Finding:
        """A finding with the severity RULES.md gives its code."""
        return cls(code, FINDING_SEVERITY.get(code, ""), side, detail, message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "side": self.side,
            **self.detail,
            "message": self.message,
        }
