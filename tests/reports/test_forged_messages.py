"""Messages forged on the broker (issue 33 item 2, attack 6): someone who can
write Redis puts raw Celery messages on the queue (kombu, no Celery client),
with a real worker running on the test database as the runtime role. A
message is no authority: an anchor's reason outside beat's set, a report job
the trail does not know, a close with a made-up hour or format each do
nothing but log a warning; a pickled message is not even decoded (JSON only).
The control message (beat's own reason) runs, so the refusals are the
worker's, not a message lost."""

from __future__ import annotations

import json
import pickle
import uuid
from datetime import date

import pytest
from django.conf import settings

from .conftest import wait_for

pytestmark = [
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.tampers,  # a job row is inserted behind the app's back
]
FORGED = "FORGED via Redis: key rotation"


@pytest.fixture(autouse=True)
def _rows(_migration_rows):
    pass


def put(name: str, args=(), kwargs=None, *, body=None, content_type=None) -> str:
    """A task message (Celery's protocol 2) written straight to the queue."""
    from kombu import Connection

    task_id = str(uuid.uuid4())
    headers = {"lang": "py", "task": name, "id": task_id, "root_id": task_id,
               "parent_id": None, "group": None, "retries": 0, "eta": None,
               "expires": None, "origin": "attacker@redis", "argsrepr": "",
               "kwargsrepr": "", "ignore_result": True}
    if body is None:
        body = json.dumps([list(args), kwargs or {}, {
            "callbacks": None, "errbacks": None, "chain": None, "chord": None}])
        content_type = "application/json"
    with Connection(settings.CELERY_BROKER_URL) as conn:
        conn.Producer().publish(
            body, exchange="", routing_key="celery", headers=headers,
            content_type=content_type, content_encoding="utf-8"
            if content_type == "application/json" else "binary",
            delivery_mode=2)
    return task_id


def logged(worker, *needles: str, timeout: float = 60) -> str:
    text, _ = wait_for(worker.text, lambda t: all(n in t for n in needles),
                       timeout=timeout)
    return text


class _Boom:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):  # what unpickling would run
        import os

        return (os.system, (f"touch {self.path}",))


def test_forged_messages_do_nothing_but_warn(start_worker, tmp_path):
    from audit.models import Flag
    from audit.reports.models import ReportJob
    from casino.models import AnchorRecord
    from tests.insider.test_continuity import sql

    worker = start_worker(env={"TRAIL_ANCHOR_DIR": str(settings.TRAIL_ANCHOR_DIR)})

    # the anchor's reason: free text refused, beat's own runs
    put("trail.anchor", kwargs={"reason": FORGED})
    put("trail.anchor", args=[FORGED])
    put("reports.nightly", kwargs={"cutoff_hour": f"6:00) {FORGED} (", "format": "pdf"})
    put("trail.anchor", kwargs={"reason": "interval"})
    logged(worker, "task trail.anchor refused", "task reports.nightly refused")
    wait_for(lambda: list(AnchorRecord.objects.values_list("reason", flat=True)),
             lambda reasons: "interval" in reasons)
    text = logged(worker, "trail.anchor")
    assert text.count("task trail.anchor refused") == 2, text[-3000:]
    reasons = list(AnchorRecord.objects.values_list("reason", flat=True))
    assert reasons == ["interval"], reasons
    written = " ".join(p.read_text() for p in settings.TRAIL_ANCHOR_DIR.glob("*.json"))
    assert "FORGED" not in written and '"interval"' in written

    # a report job the trail does not know, named by a forged message
    day = date.today().isoformat()
    sql("INSERT INTO reports_reportjob (kind, format, params, source, status, "
        "percent, rows, rows_expected, error, requested_at, attempts, file, "
        "file_size, sha256, stamp, data_position, task_id) VALUES ('commission', "
        "'csv', %s, 'manual', 'queued', 0, 0, 0, '', now(), 0, '', 0, '', '{}', "
        "'{}', '')", [json.dumps({"from_day": day, "to_day": day, "tables": []})])
    job = ReportJob.objects.get()
    put("reports.build", args=[job.pk])
    put("reports.build", args=["1 OR 1=1"])
    put("reports.gaming_day_close", kwargs={"format": "../../etc"})
    put("audit.verify_ledger", kwargs={"day": FORGED})
    logged(worker, f"report job {job.pk} not built", "task reports.build refused",
           "task reports.gaming_day_close refused", "task audit.verify_ledger refused")
    job.refresh_from_db()
    assert (job.status, job.attempts, job.file) == ("queued", 0, "")
    assert Flag.objects.filter(ident__startswith=f"x:reports.reportjob:{job.pk}:",
                               severity="critical").exists()

    # a pickle: never decoded, nothing run
    marker = tmp_path / "pickle-ran"
    put("trail.anchor", body=pickle.dumps(
        [[], {"reason": _Boom(marker)}, {}], protocol=2),
        content_type="application/x-python-serialize")
    put("trail.anchor", kwargs={"reason": "interval"})  # after it in the queue
    wait_for(lambda: AnchorRecord.objects.count(), lambda n: n == 2)
    assert not marker.exists()
    assert "ContentDisallowed" in worker.text() or "disallowed" in worker.text()

