"""The build's PostgreSQL paths (issue 34 item 6): the server writes times,
dates and decimals as the trail's text, and the log's search for the
segment's end and the log's parts are built in a forked process of their
own, the search in the ledger's exported snapshot, while the ledger part is
written. Outside a caller's transaction (as `manage.py evidence` and the
report worker build) both are taken; inside one (as the test suite's other
bundles are built) everything runs in line. The two give the same bytes,
and the bundle verifies."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from audit.evidence import build as build_module
from audit.evidence.build import evidence_build
from tables.models import Coup
from tables.simulation import simulate

pytestmark = [pytest.mark.postgres,
              pytest.mark.django_db(transaction=True)]


def test_the_scan_beside_the_ledger_gives_the_same_bundle(
        croupier, signing_key, tmp_path, verify, monkeypatch):
    assert connection.vendor == "postgresql"
    simulate(user=croupier, tables=2, shoes=1, seed=7)
    days = sorted(set(Coup.objects.values_list("gaming_day", flat=True)))
    started = []
    real = build_module._Beside.start

    def counted(*args):
        started.append(real(*args))  # None: not started
        return started[-1]

    monkeypatch.setattr(build_module._Beside, "start", counted)
    # the rows read while the segment's end is searched for: in the forked
    # process, which says so in a file
    read_ahead = tmp_path / "ahead"
    real_ahead = build_module._Ahead.__init__

    def noted(self, out, members, first, last):
        real_ahead(self, out, members, first, last)
        read_ahead.write_text(f"{first} {last}")

    monkeypatch.setattr(build_module._Ahead, "__init__", noted)
    beside = tmp_path / "beside.zip"
    evidence_build(from_day=days[0], to_day=days[-1], path=beside)
    assert len(started) == 1 and started[0] is not None
    assert started[0].process.exitcode == 0
    assert not started[0].path.exists()  # its own ZIP, removed once adopted
    first, last = map(int, read_ahead.read_text().split())
    assert last > first  # rows were read ahead, and taken in their place
    in_line = tmp_path / "in-line.zip"
    with transaction.atomic():
        evidence_build(from_day=days[0], to_day=days[-1], path=in_line)
    assert started[1] is None
    assert beside.read_bytes() == in_line.read_bytes()
    done = verify(beside, "--public-key", str(signing_key))
    assert done.returncode == 0, done.stdout + done.stderr
