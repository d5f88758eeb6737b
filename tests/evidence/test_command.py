"""`manage.py evidence --table`: a bundle of one table verifies, and holds
that table's sessions, coups and commission and nothing of the others'."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.management import CommandError, call_command

from tables.models import Coup, Table
from tables.simulation import simulate


@pytest.fixture
def floor(db, croupier, signing_key):
    simulate(user=croupier, tables=2, shoes=1, seed=5)
    return Table.objects.order_by("pk")


def _parts(path):
    with zipfile.ZipFile(path) as z:
        ledger = [json.loads(x) for x in z.read("ledger.jsonl").splitlines()]
        report = json.loads(z.read("report.json"))
        manifest = json.loads(z.read("manifest.json"))
    return ledger, report, manifest


def test_one_tables_bundle(floor, tmp_path, verify, signing_key, capsys):
    mine, other = floor
    day = Coup.objects.values_list("gaming_day", flat=True).first().isoformat()
    out = tmp_path / "one.zip"
    call_command("evidence", "--from", day, "--to", day, "--table", mine.name,
                 "--out", str(out))
    assert f"{out}: gaming days {day} to {day}" in capsys.readouterr().out
    ledger, report, manifest = _parts(out)
    assert manifest["tables"] == [mine.pk]
    by_label = {}
    for line in ledger:
        by_label.setdefault(line["label"], []).append(line)
    assert [t["id"] for t in by_label["tables.table"]] == [mine.pk]
    assert {s["row"]["table_id"] for s in by_label["tables.tablesession"]} == {
        mine.pk}
    coups = {c["id"] for c in by_label["tables.coup"]}
    assert coups == set(Coup.objects.filter(shoe__session__table=mine)
                        .values_list("pk", flat=True))
    assert not coups & set(Coup.objects.filter(shoe__session__table=other)
                           .values_list("pk", flat=True))
    assert {r["table_id"] for r in report["rows"]} == {mine.pk}
    done = verify(out, "--public-key", str(signing_key))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"coups re-settled: {len(coups)}" in done.stdout
    assert mine.name in done.stdout and other.name not in done.stdout


def test_an_unknown_table(floor, tmp_path):
    with pytest.raises(CommandError, match="--table: no table 'Nowhere'"):
        call_command("evidence", "--from", "2026-01-01", "--to", "2026-01-01",
                     "--table", "Nowhere", "--out", str(tmp_path / "x.zip"))
    assert not (tmp_path / "x.zip").exists()
