"""Fixtures for the surveillance pipeline's tests: simulated nights (the
reports' helpers), one croupier who breaks the rules far more than the floor,
eager Celery unless a test runs a real worker (the reports' fixtures)."""

from __future__ import annotations

import pytest

from tests.reports.conftest import (  # noqa: F401 (fixtures)
    DAY1,
    DAY2,
    _reports_env,
    beat_rows,
    close_sessions,
    play,
    start_worker,
    wait_for,
    worker,
)


@pytest.fixture
def floor_night(croupier, croupier2):
    """Gaming day DAY1: two honest tables dealt by `croupier`, one table
    dealt by `croupier2`, who false-draws on a quarter of the forced cells."""
    honest = play(croupier, DAY1, tables=2, shoes=2, seed=11, rate=0.0,
                  prefix="Honest")
    bad = play(croupier2, DAY1, tables=1, shoes=2, seed=12, rate=0.25,
               prefix="Bad")
    return {"honest": honest, "bad": bad, "culprit": croupier2}
