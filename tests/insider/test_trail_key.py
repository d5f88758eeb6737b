"""The trail key: where it lives, what it signs, and its rotation."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from casino.models import ChangeLog
from casino.trail import key_id_of, trail_verify
from tests.audit.conftest import BANKER_WINS, stake

OLD, NEW = "old-key-" + "a" * 40, "new-key-" + "b" * 40

# These tests edit the records behind the app's back on purpose.
pytestmark = pytest.mark.tampers


def test_rows_name_the_key_that_signed_them_not_the_key(played, settings):
    ids = set(ChangeLog.objects.values_list("key_id", flat=True))
    assert ids == {key_id_of(settings.TRAIL_KEY)}
    assert all(settings.TRAIL_KEY not in str(v) for v in
               ChangeLog.objects.values_list("key_id", "hash", "new", "ledger"))


def test_a_rotated_key_still_verifies_what_it_signed(db, settings, shoe, turn, deal):
    dev = settings.TRAIL_KEY  # signed the fixtures' rows
    settings.TRAIL_KEY, settings.TRAIL_OLD_KEYS = OLD, [dev]
    first_old = ChangeLog.objects.order_by("-id").first().pk + 1
    deal(shoe, BANKER_WINS, [stake("100")])
    first_new = ChangeLog.objects.order_by("-id").first().pk + 1
    # Rotation: the new key signs from now on, the old one only verifies.
    settings.TRAIL_KEY, settings.TRAIL_OLD_KEYS = NEW, [OLD, dev]
    deal(shoe, BANKER_WINS, [stake("200")])
    keys = dict(ChangeLog.objects.values_list("id", "key_id"))
    assert {keys[i] for i in keys if first_old <= i < first_new} == {key_id_of(OLD)}
    assert {keys[i] for i in keys if i >= first_new} == {key_id_of(NEW)}
    out = io.StringIO()
    call_command("verify_trail", stdout=out)
    assert "Trail intact" in out.getvalue()
    # Retiring the old key for good makes its rows unverifiable: said so.
    settings.TRAIL_OLD_KEYS = [dev]
    with pytest.raises(CommandError) as err:
        call_command("verify_trail", stdout=out)
    assert f"row {first_old} (" in str(err.value)
    assert f"signed with key {key_id_of(OLD)}" in str(err.value)


def test_the_wrong_key_fails_the_whole_chain(played, settings):
    settings.TRAIL_KEY = NEW
    check = trail_verify()
    assert not check.ok and "neither TRAIL_KEY nor in TRAIL_OLD_KEYS" in check.problem
