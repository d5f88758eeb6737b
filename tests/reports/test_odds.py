"""The exact-odds module: published punto banco counts, chemmy defaults and an
independent cross-check against the engine itself."""

from __future__ import annotations

import json
import time
from fractions import Fraction

import pytest
from django.core.management import CommandError, call_command

from audit.reports.odds import chemmy_odds, compute_odds, punto_banco_odds
from tables import chemmy
from tables.chemmy import PUNTO_BANCO_TABLEAU, STANDARD_TABLEAU


def _falling(n, k):
    out = 1
    for i in range(k):
        out *= n - i
    return out


def test_eight_deck_punto_banco_reproduces_the_published_counts():
    odds = punto_banco_odds(8)
    assert odds.banker == 2_292_252_566_437_888
    assert odds.punter == 2_230_518_282_592_256
    assert odds.tie == 475_627_426_473_216
    # out of all ordered six-card sequences of a 416-card shoe
    assert odds.total == _falling(416, 6)


def test_it_is_fast_enough_to_run_per_table():
    start = time.perf_counter()
    compute_odds(decks=7, tableau=PUNTO_BANCO_TABLEAU, punter_draws_on_5=False)
    assert time.perf_counter() - start < 1.0


def test_chemmy_defaults_and_parameters():
    default = chemmy_odds(6)
    assert default.punter_draws_on_5 is True
    assert default.total == _falling(312, 6)
    assert default.p_banker + default.p_punter + default.p_tie == 1
    # banker has the edge in chemmy as in punto banco
    assert default.p_banker > default.p_punter
    stands_5 = compute_odds(decks=6, punter_draws_on_5=False)
    banker_stands = compute_odds(decks=6, banker_optional=False)
    assert len({default.banker, stands_5.banker, banker_stands.banker}) == 3
    # one optional cell at a time (banker 5 against a 4)
    one_cell = compute_odds(decks=6, banker_optional={(5, 4): False})
    assert one_cell.banker not in (default.banker, banker_stands.banker)
    # every O cell drawing makes the chemmy table punto banco's: same numbers
    assert default.banker == compute_odds(
        decks=6, tableau=PUNTO_BANCO_TABLEAU
    ).banker


def test_expected_commission_per_unit_is_rate_times_p_banker():
    odds = chemmy_odds(6)
    assert odds.expected_commission_per_unit("0.05") == Fraction(1, 20) * odds.p_banker


@pytest.mark.parametrize("decks", [0, 9, "6"])
def test_decks_out_of_range_are_refused(decks):
    with pytest.raises(ValueError, match="decks"):
        compute_odds(decks=decks)


def _brute_force(decks: int, tableau, punter_5: bool, banker_o: bool):
    """An independent count: every value sequence, dealt card by card and
    judged by the engine's own evaluate() (which must find no false draw)."""
    codes = ["TS", "AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S"]
    n = 52 * decks
    counts = {"banker": 0, "punter": 0, "tie": 0}

    def deal(seq, r, w):
        p, b = [seq[0], seq[2]], [seq[1], seq[3]]
        pt, bt = chemmy.hand_total(p), chemmy.hand_total(b)
        nxt = list(seq[4:])
        if pt < 8 and bt < 8:
            act = chemmy.punter_action(pt)
            if act == "D" or (act == "O" and punter_5):
                if not nxt:
                    return "more"
                p.append(nxt.pop(0))
            third = chemmy.point(p[2]) if len(p) == 3 else None
            act = tableau.banker_action(bt, third)
            if act == "D" or (act == "O" and banker_o):
                if not nxt:
                    return "more"
                b.append(nxt.pop(0))
        verdict = chemmy.evaluate(p, b, tableau=tableau)
        assert not verdict.findings
        used = len(p) + len(b)
        assert used == len(seq)
        counts[verdict.outcome.value] += w * _falling(n - used, 6 - used)
        return "done"

    def walk(seq, r, w):
        if len(seq) >= 4 and deal(seq, r, w) == "done":
            return
        for v in range(10):
            if r[v]:
                r[v] -= 1
                walk(seq + [codes[v]], r, w * (r[v] + 1))
                r[v] += 1

    walk([], [16 * decks] + [4 * decks] * 9, 1)
    return counts


def test_matches_a_brute_force_count_through_the_engine():
    # one deck makes card removal matter most
    brute = _brute_force(1, STANDARD_TABLEAU, punter_5=False, banker_o=True)
    odds = compute_odds(decks=1, punter_draws_on_5=False, banker_optional=True)
    assert (odds.banker, odds.punter, odds.tie) == (
        brute["banker"], brute["punter"], brute["tie"]
    )


def test_odds_command_json_and_text(capsys):
    call_command("odds", "--decks", "8", "--punto-banco", "--json")
    out = json.loads(capsys.readouterr().out)
    assert out["counts"] == {
        "banker": 2_292_252_566_437_888, "punter": 2_230_518_282_592_256,
        "tie": 475_627_426_473_216, "total": _falling(416, 6),
    }
    call_command("odds", "--decks", "6")
    text = capsys.readouterr().out
    assert "chemmy-standard-1" in text and "punter draws on 5" in text
    assert f"{chemmy_odds(6).banker:,}" in text


@pytest.mark.django_db
def test_odds_command_reads_a_stored_tableau(capsys):
    call_command("odds", "--decks", "8", "--tableau", "punto-banco-1", "--json")
    assert json.loads(capsys.readouterr().out)["counts"]["tie"] == 475_627_426_473_216
    with pytest.raises(CommandError, match="unknown tableau"):
        call_command("odds", "--tableau", "nope")


def test_odds_command_refuses_bad_input():
    with pytest.raises(CommandError, match="decks"):
        call_command("odds", "--decks", "9")
    with pytest.raises(CommandError, match="rate"):
        call_command("odds", "--rate", "five")
