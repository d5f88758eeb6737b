"""The manager's (and the auditor's) evidence bundle from the reports page:
a report job with progress, its file the bundle the verifier accepts."""

from __future__ import annotations

import re

import pytest

from audit.reports.models import ReportJob
from casino.signing import stamp_verify
from tables.models import Coup
from tables.simulation import simulate


@pytest.fixture(autouse=True)
def _eager(settings, tmp_path):
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old


@pytest.mark.parametrize("role", ["manager", "auditor"])
def test_the_reports_page_builds_a_bundle(request, role, croupier, signing_key,
                                          client, verify, tmp_path,
                                          django_capture_on_commit_callbacks):
    simulate(user=croupier, tables=1, shoes=1, seed=3)
    day = Coup.objects.values_list("gaming_day", flat=True).first().isoformat()
    client.force_login(request.getfixturevalue(role))
    page = client.get("/reports/").content.decode()
    assert 'name="kind" value="evidence"' in page
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post("/reports/request/", {"kind": "evidence", "format": "zip",
                                              "from_day": day, "to_day": day})
    job = ReportJob.objects.get()
    assert r.status_code == 302 and r["Location"] == f"/reports/jobs/{job.pk}/"
    assert job.status == "done", job.error
    progress = client.get("/reports/progress.json", {"job": job.pk}).json()
    assert progress["jobs"][0]["percent"] == 100
    assert progress["jobs"][0]["rows"] == job.rows > Coup.objects.count()
    assert job.stamp["trail_anchor"].startswith("row ")
    assert stamp_verify(job.stamp) == ""  # signed as every report's stamp
    # the job page's stamp says all a report's does (issue 35)
    stamp = job.stamp
    assert stamp["house_rules"] and stamp["house_rules"][0]["coups"] > 0
    assert stamp["software_version"].startswith("chemmy-audit ")
    assert stamp["generated_at"] and stamp["generated_by"] == role + "1"
    page = client.get(f"/reports/jobs/{job.pk}/").content.decode()
    stamp_part = page[page.index("<h2>Stamp</h2>"):]
    assert "<td>—</td>" not in stamp_part and "<td></td>" not in stamp_part
    assert f"{job.rows}</span> rows" in page and 'class="expected"' not in page
    rules = stamp_part[stamp_part.index("<th>House rules</th>"):]
    rules = rules[:rules.index("</tr>")]
    assert "rounded half up" in rules
    # "rounded half up , chemmy": an include's last newline read as a space
    assert not re.search(r"\s,", rules), rules
    download = client.get(f"/reports/jobs/{job.pk}/download/")
    assert download.status_code == 200
    assert download["Content-Type"] == "application/zip"
    path = tmp_path / "downloaded.zip"
    path.write_bytes(b"".join(download.streaming_content))
    done = verify(path, "--public-key", str(signing_key))
    assert done.returncode == 0, done.stdout + done.stderr


def test_others_may_not_request_it(pitboss, croupier, client):
    for user in (pitboss, croupier):
        client.force_login(user)
        r = client.post("/reports/request/", {"kind": "evidence", "format": "zip",
                                              "from_day": "2026-01-01",
                                              "to_day": "2026-01-01"})
        assert r.status_code == 403
    assert not ReportJob.objects.exists()


def test_a_bundle_is_a_zip_and_only_it(manager, client):
    client.force_login(manager)
    r = client.post("/reports/request/", {"kind": "evidence", "format": "pdf",
                                          "from_day": "2026-01-01",
                                          "to_day": "2026-01-01"}, follow=True)
    assert "format: the evidence bundle is a zip, and only it" in r.content.decode()
    r = client.post("/reports/request/", {"kind": "commission", "format": "zip",
                                          "from_day": "2026-01-01",
                                          "to_day": "2026-01-01"}, follow=True)
    assert "format: the evidence bundle is a zip" in r.content.decode()
    assert not ReportJob.objects.exists()
