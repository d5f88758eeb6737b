"""What another app writes in a new coup's own transaction.

tables never imports audit (DESIGN.md: audit reads tables). A coup's findings
are audit's to review, and a review flag must start with its coup — in the
coup's transaction, at the coup's time — not when somebody first opens the
floor. So audit registers here, at start-up (audit.apps), what it writes with
the findings of new coups, and both write paths call it:

- the ORM path (ledger_store.ledger_write: SQLite, PostgreSQL when the fast
  path steps aside, shoe_play's batches) calls `findings_written` once the
  findings are inserted (they have their ids);
- PostgreSQL's fast path (ledger_pg.coup_write) puts `findings_statements` in
  its batch, after the findings' INSERT: the coup stays one round trip for
  its rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..models import Coup, Finding

Statement = tuple[str, list]


class FindingsWriter(Protocol):
    def written(self, coups: Sequence[tuple[Coup, Sequence[Finding]]]) -> None:
        """Write, through the ORM, what goes with these new coups' findings
        (inserted, with ids)."""

    def statements(self, coup: Coup, findings: Sequence[Finding]) -> list[Statement]:
        """The same as SQL statements, to run right after the INSERT of the
        findings of `coup` (whose id is known; the findings' ids are not)."""


_writers: list[FindingsWriter] = []


def register(writer: FindingsWriter) -> None:
    if writer not in _writers:
        _writers.append(writer)


def findings_written(coups: Sequence[tuple[Coup, Sequence[Finding]]]) -> None:
    coups = [(coup, found) for coup, found in coups if found]
    if coups:
        for writer in _writers:
            writer.written(coups)


def findings_statements(coup: Coup, findings: Sequence[Finding]) -> list[Statement]:
    if not findings:
        return []
    return [s for writer in _writers for s in writer.statements(coup, findings)]
