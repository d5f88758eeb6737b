"""The Celery app for test_worker_lost.py: casino's own app, plus a test-only
hold, so that a test can SIGKILL the process running a task in the middle of
it, every time (no timing guesses). Production code has no such hook.

Run as `celery -A tests.reports.worker_hold worker` with REPORTS_TEST_HOLD set
to a folder. In each pool process:

- a report build writes its progress every 20 rows (not 5000), and the first
  attempt of job N, at its first progress step (its job row says `running`,
  20 rows, a part of the file written), creates `report-N` in the folder with
  its PID and waits there;
- the first attempt of a re-audit chunk of run N, once its coups are judged
  (inside the chunk's transaction, before it writes), creates `reaudit-N`
  likewise and waits.

The file exists once: the delivery that follows the kill runs through. The
held process goes on when the test creates `<name>.release` (or after
HOLD_SECONDS), if it was not killed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery.signals import worker_process_init

from casino.celery import app

__all__ = ["app"]
HOLD_SECONDS = 120  # the test kills or releases the process long before


def hold(name: str) -> None:
    folder = os.environ.get("REPORTS_TEST_HOLD")
    if not folder:
        return
    path = Path(folder) / name
    if path.exists():
        return  # held once already: this is the delivery after the kill
    tmp = path.with_name(f".{name}.{os.getpid()}")
    tmp.write_text(str(os.getpid()))
    try:
        os.link(tmp, path)  # atomic, and fails if another process won
    except FileExistsError:
        return
    finally:
        tmp.unlink()
    release = path.with_name(f"{name}.release")
    deadline = time.monotonic() + HOLD_SECONDS
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


@worker_process_init.connect
def _install(**kwargs) -> None:
    if not os.environ.get("REPORTS_TEST_HOLD"):
        return
    from audit.reports import reaudit, services, sheets

    sheets.PROGRESS_EVERY = 20
    progress, compare = services.report_progress, reaudit._compare

    def held_progress(job_id, **kw):
        progress(job_id, **kw)
        hold(f"report-{job_id}")

    def held_compare(run, *args):
        hold(f"reaudit-{run.pk}")
        return compare(run, *args)

    services.report_progress = held_progress
    reaudit._compare = held_compare
