"""Anchors of the chain's head, outside the database (casino/anchors.py): on
demand, by beat every few minutes, at each gaming-day close, on every report,
and read by verify_trail without anyone passing them."""

from __future__ import annotations

import io
import json
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from casino.anchors import anchors_list, trail_anchor
from casino.models import ChangeLog


def test_the_command_anchors_the_head_in_a_read_only_file(played, settings):
    out = io.StringIO()
    call_command("trail_anchor", "--reason", "before the inspection", stdout=out)
    head = ChangeLog.objects.order_by("-id").first()
    assert f"Anchored row {head.pk} digest {head.hash}" in out.getvalue()
    [anchor] = anchors_list()
    path = settings.TRAIL_ANCHOR_DIR / anchor.file
    assert json.loads(path.read_text()) | {"at": None} == {
        "row": head.pk, "hash": head.hash, "reason": "before the inspection",
        "at": None}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444  # nobody rewrites it
    out = io.StringIO()
    call_command("verify_trail", stdout=out)
    assert "anchors checked: 1" in out.getvalue()


def test_a_fresh_install_anchors_the_rows_its_migrations_sealed(db):
    """migrate seals the rows it writes (groups, tableaux, schedules) into
    the trail (casino 0006, 0010): a fresh install has a head to anchor."""
    from casino.models import ChangeLog

    head = ChangeLog.objects.order_by("-id").first()
    assert head is not None and head.action == "casino.trail.ledger_sealed"
    assert trail_anchor(reason="first").row == head.pk


@pytest.mark.tampers
def test_a_forged_anchor_file_fails_verification(played, settings):
    anchor = trail_anchor(reason="interval")
    forged = settings.TRAIL_ANCHOR_DIR / "29990101T000000000000Z-forged.json"
    forged.write_text(json.dumps({"row": anchor.row, "hash": "f" * 64,
                                  "at": "2999-01-01T00:00:00+00:00",
                                  "reason": "forged"}))
    with pytest.raises(CommandError, match=f"two anchors disagree on row {anchor.row}"):
        call_command("verify_trail", stdout=io.StringIO())
    forged.write_text("not an anchor")
    with pytest.raises(CommandError, match="unreadable"):
        call_command("verify_trail", stdout=io.StringIO())


def test_beat_anchors_every_few_minutes(settings, played):
    from casino.celery import app
    from casino.tasks import trail_anchor_task

    entry = settings.CELERY_BEAT_SCHEDULE["trail-anchor"]
    assert entry["task"] == "trail.anchor" == trail_anchor_task.name
    assert entry["schedule"] == timedelta(minutes=settings.TRAIL_ANCHOR_MINUTES)
    assert "trail.anchor" in app.tasks
    # Run here as a worker would (a real worker runs the task in
    # tests/reports' worker tests' way; the body is what is tested).
    row = trail_anchor_task.apply(kwargs={"reason": "interval"}).get()
    assert row == ChangeLog.objects.order_by("-id").first().pk
    assert [a.reason for a in anchors_list()] == ["interval"]


def test_the_gaming_day_close_and_every_report_anchor_the_trail(
    played, manager, settings, tmp_path, request,
    django_capture_on_commit_callbacks,
):
    from audit.reports.services import report_request
    from audit.reports.tasks import nightly_reports_task
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    # The report built here, in-process (tests/reports runs real workers).
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    request.addfinalizer(lambda: setattr(app.conf, "task_always_eager", eager))

    nightly_reports_task(cutoff_hour=6)
    assert anchors_list()[0].reason == "gaming-day close (cut-off 6:00)"
    day = played[0].gaming_day.isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        job = report_request(user=manager, kind="commission", format="csv",
                             from_day=day, to_day=day)
    job.refresh_from_db()
    assert job.status == "done", job.error
    row, digest = job.stamp["trail_anchor"].removeprefix("row ").split()
    assert any(a.row == int(row) and a.hash == digest and
               a.reason.startswith("report stamp") for a in anchors_list())
    text = (Path(settings.MEDIA_ROOT) / job.file).read_text(encoding="utf-8")
    assert f"trail anchor,row {row} {digest}" in text  # in the file itself


def test_the_trail_page_shows_the_anchors(browser_as, manager, played):
    anchor = trail_anchor(reason="gaming-day close")
    page = browser_as(manager).get("/floor/trail/").content.decode()
    assert "Anchors" in page and anchor.hash in page and "gaming-day close" in page
