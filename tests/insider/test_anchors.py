"""Anchors of the chain's head, outside the database (casino/anchors.py): on
demand, by beat every few minutes, at each gaming-day close, on every report,
and read by verify_trail without anyone passing them. Anchors are expected:
one the database records without its file, or a trail left unanchored for
more than 2 x TRAIL_ANCHOR_MINUTES, fails verification (issue 23, item 3)."""

from __future__ import annotations

import base64
import io
import json
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from casino.anchors import anchors_list, trail_anchor
from casino.changelog import log_action
from casino.models import ChangeLog
from casino.trail import trail_verify


def test_the_command_anchors_the_head_in_a_read_only_file(played, settings):
    out = io.StringIO()
    call_command("trail_anchor", "--reason", "before the inspection", stdout=out)
    head = ChangeLog.objects.order_by("-id").first()
    assert f"Anchored row {head.pk} digest {head.hash}" in out.getvalue()
    [anchor] = anchors_list()
    path = settings.TRAIL_ANCHOR_DIR / anchor.file
    data = json.loads(path.read_text())
    assert data | {"at": None, "signature": None} == {
        "row": head.pk, "hash": head.hash, "link": head.link,
        "reason": "before the inspection", "at": None, "signature": None,
        "signing_key_id": anchor.signing_key_id, "tsa_token": None,
        # the keyed chain was checked from the first row before it was signed
        "checked_from": 0}
    assert data["at"].endswith("Z") and len(data["at"]) == 27
    assert len(base64.b64decode(data["signature"])) == 64
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444  # nobody rewrites it
    out = io.StringIO()
    call_command("verify_trail", stdout=out)
    assert "anchors checked: 1" in out.getvalue()


def test_a_fresh_install_anchors_the_rows_its_migrations_sealed(db):
    """migrate seals the rows it writes (groups, tableaux, schedules) into
    the trail (casino 0006, 0010): a fresh install has a head to anchor."""
    from casino.models import ChangeLog
    from tests.conftest import FRESH_INSTALL

    # as migrate left the test database, before any test ran
    assert FRESH_INSTALL["rows"] > 0
    assert FRESH_INSTALL["head_action"] == "casino.trail.ledger_sealed"
    head = ChangeLog.objects.order_by("-id").first()
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
    forged.write_text(json.dumps({"row": anchor.row, "hash": anchor.hash,
                                  "at": "2999-01-01T00:00:00", "reason": "naive"}))
    with pytest.raises(CommandError, match="a time without its zone"):
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


# -- anchors expected (issue 23, item 3) ---------------------------------------

def _empty(folder: Path) -> int:
    """What someone who can reach TRAIL_ANCHOR_DIR does to hide a cut tail:
    every anchor removed (the files are read-only, the folder is not)."""
    files = list(Path(folder).glob("*.json"))
    for path in files:
        path.unlink()
    return len(files)


def _anchor_file(settings, at: datetime, row: int, digest: str) -> None:
    """An anchor as beat would have written it at `at` (casino/anchors.py)."""
    folder = Path(settings.TRAIL_ANCHOR_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{at.astimezone(UTC):%Y%m%dT%H%M%S%fZ}-row{row}.json").write_text(
        json.dumps({"row": row, "hash": digest, "at": at.isoformat(),
                    "reason": "interval"}))


def _one_more_row() -> ChangeLog:
    with transaction.atomic():
        return log_action(action="test.after_the_anchor")


def _verify_fails(match: str) -> None:
    with pytest.raises(CommandError, match=match):
        call_command("verify_trail", stdout=io.StringIO())


def test_an_emptied_folder_fails_naming_the_gaming_day_close_that_recorded_it(
    played, settings, as_user, auditor, django_capture_on_commit_callbacks,
):
    from audit.models import GamingDayClose
    from audit.reports.nightly import gaming_day_close

    with django_capture_on_commit_callbacks(execute=False):  # reports: elsewhere
        gaming_day_close(ledger=False)
    close = GamingDayClose.objects.get(kind="anchor")
    row = close.summary["row"]
    assert trail_verify().ok
    assert _empty(settings.TRAIL_ANCHOR_DIR) == 1
    named = (rf"row {row}: the anchor recorded by the gaming-day close of "
             rf"{close.gaming_day} at cut-off 6:00 \(close {close.pk}\) has no "
             "file in TRAIL_ANCHOR_DIR")
    _verify_fails(named)
    body = as_user(auditor).get("/api/v1/trail/verify/").json()
    assert not body["ok"] and body["broken_id"] == row
    assert "gaming-day close" in body["problem"] and "has no file" in body["problem"]
    assert body["anchors"] == 0  # "0 checked" is no longer a pass


