"""The punter's rule and the banker's drawing table (docs/rules.md, "The punter's
rule" and "The banker's tableau").

The tableau is data, versioned: a table may carry a house variant, and every
verdict records the version it was checked against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "PUNTO_BANCO_TABLEAU",
    "STANDARD_TABLEAU",
    "Action",
    "Tableau",
    "punter_action",
]

BANKER_TOTALS: Final = range(8)  # 8 and 9 are naturals: the tableau never applies
COLUMNS: Final = 11  # index 0: the punter stood; 1 + v: punter's third card worth v


class Action(StrEnum):
    DRAW = "D"
    STAND = "S"
    OPTIONAL = "O"


_PUNTER_RULE: Final = (Action.DRAW,) * 5 + (Action.OPTIONAL,) + (Action.STAND,) * 2


def punter_action(total: int) -> Action:
    """The punter's rule on a two-card total 0..7: 0-4 draw, 5 optional, 6-7 stand."""
    if type(total) is not int or not 0 <= total <= 9:
        raise ValueError(f"punter total must be an integer 0..9, not {total!r}")
    if total >= 8:
        raise ValueError(f"{total} is a natural: the punter is never asked")
    return _PUNTER_RULE[total]


def column(punter_third: int | None) -> int:
    """Tableau column for the punter's third card point value (None: he stood)."""
    if punter_third is None:
        return 0
    if type(punter_third) is not int or not 0 <= punter_third <= 9:
        raise ValueError(
            f"punter's third card value must be 0..9 or None, not {punter_third!r}"
        )
    return 1 + punter_third


def _checked_rows(rows: object) -> dict[int, tuple[Action, ...]]:
    """Validate 8 rows (banker totals 0..7) of 11 cells; name the first problem."""
    if not isinstance(rows, Mapping):
        raise ValueError("rows: must be a mapping of banker total to 11 cells")
    out: dict[int, tuple[Action, ...]] = {}
    for key, cells in rows.items():
        total = _row_key(key)
        if total in out:
            raise ValueError(f"rows[{key!r}]: banker total {total} given twice")
        if not isinstance(cells, (list, tuple)) or len(cells) != COLUMNS:
            raise ValueError(
                f"rows[{key!r}]: must be a list of {COLUMNS} cells "
                "(stood, then third card 0..9)"
            )
        row = []
        for i, cell in enumerate(cells):
            try:
                row.append(Action(cell))
            except ValueError:
                raise ValueError(
                    f"rows[{key!r}][{i}]: {cell!r} is not one of D, S, O"
                ) from None
        out[total] = tuple(row)
    missing = [t for t in BANKER_TOTALS if t not in out]
    if missing:
        raise ValueError(
            "rows: missing banker total(s) " + ", ".join(str(t) for t in missing)
        )
    return {t: out[t] for t in BANKER_TOTALS}


def _row_key(key: object) -> int:
    # JSON object keys are strings; accept "3" and 3, nothing else.
    if isinstance(key, str) and key.isdigit() and key.isascii():
        total = int(key)
    elif type(key) is int:
        total = key
    else:
        raise ValueError(f"rows[{key!r}]: a row key is a banker total 0..7")
    if total not in BANKER_TOTALS:
        raise ValueError(f"rows[{key!r}]: banker total must be 0..7, not {total}")
    return total


@dataclass(frozen=True)
class Tableau:
    """A versioned banker's drawing table: ``rows[total][column]`` -> Action."""

    version: str
    rows: Mapping[int, tuple[Action, ...]] = field(hash=False)
    # rows flattened: cells[total * 11 + column], for the engine's hot path.
    cells: tuple[Action, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.version, str) or not self.version.strip():
            raise ValueError("version: a tableau needs a non-empty version")
        rows = _checked_rows(self.rows)
        object.__setattr__(self, "rows", MappingProxyType(rows))
        cells = tuple(a for t in BANKER_TOTALS for a in rows[t])
        object.__setattr__(self, "cells", cells)

    def banker_action(self, banker_total: int, punter_third: int | None) -> Action:
        """The banker's rule for his two-card total 0..7 and the punter's third
        card point value (None when the punter stood)."""
        if type(banker_total) is not int or banker_total not in BANKER_TOTALS:
            raise ValueError(
                "banker total must be 0..7 (8 and 9 are naturals), "
                f"not {banker_total!r}"
            )
        return self.cells[banker_total * COLUMNS + column(punter_third)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "rows": {str(t): [a.value for a in self.rows[t]] for t in BANKER_TOTALS},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Tableau:
        """Build from ``to_dict()`` output (e.g. JSON); ValueError names the problem."""
        if not isinstance(d, Mapping):
            raise ValueError("tableau: must be a mapping with 'version' and 'rows'")
        unknown = sorted(str(k) for k in d if k not in ("version", "rows"))
        if unknown:
            raise ValueError(f"tableau: unexpected key(s) {', '.join(unknown)}")
        for key in ("version", "rows"):
            if key not in d:
                raise ValueError(f"{key}: missing")
        return cls(version=d["version"], rows=d["rows"])


def _literal(version: str, table: Mapping[int, str]) -> Tableau:
    rows = {t: tuple(Action(cell) for cell in row) for t, row in table.items()}
    return Tableau(version=version, rows=rows)


# docs/rules.md, "The banker's tableau", cell for cell: stood, then the punter's
# third card 0 1 2 3 4 5 6 7 8 9.
STANDARD_TABLEAU: Final = _literal(
    "chemmy-standard-1",
    {
        0: "DDDDDDDDDDD",
        1: "DDDDDDDDDDD",
        2: "DDDDDDDDDDD",
        3: "DDDDDDDDDSO",
        4: "DSSDDDDDDSS",
        5: "DSSSSODDDSS",
        6: "SSSSSSSDDSS",
        7: "SSSSSSSSSSS",
    },
)

# The punto banco (baccarat) banker rule: no optional cell.
PUNTO_BANCO_TABLEAU: Final = _literal(
    "punto-banco-1",
    {
        0: "DDDDDDDDDDD",
        1: "DDDDDDDDDDD",
        2: "DDDDDDDDDDD",
        3: "DDDDDDDDDSD",
        4: "DSSDDDDDDSS",
        5: "DSSSSDDDDSS",
        6: "SSSSSSSDDSS",
        7: "SSSSSSSSSSS",
    },
)
