"""simulate plays real shoes through the services; the ledger re-computes."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db.models import Sum

from tables.models import BankerTurn, Coup, Finding, Shoe
from tables.selectors import turn_ledger_verify
from tables.simulation import simulate


def test_a_clean_night_has_no_findings_and_a_sound_ledger(croupier):
    report = simulate(user=croupier, tables=2, shoes=1, seed=11)
    assert report.coups == Coup.objects.count() > 100
    assert Finding.objects.count() == 0
    for shoe in Shoe.objects.all():
        seqs = list(shoe.coups.values_list("seq", flat=True))
        assert seqs == list(range(1, len(seqs) + 1))
        assert shoe.cards_left < 7 and not shoe.is_open
    turns = BankerTurn.objects.all()
    assert turns.filter(end="passed").exists() and turns.filter(end="lost").exists()
    for turn in turns:
        check = turn_ledger_verify(turn)
        assert check.ok, check.problems
    total = Coup.objects.aggregate(s=Sum("commission"))["s"]
    assert total == report.commission > Decimal("0")


def test_injected_false_draws_are_each_found_once(croupier):
    report = simulate(user=croupier, tables=1, shoes=2, seed=5, false_draw_rate=0.2)
    assert report.false_draws_injected > 10
    assert (
        Finding.objects.filter(code="false_draw").count() == report.false_draws_injected
    )
    assert Finding.objects.exclude(code="false_draw").count() == 0


@pytest.mark.tampers  # writes records directly, not through the services
def test_the_ledger_check_catches_a_wrong_bank(croupier):
    simulate(user=croupier, tables=1, shoes=1, seed=2)
    turn = BankerTurn.objects.filter(coups__gt=1).first()
    BankerTurn.objects.filter(pk=turn.pk).update(commission_total=Decimal("0.10"))
    turn.refresh_from_db()
    assert not turn_ledger_verify(turn).ok


def test_command_prints_a_summary(croupier, capsys):
    call_command(
        "simulate",
        "--tables",
        "1",
        "--shoes",
        "1",
        "--seed",
        "4",
        "--false-draw-rate",
        "0.05",
    )
    out = capsys.readouterr().out
    assert "1 tables, 1 shoes" in out and "coups/s" in out
    assert Coup.objects.count() > 50


def test_rollups_equal_a_recomputation(croupier, croupier2):
    from tables.rollups import rollup_recompute, rollup_snapshot, rollups_hold

    simulate(user=croupier, tables=2, shoes=1, seed=8, false_draw_rate=0.1)
    simulate(user=croupier2, tables=1, shoes=1, seed=9, false_draw_rate=0.1)
    stored, again = rollup_snapshot(), rollup_recompute()
    assert stored == again
    assert rollups_hold() == []  # every grain, not only the cells
    assert sum(c["coups"] for c in stored.values()) == Coup.objects.count()
    assert sum(c["findings"].get("false_draw", 0) for c in stored.values()) > 0
