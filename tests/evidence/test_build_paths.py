"""The build's PostgreSQL paths (issue 34 item 6): the server writes times,
dates and decimals as the trail's text, and the log's search for the
segment's end and the log's parts are built in a forked process of their
own, the search in the ledger's exported snapshot, while the ledger part is
written. Outside a caller's transaction (as `manage.py evidence` and the
report worker build) both are taken; inside one (as the test suite's other
bundles are built) everything runs in line. The two give the same bytes,
and the bundle verifies."""

from __future__ import annotations

import json
import os
import time

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
    # the rows read ahead, in pages of a few ids here: the forked process
    # takes them from the first while the segment's end is searched for,
    # the builder from the last once its ledger part is written; each says
    # which it took in a file
    monkeypatch.setattr(build_module, "PAGE", 7)
    read_ahead = tmp_path / "ahead"
    read_ahead.mkdir()
    real_ahead = build_module._Ahead.__init__

    def noted(self, out, members, first, last, take):
        real_ahead(self, out, members, first, last, take)
        (read_ahead / str(os.getpid())).write_text(
            json.dumps([first, last, [s[1:3] for s in self.segments]]))

    monkeypatch.setattr(build_module._Ahead, "__init__", noted)
    real_front = build_module._Pages.front

    def after_the_builders_first(self):
        # a small period's ledger is written at once: the forked process
        # waits here (a minute at most) for the builder's first page, so
        # that both take some, whatever the machine's speed
        top = (self.ends[3] - self.ends[2]) // build_module.PAGE
        deadline = time.monotonic() + 60
        while self.ends[1] == top and time.monotonic() < deadline:
            time.sleep(0.01)
        return real_front(self)

    monkeypatch.setattr(build_module._Pages, "front", after_the_builders_first)
    beside = tmp_path / "beside.zip"
    evidence_build(from_day=days[0], to_day=days[-1], path=beside)
    assert len(started) == 1 and started[0] is not None
    assert started[0].process.exitcode == 0
    assert not started[0].path.exists()  # its own ZIP, removed once adopted
    taken = [json.loads(f.read_text()) for f in read_ahead.iterdir()]
    assert len(taken) == 2 and all(pages for _, _, pages in taken), taken
    (first, last, _), _ = taken
    pages = sorted(p for _, _, mine in taken for p in mine)
    # every page once, the whole span: rows read ahead by both processes,
    # and written in their place (the same bytes as in line, below)
    assert pages[0][0] == first and pages[-1][1] == last
    assert all(a[1] + 1 == b[0] for a, b in zip(pages, pages[1:], strict=False))
    in_line = tmp_path / "in-line.zip"
    with transaction.atomic():
        evidence_build(from_day=days[0], to_day=days[-1], path=in_line)
    assert started[1] is None
    assert beside.read_bytes() == in_line.read_bytes()
    done = verify(beside, "--public-key", str(signing_key))
    assert done.returncode == 0, done.stdout + done.stderr
