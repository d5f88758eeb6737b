"""The log segment a bundle carries ends at the first signed anchor after
the last log row that wrote any of its rows: a session closed after an
anchor moves the end to the next anchor, and a later write about something
else does not. On PostgreSQL the scan runs in the server (build._latest_pg);
it must find what the Python scan finds."""

from __future__ import annotations

import json
import zipfile

from django.db import connection

from audit.evidence.build import _writers, evidence_build
from audit.evidence.ledger import Keys
from casino.anchors import trail_anchor
from casino.models import ChangeLog
from tables import services
from tables.models import Coup, TableSession
from tables.simulation import simulate


def test_the_segment_ends_at_the_anchor_after_the_last_write(
        db, croupier, manager, signing_key, tmp_path, verify):
    simulate(user=croupier, tables=2, shoes=1, seed=9)
    day = Coup.objects.values_list("gaming_day", flat=True).first()
    early = trail_anchor(reason="before the close")
    session = TableSession.objects.order_by("pk").first()
    services.session_close(session=session, user=croupier)
    closed = ChangeLog.objects.order_by("-id").values_list("id", flat=True).first()
    after_close = trail_anchor(reason="after the close")
    services.table_create(user=manager, name="Elsewhere")
    trail_anchor(reason="later, about another table")
    assert early.row < closed == after_close.row

    out = tmp_path / "b.zip"
    manifest = evidence_build(from_day=day, to_day=day, path=out)
    assert manifest["windows"][-1]["last"] == after_close.row
    with zipfile.ZipFile(out) as z:
        anchors = [json.loads(x) for x in z.read("anchors.jsonl").splitlines()]
    assert anchors[-1]["reason"] == "after the close"
    done = verify(out, "--public-key", str(signing_key))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_server_scan_finds_what_python_finds(db, croupier, signing_key):
    simulate(user=croupier, tables=2, shoes=1, seed=4)
    session = TableSession.objects.order_by("pk").first()
    services.session_close(session=session, user=croupier)
    closed = ChangeLog.objects.order_by("-id").values_list("id", flat=True).first()
    members = {label: Keys() for label in (
        "tables.tableauversion", "tables.table", "tables.houserules",
        "tables.tablesession", "tables.coup")}
    members["tables.tablesession"].add(session.pk)
    members["tables.table"].add(session.table_id)
    members["tables.houserules"].add(session.rules_id)
    for pk in Coup.objects.filter(shoe__session=session).values_list("pk", flat=True):
        members["tables.coup"].add(pk)
    members = {label: keys.freeze() for label, keys in members.items()}
    vendor = connection.vendor
    try:
        connection.vendor = "sqlite"  # the Python scan, on any database
        in_python = _writers(1, members)
    finally:
        connection.vendor = vendor
    assert in_python == (closed, {"tables.tableauversion": set(),
                                  "tables.table": {session.table_id},
                                  "tables.houserules": {session.rules_id}})
    assert _writers(1, members) == in_python
