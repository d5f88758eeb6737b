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

A shoe's own findings (shoe_count at its close) go the same way through
`register_shoe` / `shoe_findings_written`.

What another app does once a shoe's close has committed (the live
surveillance's look) is registered with `register_shoe_closed`: the close
calls `shoe_closed` in its transaction, and each callback runs after the
commit, never in it; its failure (a broker down) is logged, never the
close's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from django.db import transaction

if TYPE_CHECKING:
    from ..models import Coup, Finding, Shoe, ShoeFinding

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


# A shoe's own findings (shoe_count, written by floor.shoe_close): what goes
# with them, through the ORM, in the close's transaction.
class ShoeFindingsWriter(Protocol):
    def shoe_written(
        self, shoe: Shoe, findings: Sequence[ShoeFinding], *, user
    ) -> None:
        """Write what goes with these new findings of a shoe (inserted)."""


_shoe_writers: list[ShoeFindingsWriter] = []


def register_shoe(writer: ShoeFindingsWriter) -> None:
    if writer not in _shoe_writers:
        _shoe_writers.append(writer)


def shoe_findings_written(shoe: Shoe, findings: Sequence[ShoeFinding], *, user) -> None:
    if findings:
        for writer in _shoe_writers:
            writer.shoe_written(shoe, findings, user=user)


# After a shoe's close has committed (the live surveillance: audit.apps).
_shoe_closed: list[Callable[[int], object]] = []
log = logging.getLogger(__name__)


def register_shoe_closed(callback: Callable[[int], object]) -> None:
    if callback not in _shoe_closed:
        _shoe_closed.append(callback)


def _after_close(callback: Callable[[int], object], shoe_id: int) -> None:
    try:
        callback(shoe_id)
    except Exception:  # the close is committed: nothing of it may fail now
        log.exception("after the close of shoe %s", shoe_id)


def shoe_closed(shoe_id: int) -> None:
    """In the close's transaction: each registered callback runs once it
    commits (not at all if it rolls back)."""
    for callback in _shoe_closed:
        transaction.on_commit(partial(_after_close, callback, shoe_id))
