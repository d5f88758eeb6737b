"""The trail page (audit/pages/floor.py `trail`, managers and auditors) shows
the witnesses: the latest cosigned checkpoint (its size, time and which
witnesses), and a shorter or forked chain named in verify_trail's words.
Browser-free: Django's test client, the witnesses real processes."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from casino.checkpoints import checkpoint_publish
from casino.models import ChangeLog, Checkpoint
from tests.witness.conftest import (
    cosigned_then_restored,
    cosigned_then_rewritten,
    write,
)

pytestmark = [pytest.mark.django_db]


def section(client) -> str:
    r = client.get(reverse("floor:trail"))
    assert r.status_code == 200
    html = r.content.decode()
    found = re.search(r'<section class="panel" aria-labelledby="witnesses-h" '
                      r'id="witnesses">(.*?)</section>', html, re.S)
    assert found, html[:2000]
    return re.sub(r"\s+", " ", found.group(1))


def test_no_witness_configured_is_said(client, auditor, settings):
    settings.WITNESSES, settings.WITNESS_QUORUM = [], 0
    client.force_login(auditor)
    text = section(client)
    assert "No witness is configured (WITNESS_URLS)" in text
    assert "witness-problems" not in text


def test_the_latest_cosigned_checkpoint_and_its_witnesses(client, auditor,
                                                          witnesses):
    write(4)
    checkpoint_publish()
    cp = Checkpoint.objects.order_by("-id").first()
    client.force_login(auditor)
    text = section(client)
    assert (f"Latest cosigned checkpoint: {cp.size} rows (epoch 1), made at "
            f"{timezone.localtime(cp.at):%Y-%m-%d %H:%M:%S}, cosigned by:") in text
    assert "witness.example/w1 at" in text and "witness.example/w2 at" in text
    assert "quorum 2 of 2 witnesses" in text
    assert "witness-problems" not in text and "not yet cosigned" not in text
    # a witness down: the newer checkpoint is not cosigned by the quorum
    witnesses[1].stop()
    write(2)
    checkpoint_publish()
    text = section(client)
    assert f"Latest cosigned checkpoint: {ChangeLog.objects.count()} rows" in text
    assert "witness.example/w2 at" not in text
    assert "1 of 2 witnesses cosigned the latest checkpoint" in text


@pytest.mark.tampers
def test_a_shorter_chain_is_named_on_the_page(client, manager,
                                             witnesses):
    old, lost = cosigned_then_restored(5, 6)
    client.force_login(manager)
    assert "witness-problems" not in section(client)  # the database alone: silent
    checkpoint_publish()  # the witnesses asked (beat's tick)
    text = section(client)
    assert "The database does not hold what the witnesses cosigned" in text
    assert (f"writes stopped: the database holds {old:,} rows; witness "
            f"witness.example/w1 cosigned {lost:,}") in text


@pytest.mark.tampers
def test_a_forked_chain_is_named_on_the_page(client, auditor,
                                            witnesses):
    cosigned_then_restored(4, 3)
    write(9, tag="forged")
    checkpoint_publish()
    client.force_login(auditor)
    text = section(client)
    assert "writes stopped: witness witness.example/w1 holds a tree of" in text
    assert "does not extend (the consistency proof fails" in text


@pytest.mark.tampers
def test_verify_the_chain_names_rows_rewritten_under_a_cosigned_checkpoint(
        client, auditor, witnesses):
    cosigned_then_rewritten()
    client.force_login(auditor)
    assert "a forked chain" not in section(client)  # the row count holds
    r = client.get(reverse("floor:trail") + "?verify=1")
    assert ("are not the tree witness witness.example/w1 cosigned at"
            in r.content.decode())
    assert "(a forked chain)" in r.content.decode()
