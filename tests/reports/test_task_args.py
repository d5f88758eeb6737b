"""What a task message may ask (issue 33 item 2), without a broker: each task
called as a worker would call it, with the arguments a forged message could
carry. Anything outside an id or a fixed set is refused with a warning and
does nothing (tests/reports/test_forged_messages.py does it on a real worker
through Redis)."""

from __future__ import annotations

import logging

import pytest

from .conftest import DAY1, play

pytestmark = pytest.mark.django_db

FORGED = "FORGED via Redis: key rotation"


@pytest.mark.parametrize("name, args, kwargs", [
    ("trail.anchor", [FORGED], {}),
    ("trail.anchor", [], {"reason": FORGED}),
    ("trail.anchor", [], {"reason": ["interval"]}),
    ("trail.checkpoint", [FORGED], {}),
    ("trail.witnesses", [], {"size": 1}),
    ("reports.nightly", [], {"cutoff_hour": FORGED}),
    ("reports.nightly", [], {"cutoff_hour": 24}),
    ("reports.nightly", [], {"cutoff_hour": 6, "format": "zip"}),
    ("reports.gaming_day_close", [], {"format": "../x"}),
    ("reports.build", ["7"], {}),
    ("reports.build", [True], {}),
    ("reports.reaudit_start", [-1], {}),
    ("reports.reaudit_chunk", [1, "0"], {}),
    ("reports.reaudit_finish", [None], {}),
    ("audit.surveillance_run", [1.5], {}),
    ("audit.surveillance_live", ["7"], {}),
    ("audit.surveillance_live", [], {"shoe_id": True}),
    ("audit.verify_ledger", [], {"day": FORGED}),
    ("audit.verify_ledger", [], {"cutoff_hour": "6"}),
])
def test_a_message_outside_its_set_does_nothing(name, args, kwargs, caplog):
    from casino.celery import app
    from casino.celery import by_name as _load  # noqa: F401 (tasks registered)
    from casino.models import AnchorRecord, ChangeLog

    app.loader.import_default_modules()
    before = ChangeLog.objects.count()
    logger = logging.getLogger("casino.tasks")
    logger.addHandler(caplog.handler)  # whatever the logging setup propagates
    try:
        out = app.tasks[name](*args, **kwargs)
    finally:
        logger.removeHandler(caplog.handler)
    assert "refused" in out
    assert f"task {name} refused" in caplog.text
    assert ChangeLog.objects.count() == before
    assert not AnchorRecord.objects.exists()


def test_beats_anchor_reason_runs(croupier, table):
    from casino.celery import app
    from casino.models import AnchorRecord

    app.loader.import_default_modules()
    assert isinstance(app.tasks["trail.anchor"](reason="interval"), int)
    assert list(AnchorRecord.objects.values_list("reason", flat=True)) == ["interval"]


def test_a_reaudit_finished_before_its_chunks_ran_goes_on(croupier, manager, caplog,
                                                          monkeypatch):
    """A forged reaudit_finish while the chord has not run: the run is left
    as it is (its chord finishes it), not failed."""
    from audit.reports.reaudit import reaudit_finish, reaudit_request

    play(croupier, DAY1, tables=1, shoes=1, seed=3)
    monkeypatch.setattr("audit.reports.reaudit.reaudit_dispatch", lambda run: False)
    run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY1)  # not sent
    assert run.chunks_total >= 1
    logger = logging.getLogger("audit.reports.reaudit")
    logger.addHandler(caplog.handler)
    try:
        assert reaudit_finish(run_id=run.pk).status == "queued"
    finally:
        logger.removeHandler(caplog.handler)
    assert "left running" in caplog.text
