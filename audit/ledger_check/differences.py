"""What verify_ledger reports: each stored value that differs from what the
cards, stakes and rules give (`Difference`), and the run's counts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date

# Differences kept (and flagged) in one run; past that the record is broken
# wholesale and the rest are only counted.
LIMIT = 10_000


def _show(value) -> str:
    if value is None:
        return "none"
    if value == "":
        return "(blank)"
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) or "none"
    return str(value)


@dataclass(frozen=True)
class Difference:
    """One stored value that is not what the cards, stakes and rules give."""

    text: str  # "coup 123 (shoe 4, seq 7, rev 1): commission stored 50.00, ..."
    subject: str
    field: str
    stored: str
    expected: str
    table_id: int | None = None
    session_id: int | None = None
    gaming_day: date | None = None
    shoe_id: int | None = None
    seq: int | None = None
    coup_id: int | None = None
    croupier_id: int | None = None

    def to_dict(self) -> dict:
        out = asdict(self)
        out["gaming_day"] = self.gaming_day and self.gaming_day.isoformat()
        return out


def diff(subject, name, stored, expected, verb="re-settled",
         **ctx) -> Difference:
    stored, expected = _show(stored), _show(expected)
    return Difference(f"{subject}: {name} stored {stored}, {verb} {expected}",
                      subject, name, stored, expected, **ctx)


@dataclass
class LedgerCheck:
    from_day: date | None
    to_day: date | None
    coups: int = 0
    turns: int = 0
    shoes: int = 0
    rollup_cells: int = 0
    sessions: int = 0
    differences: list[Difference] = field(default_factory=list)
    more: int = 0  # differences past LIMIT, counted only

    @property
    def ok(self) -> bool:
        return not self.differences

    def add(self, difference: Difference) -> None:
        if len(self.differences) < LIMIT:
            self.differences.append(difference)
        else:
            self.more += 1

    @property
    def summary(self) -> str:
        return (f"{self.coups} coups, {self.turns} turns, {self.rollup_cells} "
                f"rollup cells, {self.sessions} sessions")

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "from": self.from_day and self.from_day.isoformat(),
            "to": self.to_day and self.to_day.isoformat(),
            "coups": self.coups, "turns": self.turns, "shoes": self.shoes,
            "rollup_cells": self.rollup_cells, "sessions": self.sessions,
            "differences": [d.to_dict() for d in self.differences],
            "more": self.more,
        }


def dict_diff(stored: dict, expected: dict) -> tuple[dict, dict]:
    """Only the keys whose counts differ, both sides."""
    keys = {k for k in set(stored) | set(expected)
            if stored.get(k) != expected.get(k)}
    return ({k: stored.get(k, 0) for k in keys},
            {k: expected.get(k, 0) for k in keys})


def ranges(numbers) -> str:
    """1, 2, 3, 5 -> '1-3, 5'."""
    out, start, prev = [], None, None
    for n in numbers:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(out) or "none"
