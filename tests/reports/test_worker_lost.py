"""A Celery worker killed in the middle of a report or a re-audit: the task is
delivered again (acks_late) and completes, and nothing is written twice.

Real workers on Redis and the PostgreSQL test database (conftest.py's
`start_worker`), running `tests.reports.worker_hold`: casino's app with a
test-only hold that stops the first attempt of a task midway and writes its
PID to a file, so the test kills exactly that process, every time. Two ways to
die:

- the pool child running the task is SIGKILLed: the worker sees it lost
  (WorkerLostError) and, with reject_on_worker_lost, puts the message back on
  the queue at once; a fresh child runs it;
- the whole worker (main process and pool) is SIGKILLed: the message stays
  unacked in Redis; a new worker started after CELERY_VISIBILITY_TIMEOUT
  (3 s here, 1 hour by default) puts it back and runs it.

And the case that timeout is there to avoid, a task given to a second worker
while the first still runs it: only one of them publishes.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import seed_tableau

from .conftest import DAY1, DAY2, play, wait_for

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]
APP = "tests.reports.worker_hold"
VISIBILITY = 3  # seconds, for the whole-worker case


@pytest.fixture(autouse=True)
def _rows(_migration_rows):
    pass


@pytest.fixture
def hold_dir(tmp_path):
    folder = tmp_path / "hold"
    folder.mkdir()
    return folder


def held_pid(hold_dir: Path, name: str, worker) -> int:
    """The PID of the pool process holding at `name`; checked to be a child
    of `worker` (the test kills nothing it did not start)."""
    path = hold_dir / name
    wait_for(lambda: path.exists() or worker.proc.poll() is not None,
             lambda ok: ok, timeout=60)
    assert worker.proc.poll() is None, worker.text()[-3000:]
    pid = int(path.read_text())
    stat = Path(f"/proc/{pid}/stat").read_text()
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    assert ppid == worker.pid, (pid, ppid, worker.pid)
    return pid


def received(worker, task: str) -> Counter:
    """How many times each task id of `task` reached this worker."""
    return Counter(re.findall(rf"Task {re.escape(task)}\[([0-9a-f-]+)\] received",
                              worker.text()))


def request_coups_csv(api) -> dict:
    r = api.post("/api/v1/reports/", {"kind": "coups", "format": "csv",
                                      "from_day": str(DAY1), "to_day": str(DAY1)},
                 format="json")
    assert r.status_code == 202, r.content
    return r.data


def wait_done(api, data, worker) -> dict:
    job, _ = wait_for(lambda: api.get(data["status_url"]).data,
                      lambda j: j["status"] in ("done", "failed"), timeout=60)
    assert job["status"] == "done", (job["error"], worker.text()[-3000:])
    return job


def assert_built_once(job_id: int, download_url: str, api, settings):
    """One file, complete and matching the job row; one "built" trail row."""
    from audit.reports.models import ReportJob
    from casino.models import ChangeLog
    from tables.models import Coup

    job = ReportJob.objects.get(pk=job_id)
    assert (job.status, job.percent, job.attempts) == ("done", 100, 2)
    coups = Coup.objects.filter(gaming_day=DAY1).count()  # one revision each
    assert job.rows == job.rows_expected == coups > 20
    folder = Path(settings.MEDIA_ROOT) / "reports"
    assert sorted(p.name for p in folder.iterdir()) == [job.filename]  # no .tmp
    path = folder / job.filename
    body = path.read_bytes()
    assert job.file == f"reports/{job.filename}" and job.file_size == len(body)
    assert job.sha256 == hashlib.sha256(body).hexdigest()
    served = b"".join(api.get(download_url).streaming_content)
    assert served == body
    lines = list(csv.reader(body.decode().splitlines()))
    header = lines.index([]) + 1  # after the stamp lines
    assert lines[header][:5] == ["gaming_day", "table", "session", "shoe", "seq"]
    rows = lines[header + 1:]
    assert len(rows) == coups  # every coup once: none lost, none twice
    assert len({(r[1], r[3], r[4]) for r in rows}) == coups  # table, shoe, seq
    trail = ChangeLog.objects.filter(object_type="reports.reportjob",
                                     object_id=str(job.pk))
    assert Counter(trail.values_list("action", flat=True)) == {
        "reports.report.requested": 1, "reports.report.started": 2,
        "reports.report.built": 1}  # each attempt's start is sealed


def test_report_pool_child_killed_mid_build(start_worker, hold_dir, croupier,
                                            manager, as_user, settings):
    from audit.reports.models import ReportJob

    play(croupier, DAY1, tables=2, shoes=1, seed=61)
    worker = start_worker(app=APP, env={"REPORTS_TEST_HOLD": str(hold_dir)})
    api = as_user(manager)
    data = request_coups_csv(api)
    pid = held_pid(hold_dir, f"report-{data['id']}", worker)
    job = ReportJob.objects.get(pk=data["id"])
    assert (job.status, job.attempts, job.rows) == ("running", 1, 20)
    assert 0 < job.percent < 100
    folder = Path(settings.MEDIA_ROOT) / "reports"
    assert [p.name for p in folder.iterdir()] == [
        f".{job.filename}.1-{pid}.tmp"]  # being written; not in place yet

    os.kill(pid, signal.SIGKILL)  # the pool child, mid-build
    done = wait_done(api, data, worker)
    assert_built_once(data["id"], done["download_url"], api, settings)
    log = worker.text()
    assert "WorkerLostError" in log and "signal 9 (SIGKILL)" in log
    assert list(received(worker, "reports.build").values()) == [2]  # redelivered
    assert worker.proc.poll() is None  # the worker itself lived on


def test_report_whole_worker_killed_then_a_new_worker(
        start_worker, hold_dir, croupier, manager, as_user, settings):
    from audit.reports.models import ReportJob

    play(croupier, DAY1, tables=2, shoes=1, seed=62)
    env = {"REPORTS_TEST_HOLD": str(hold_dir),
           "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY)}
    first = start_worker(app=APP, env=env)
    api = as_user(manager)
    data = request_coups_csv(api)
    held_pid(hold_dir, f"report-{data['id']}", first)
    first.kill()  # main process and pool at once: nobody is left to requeue
    job = ReportJob.objects.get(pk=data["id"])
    assert (job.status, job.attempts) == ("running", 1)  # stranded...
    folder = Path(settings.MEDIA_ROOT) / "reports"
    assert [p.suffix for p in folder.iterdir()] == [".tmp"]  # ...half a file left
    # The message is unacked in Redis; a worker starting once it is older than
    # the visibility timeout puts it back on the queue.
    time.sleep(VISIBILITY + 0.5)
    second = start_worker(app=APP, env=env)
    done = wait_done(api, data, second)
    assert_built_once(data["id"], done["download_url"], api, settings)
    task = ReportJob.objects.get(pk=data["id"]).task_id
    assert received(first, "reports.build") == {task: 1}
    assert received(second, "reports.build") == {task: 1}


def test_report_delivered_twice_at_once_publishes_once(
        start_worker, hold_dir, croupier, manager, as_user, settings):
    """A visibility timeout shorter than a build (misconfigured): a second
    worker is given the task while the first still builds it. The latest
    attempt publishes; the older one, when it ends, drops its work."""
    from audit.reports.models import ReportJob

    play(croupier, DAY1, tables=2, shoes=1, seed=63)
    env = {"REPORTS_TEST_HOLD": str(hold_dir),
           "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY)}
    first = start_worker(app=APP, env=env)
    api = as_user(manager)
    data = request_coups_csv(api)
    held_pid(hold_dir, f"report-{data['id']}", first)
    time.sleep(VISIBILITY + 0.5)
    # Starting, the second worker puts the message back on the queue (it is
    # older than the timeout); one of the two workers' free children takes it.
    second = start_worker(app=APP, env=env)
    done = wait_done(api, data, second)
    (hold_dir / f"report-{data['id']}.release").touch()  # the first one goes on
    task = ReportJob.objects.get(pk=data["id"]).task_id

    def logs():
        return first.text() + second.text()

    wait_for(lambda: logs().count(f"Task reports.build[{task}] succeeded"),
             lambda n: n == 2, timeout=60)
    assert f"report job {data['id']}: attempt 1 superseded" in logs()
    assert logs().count(f"Task reports.build[{task}] received") == 2
    assert_built_once(data["id"], done["download_url"], api, settings)


def test_reaudit_pool_child_killed_mid_chunk(start_worker, hold_dir, croupier,
                                             manager):
    from audit.reports.models import ReauditChunk, ReauditFinding, ReauditRun
    from audit.reports.reaudit import reaudit_request
    from casino.models import ChangeLog
    from tables.models import Coup

    from .test_reaudit import VARIANT, expected_changes, variant_rows

    seed_tableau(VARIANT, variant_rows(),
                                  description="test variant")
    play(croupier, DAY1, tables=2, shoes=1, seed=21, rate=0.1)
    play(croupier, DAY2, tables=2, shoes=1, seed=21, rate=0.1)
    worker = start_worker(app=APP, env={"REPORTS_TEST_HOLD": str(hold_dir)})
    run = reaudit_request(user=manager, from_day=DAY1, to_day=DAY2,
                          tableau_version=VARIANT, chunk_size=50)
    pid = held_pid(hold_dir, f"reaudit-{run.pk}", worker)
    # The other child does every other chunk; the chord waits for the held one.
    run, _ = wait_for(lambda: ReauditRun.objects.get(pk=run.pk),
                      lambda r: r.chunks_done == r.chunks_total - 1, timeout=60)
    assert run.status == "running" and run.chunks_total >= 4
    assert ReauditChunk.objects.filter(run=run, done_at=None).count() == 1
    # what the held chunk wrote so far is in its open transaction, unseen
    assert ReauditFinding.objects.filter(run=run).count() == (
        run.findings_new + run.findings_cleared)

    os.kill(pid, signal.SIGKILL)  # the pool child, inside the chunk's transaction
    run, _ = wait_for(lambda: ReauditRun.objects.get(pk=run.pk),
                      lambda r: r.status in ("done", "failed"), timeout=60)
    assert run.status == "done", (run.error, worker.text()[-3000:])
    assert run.chunks_done == run.chunks_total
    assert run.coups_checked == run.coups_expected == Coup.objects.count()
    new, kept, cleared = expected_changes(VARIANT)  # independent of the run
    assert new > 0 and cleared > 0
    assert (run.findings_new, run.findings - run.findings_new,
            run.findings_cleared) == (new, kept, cleared)
    rows = ReauditFinding.objects.filter(run=run)
    # only what changed is written; the kept findings are counted
    assert Counter(rows.values_list("change", flat=True)) == {
        "new": new, "cleared": cleared}
    assert rows.values("coup", "code", "side").distinct().count() == rows.count()
    trail = Counter(ChangeLog.objects.filter(object_type="reports.reauditrun",
                                             object_id=str(run.pk))
                    .values_list("action", flat=True))
    assert trail == {"reports.reaudit.requested": 1, "reports.reaudit.done": 1,
                     "reports.reaudit.chunk_done": run.chunks_total}
    chunks = ChangeLog.objects.filter(action="reports.reaudit.chunk_done",
                                      object_id=str(run.pk))
    assert sorted(e.new["chunk"] for e in chunks) == list(range(run.chunks_total))
    log = worker.text()
    assert "WorkerLostError" in log
    counts = received(worker, "reports.reaudit_chunk")
    assert len(counts) == run.chunks_total
    assert sorted(counts.values()) == [1] * (run.chunks_total - 1) + [2]
    assert list(received(worker, "reports.reaudit_finish").values()) == [1]
