"""Helpers shared by the hostile-input tests."""

from __future__ import annotations

from collections import Counter


def row_counts() -> dict[str, int]:
    """What a refused request must not have written."""
    from casino.models import ChangeLog
    from tables.models import Coup, Finding, Stake

    return {m.__name__: m.objects.count() for m in (Coup, Stake, Finding, ChangeLog)}


# How many hostile requests this run sent, by source; printed at the end of
# the run (tests/hostile/conftest.py) as the "inputs tried" figure.
INPUTS: Counter[str] = Counter()
