"""Two Celery queues (casino/settings.py, CLOCK_TASKS): the short tasks that
keep time on "clock", the long ones on "celery", so that report builds
never hold a checkpoint, an anchor or the live surveillance back. A worker
without -Q takes both; production runs one worker per queue
(deploy/systemd), and the health check names a queue no worker takes."""

from __future__ import annotations

import pytest

from .conftest import DAY1, play, wait_for

HEAVY = ("reports.build", "reports.reaudit_start", "reports.reaudit_chunk",
         "reports.reaudit_finish", "reports.nightly", "audit.surveillance_run",
         "audit.verify_ledger")


def test_each_task_has_its_queue(settings):
    from casino.celery import app

    app.loader.import_default_modules()
    ours = {n for n in app.tasks if not n.startswith("celery.")}
    assert set(settings.CLOCK_TASKS) | set(HEAVY) == ours  # none forgotten
    for name in ours:
        queue = app.amqp.router.route({}, name)["queue"].name
        assert queue == ("clock" if name in settings.CLOCK_TASKS else "celery"), name
    assert [q.name for q in settings.CELERY_TASK_QUEUES] == ["celery", "clock"]


@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_clock_runs_while_the_reports_wait(start_worker, croupier, manager,
                                               as_user, settings, _migration_rows):
    import re
    import time

    import redis

    from casino.celery import by_name, publish
    from casino.health import HEARTBEAT_PREFIX, health_run

    settings.WORKER_HEARTBEAT_SECONDS = 1
    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in client.scan_iter(f"{HEARTBEAT_PREFIX}*"):  # earlier tests' workers
        client.delete(key)
    play(croupier, DAY1, tables=1, shoes=1, seed=7, rate=0.0)
    clock = start_worker(env={"WORKER_HEARTBEAT_SECONDS": "1"}, args=("-Q", "clock"))
    api = as_user(manager)
    r = api.post("/api/v1/reports/", {"kind": "commission", "format": "csv",
                                      "from_day": str(DAY1), "to_day": str(DAY1),
                                      "group_by": "croupier"}, format="json")
    assert r.status_code == 202, r.content
    publish(by_name("audit.surveillance_live"))
    wait_for(clock.text,
             lambda t: re.search(r"audit\.surveillance_live\[[^]]+\] succeeded", t))
    time.sleep(2)  # the report's message had every chance to be taken
    assert api.get(r.data["status_url"]).data["status"] == "queued"
    assert "Task reports.build[" not in clock.text()
    check = {c.name: c for c in health_run()}["worker"]
    assert not check.ok and "celery queue" in check.message, check.message
    assert check.values["queues"] == {"celery": 0, "clock": 1}

    start_worker(env={"WORKER_HEARTBEAT_SECONDS": "1"}, args=("-Q", "celery"))
    job, _ = wait_for(lambda: api.get(r.data["status_url"]).data,
                      lambda j: j["status"] in ("done", "failed"))
    assert job["status"] == "done", job["error"]
    check, _ = wait_for(lambda: {c.name: c for c in health_run()}["worker"],
                        lambda c: c.ok)
    assert check.values["queues"] == {"celery": 1, "clock": 1}