def test_a_report_stamps_anchor_without_its_file_fails_naming_the_report(
    played, manager, settings, tmp_path, request, django_capture_on_commit_callbacks,
):
    from audit.reports.services import report_request
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    request.addfinalizer(lambda: setattr(app.conf, "task_always_eager", eager))
    day = played[0].gaming_day.isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        job = report_request(user=manager, kind="commission", format="csv",
                             from_day=day, to_day=day)
    job.refresh_from_db()
    assert job.status == "done", job.error
    row = int(job.stamp["trail_anchor"].split()[1])
    call_command("verify_trail", stdout=io.StringIO())
    _empty(settings.TRAIL_ANCHOR_DIR)
    _verify_fails(rf"row {row}: the anchor recorded by report #{job.pk}'s stamp "
                  "has no file in TRAIL_ANCHOR_DIR")
    # the same anchor on file again (a copy kept elsewhere): it holds
    head = ChangeLog.objects.get(pk=row)
    _anchor_file(settings, timezone.now(), row, head.hash)
    assert trail_verify().ok


def test_rows_left_unanchored_past_twice_the_interval_fail_until_anchored(
    played, settings,
):
    assert settings.TRAIL_ANCHOR_MINUTES == 15
    head = ChangeLog.objects.order_by("-id").first()
    # beat's last anchor, 40 minutes ago (it stopped since), then a row
    _anchor_file(settings, timezone.now() - timedelta(minutes=40), head.pk, head.hash)
    assert trail_verify().ok  # nothing written since: the head is anchored
    after = _one_more_row()
    _verify_fails(
        rf"the last anchor \(row {head.pk}\) was taken 40 minutes ago, more than "
        rf"2 x 15 minutes, and row {after.pk} written since .* anchored nowhere")
    check = trail_verify()
    assert not check.ok and check.broken_id == after.pk
    # a fresh anchor covers the new row: it passes, and stays so however
    # long nothing is written
    call_command("trail_anchor", stdout=io.StringIO())
    out = io.StringIO()
    call_command("verify_trail", stdout=out)
    assert "Trail intact" in out.getvalue() and "anchors checked: 2" in out.getvalue()
    assert trail_verify(now=timezone.now() + timedelta(hours=5)).ok


def test_an_anchor_within_twice_the_interval_may_still_be_on_its_way(
    played, settings,
):
    head = ChangeLog.objects.order_by("-id").first()
    _anchor_file(settings, timezone.now() - timedelta(minutes=25), head.pk, head.hash)
    after = _one_more_row()
    assert trail_verify().ok
    check = trail_verify(now=timezone.now() + timedelta(minutes=6))
    assert not check.ok and check.broken_id == after.pk


def test_a_trail_never_anchored_fails_once_its_first_row_is_twice_the_interval_old(
    played,
):
    first = ChangeLog.objects.order_by("id").first()
    soon = first.at + timedelta(minutes=29)
    assert trail_verify(now=soon).ok  # a fresh install, beat not run yet
    check = trail_verify(now=first.at + timedelta(minutes=31))
    assert not check.ok and check.broken_id == first.pk
    assert check.problem.startswith(
        f"no anchor on file in TRAIL_ANCHOR_DIR, yet rows {first.pk} to ")
    assert "the first written 31 minutes ago" in check.problem
    trail_anchor(reason="interval")
    assert trail_verify(now=timezone.now() + timedelta(minutes=31)).ok
    assert trail_verify(anchors=False, now=first.at + timedelta(days=3)).ok


def test_the_trail_page_shows_the_last_anchors_age_and_warns_when_stale(
    browser_as, manager, played, settings,
):
    head = ChangeLog.objects.order_by("-id").first()
    _anchor_file(settings, timezone.now() - timedelta(minutes=12), head.pk, head.hash)
    page = browser_as(manager).get("/floor/trail/").content.decode()
    assert f"Last anchor 12\xa0minutes ago, row #{head.pk}." in page
    assert "Anchors are stale" not in page
    _anchor_file(settings, timezone.now() - timedelta(minutes=50), head.pk, head.hash)
    _empty_newest = sorted(Path(settings.TRAIL_ANCHOR_DIR).glob("*.json"))[-1]
    _empty_newest.unlink()  # the 12-minute one: the last is now 50 minutes old
    after = _one_more_row()
    page = browser_as(manager).get("/floor/trail/").content.decode()
    assert f"Last anchor 50\xa0minutes ago, row #{head.pk}." in page
    assert "Anchors are stale" in page and f"row {after.pk} written since" in page
    verified = browser_as(manager).get("/floor/trail/?verify=1").content.decode()
    assert "Chain broken" in verified and "anchored nowhere" in verified
