"""Nothing unverified is signed (issue 34 item 3): a database superuser
without TRAIL_KEY rewrites the newest decision (who decided, why), its
digest and every public link after it, so that the links an outsider walks
hold. No anchor is signed over it, whoever asks (the evidence command, the
anchor command, beat's task): each fails naming the row, and a critical flag
says so. The check is incremental: each anchor records where it was
checked from, the next starts there.

On PostgreSQL the edit is a superuser's past every trigger
(tests/pgroles.py); on SQLite, plain SQL."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from casino.anchors import anchors_list, trail_anchor
from casino.chain_check import ChainBroken
from casino.models import AnchorRecord, ChangeLog
from casino.trail import ledger_digest, link_digest
from tests.audit.conftest import FALSE_DRAW, stake
from tests.conftest import make_user

pytestmark = pytest.mark.tampers

CONTENT = ("at", "user_id", "device", "action", "object_type", "object_id",
           "reason", "old", "new", "ledger")


@contextmanager
def superuser():
    if connection.vendor == "postgresql":
        from tests.pgroles import as_superuser

        with as_superuser() as cursor:
            yield cursor
    else:
        with connection.cursor() as cursor:
            yield cursor


def relink(c, first: int) -> None:
    """Every public link from row `first` on, recomputed as the forger can
    (plain SHA-256: no key needed); the HMACs he cannot."""
    prev = (ChangeLog.objects.filter(id__lt=first).order_by("-id")
            .values_list("link", flat=True).first())
    for row in ChangeLog.objects.filter(id__gte=first).order_by("id").values(
            "id", *CONTENT):
        prev = link_digest(prev_link=prev, **{k: row[k] for k in CONTENT})
        c.execute("UPDATE casino_changelog SET link = %s WHERE id = %s",
                  [prev, row["id"]])


@pytest.fixture
def decided(shoe, turn, deal, signing_key):
    """A false draw and its flag confirmed by a second pit boss: the newest
    decision. Anchored before the decision."""
    from audit.models import Flag
    from audit.services.flags import flag_confirm, flags_sync

    deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    flags_sync()
    trail_anchor(reason="interval")
    flag = Flag.objects.filter(status="open").first()
    flag_confirm(flag=flag, user=make_user("pitboss2", "pitboss"),
                 reason="seen on the camera")
    return flag


def forge_the_decision(flag) -> int:
    """The decision rewritten: another pit boss, another reason, on the flag
    event and its log row; the event's digest and the links recomputed."""
    from audit.models import FlagEvent

    other = make_user("pitboss9", "pitboss")
    event = FlagEvent.objects.get(flag=flag, action="confirmed")
    log = ChangeLog.objects.filter(action="audit.flag.confirmed").latest("id")
    event.user_id, event.reason = other.pk, "nothing to see"
    ledger = {"audit.flagevent": {str(event.pk): ledger_digest(event)}}
    with superuser() as c:
        c.execute("UPDATE audit_flagevent SET user_id = %s, reason = %s WHERE "
                  "id = %s", [other.pk, event.reason, event.pk])
        c.execute("UPDATE casino_changelog SET user_id = %s, reason = %s, "
                  "ledger = %s WHERE id = %s",
                  [other.pk, event.reason, json.dumps(ledger), log.pk])
        relink(c, log.pk)
    return log.pk


def alarms(rid: int) -> list:
    from audit.models import Flag

    return list(Flag.objects.filter(kind="integrity", severity="critical",
                                    ident__startswith=f"x:casino.changelog:{rid}:"))


def test_the_evidence_command_signs_nothing_over_a_forged_decision(
        decided, tmp_path):
    day = decided.gaming_day
    rid = forge_the_decision(decided)
    before = len(anchors_list())
    out = tmp_path / "b.zip"
    with pytest.raises(CommandError) as err:
        call_command("evidence", "--from", str(day), "--to", str(day),
                     "--out", str(out))
    assert (f"nothing was signed: trail row {rid}: its content does not match "
            "its digest") in str(err.value)
    assert len(anchors_list()) == before and not out.exists()
    [flag] = alarms(rid)
    assert "no anchor was signed" in flag.message


def test_no_anchor_is_signed_by_the_command_or_by_beat(decided):
    from casino.tasks import trail_anchor_task

    rid = forge_the_decision(decided)
    before = AnchorRecord.objects.count()
    with pytest.raises(CommandError, match=f"trail row {rid}"):
        call_command("trail_anchor", "--reason", "manual")
    with pytest.raises(ChainBroken) as err:
        trail_anchor_task.apply(kwargs={"reason": "interval"}).get()
    assert err.value.row == rid
    assert AnchorRecord.objects.count() == before
    assert len(alarms(rid)) == 1  # once per row and state found


def test_each_anchor_checks_from_the_last_one(played, deal, shoe, monkeypatch):
    from casino import chain_check

    first = trail_anchor(reason="interval")
    walked = []
    real = chain_check.iter_rows

    def counting(rows):
        for r in real(rows):
            walked.append(r["id"])
            yield r

    monkeypatch.setattr(chain_check, "iter_rows", counting)
    deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    second = trail_anchor(reason="interval")
    assert walked == list(range(first.row + 1, second.row + 1))
    marks = dict(AnchorRecord.objects.values_list("row", "checked_from"))
    assert marks == {first.row: 0, second.row: first.row}
    # a mark on a record whose signature does not hold is no starting point
    AnchorRecord.objects.create(
        row=second.row, link=second.link, hash=second.hash, at=second.at,
        reason="forged", signature="AAAA", signing_key_id=second.signing_key_id,
        file="forged.json", checked_from=second.row)
    walked.clear()
    deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    third = trail_anchor(reason="interval")
    assert walked == list(range(second.row + 1, third.row + 1))


def test_an_edit_after_the_last_anchor_is_refused_before_the_next(
        played, shoe, deal):
    first = trail_anchor(reason="interval")
    deal(shoe, FALSE_DRAW, [stake("200", seat=3)])
    row = ChangeLog.objects.filter(id__gt=first.row).order_by("id").first()
    with superuser() as c:
        c.execute("UPDATE casino_changelog SET reason = 'edited' WHERE id = %s",
                  [row.pk])
        relink(c, row.pk)
    with pytest.raises(ChainBroken, match=f"trail row {row.pk}: its content"):
        trail_anchor(reason="interval")


def test_a_report_is_not_stamped_over_a_forged_decision(
        decided, manager, settings, tmp_path, request,
        django_capture_on_commit_callbacks):
    """A report's stamp anchors the head: its job fails naming the row, and
    no stamp is signed."""
    from audit.reports.services import report_request
    from casino.celery import app

    settings.MEDIA_ROOT = str(tmp_path / "media")
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    request.addfinalizer(lambda: setattr(app.conf, "task_always_eager", eager))
    rid = forge_the_decision(decided)
    day = decided.gaming_day.isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        job = report_request(user=manager, kind="commission", format="csv",
                             from_day=day, to_day=day)
    job.refresh_from_db()
    assert job.status == "failed"
    assert f"nothing was signed: trail row {rid}" in job.error
    assert not job.stamp
