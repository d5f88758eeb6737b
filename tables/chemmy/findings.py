"""Findings: what the audit records for a pit boss (docs/rules.md,
"Findings"). A finding never voids a coup."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, NoReturn

__all__ = ["FINDING_SEVERITY", "Finding", "FrozenDict"]

# docs/rules.md, "Findings": code -> severity (ledger_mismatch is the
# audit's own, raised by verify_ledger, not by the engine).
FINDING_SEVERITY: Final[Mapping[str, str]] = MappingProxyType(
    {
        "false_draw": "warning",
        "house_choice": "warning",
        "draw_after_natural": "warning",
        "deal_below_seven": "warning",
        "card_count_exceeded": "critical",
        "shoe_count": "critical",
        "bank_mismatch": "critical",
        "cagnotte_variance": "critical",
    }
)
SIDES: Final = ("punter", "banker", None)
_RESERVED: Final = frozenset({"code", "severity", "side", "message"})


class FrozenDict(dict[str, object]):
    """A dict that refuses changes: a finding's detail.

    Still a dict, so ``json.dumps`` and a Django JSONField take it as it is;
    read-only, so one Finding can be shared between verdicts.
    """

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a finding's detail is read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, object]]]:
        # pickle and copy would otherwise rebuild it item by item via __setitem__
        return (type(self), (dict(self),))


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
                f"severity: {self.code} is {expected!r} (docs/rules.md), "
                f"not {self.severity!r}"
            )
        if self.side not in SIDES:
            raise ValueError(
                f"side: must be 'punter', 'banker' or None, not {self.side!r}"
            )
        clash = _RESERVED.intersection(self.detail)
        if clash:
            raise ValueError(f"detail: reserved key(s) {', '.join(sorted(clash))}")
        if type(self.detail) is not FrozenDict:
            object.__setattr__(self, "detail", FrozenDict(self.detail))

    @classmethod
    def create(
        cls, code: str, *, side: str | None, message: str, **detail: object
    ) -> Finding:
        """A finding with the severity docs/rules.md gives its code."""
        return cls(code, FINDING_SEVERITY.get(code, ""), side, detail, message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "side": self.side,
            **self.detail,
            "message": self.message,
        }
