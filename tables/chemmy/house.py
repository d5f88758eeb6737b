"""The house-rule variants the engine plays (docs/rules.md, "House rules").

Each is a value passed in, never a constant: the rounding mode of the levy, what
a tie does to the stakes, how a stake larger than what is left of the bank is
covered, the maximum bank, and the choices a house prescribes in the optional
cells (the punter's 5, the banker's ``O`` cells). ``house_findings`` judges a
verdict against those prescriptions; it runs after ``evaluate`` so that the
engine's hot path stays the same for the houses that prescribe nothing.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from .cards import POINTS
from .engine import Verdict
from .findings import Finding
from .tableau import BANKER_TOTALS, Action, Tableau

__all__ = [
    "Choice",
    "Cover",
    "Prescriptions",
    "Rounding",
    "TieRule",
    "cell_key",
    "house_findings",
    "rounding_mode",
]


class Rounding(StrEnum):
    """How the levy is rounded to the house's unit."""

    HALF_UP = "half_up"
    HALF_EVEN = "half_even"
    DOWN = "down"


_MODES: Final = MappingProxyType(
    {
        Rounding.HALF_UP: decimal.ROUND_HALF_UP,
        Rounding.HALF_EVEN: decimal.ROUND_HALF_EVEN,
        Rounding.DOWN: decimal.ROUND_DOWN,
    }
)


def rounding_mode(name: str) -> str:
    """The ``decimal`` rounding constant for a house's rounding mode name."""
    try:
        return _MODES[Rounding(name)]
    except ValueError:
        choices = ", ".join(r.value for r in Rounding)
        raise ValueError(
            f"commission_rounding: {name!r} is not one of {choices}"
        ) from None


class TieRule(StrEnum):
    """What a tie does to the stakes (the bank carried forward is C either way)."""

    STAY = "stay"
    RETURNED = "returned"


class Cover(StrEnum):
    """A stake larger than what is left of the bank: covered up to what is
    left (partial), or declined whole (all or nothing)."""

    PARTIAL = "partial"
    ALL_OR_NOTHING = "all_or_nothing"


class Choice(StrEnum):
    """An optional cell as the house plays it."""

    FREE = "free"
    DRAW = "draw"
    STAND = "stand"


def cell_key(banker_total: int, punter_third: int | None) -> str:
    """A banker's cell as the house rules name it: ``"3/9"`` (banker 3, punter's
    third card 9), ``"5/stood"``."""
    return f"{banker_total}/{'stood' if punter_third is None else punter_third}"


def _parse_cell(key: object) -> tuple[int, int | None]:
    if isinstance(key, str) and "/" in key:
        total, _, third = key.partition("/")
        if total.isdigit() and int(total) in BANKER_TOTALS:
            if third == "stood":
                return int(total), None
            if third.isdigit() and 0 <= int(third) <= 9:
                return int(total), int(third)
    raise ValueError(
        f"banker_prescriptions: {key!r} is not a cell (banker total 0-7 '/' the "
        "punter's third card 0-9 or 'stood', e.g. '3/9')"
    )


@dataclass(frozen=True)
class Prescriptions:
    """The choices a house prescribes in the optional cells. Free everywhere
    by default: no finding whichever way."""

    punter_five: Choice = Choice.FREE
    banker: Mapping[str, Choice] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "punter_five", Choice(self.punter_five))
        except ValueError:
            raise ValueError(
                f"punter_five: {self.punter_five!r} is not one of "
                + ", ".join(c.value for c in Choice)
            ) from None
        if not isinstance(self.banker, Mapping):
            raise ValueError(
                "banker_prescriptions: must be a mapping of cell to choice"
            )
        cells: dict[str, Choice] = {}
        for key, value in self.banker.items():
            _parse_cell(key)
            try:
                choice = Choice(value)
            except ValueError:
                raise ValueError(
                    f"banker_prescriptions[{key}]: {value!r} is not one of "
                    + ", ".join(c.value for c in Choice)
                ) from None
            if choice is not Choice.FREE:
                cells[key] = choice
        object.__setattr__(self, "banker", MappingProxyType(cells))

    @property
    def free(self) -> bool:
        return self.punter_five is Choice.FREE and not self.banker

    def check_against(self, tableau: Tableau) -> None:
        """A house may prescribe only a cell the tableau leaves optional."""
        for key in self.banker:
            total, third = _parse_cell(key)
            if tableau.banker_action(total, third) is not Action.OPTIONAL:
                raise ValueError(
                    f"banker_prescriptions[{key}]: not an optional cell of tableau "
                    f"{tableau.version} (it is "
                    f"{tableau.banker_action(total, third).value})"
                )

    def to_dict(self) -> dict[str, object]:
        return {
            "punter_five": self.punter_five.value,
            "banker": {k: v.value for k, v in sorted(self.banker.items())},
        }


def house_findings(
    verdict: Verdict, prescriptions: Prescriptions
) -> tuple[Finding, ...]:
    """``house_choice`` findings: an optional cell played against the house's
    prescription. Only a choice the verdict records as free is judged (a
    false draw or a natural is never also a house finding)."""
    if prescriptions.free:
        return ()
    found: list[Finding] = []
    p2 = (POINTS[verdict.punter[0]] + POINTS[verdict.punter[1]]) % 10
    b2 = (POINTS[verdict.banker[0]] + POINTS[verdict.banker[1]]) % 10
    wanted = prescriptions.punter_five
    if verdict.punter_choice is not None and wanted is not Choice.FREE:
        if verdict.punter_choice != wanted.value:
            found.append(_house_choice("punter", p2, b2, None, wanted, "punter_five"))
    if verdict.banker_choice is not None:
        key = cell_key(b2, verdict.punter_third)
        wanted = prescriptions.banker.get(key, Choice.FREE)
        if wanted is not Choice.FREE and verdict.banker_choice != wanted.value:
            found.append(
                _house_choice("banker", p2, b2, verdict.punter_third, wanted, key)
            )
    return tuple(found)


def _house_choice(
    side: str, p2: int, b2: int, third: int | None, wanted: Choice, rule: str
) -> Finding:
    actual = "stand" if wanted is Choice.DRAW else "draw"
    did = "stood" if actual == "stand" else "drew"
    needs = "a draw" if wanted is Choice.DRAW else "standing"
    if side == "punter":
        message = f"Punter {did} on {p2}: this house prescribes {needs}."
    else:
        against = "with the punter standing" if third is None else f"against a {third}"
        message = f"Banker {did} on {b2} {against}: this house prescribes {needs}."
    return Finding.create(
        "house_choice",
        side=side,
        message=message,
        punter_total=p2,
        banker_total=b2,
        punter_third=third,
        required=wanted.value,
        actual=actual,
        house_rule=rule,
    )
