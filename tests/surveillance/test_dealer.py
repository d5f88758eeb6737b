"""The real-shoe generator (dealer.py) deals by the rule book: each coup it
deals, given to the rules engine, has the same outcome, the same free
choices and a false draw exactly where the dealer broke a rule; the shoes
run to the cut card and close with every card accounted for."""

from __future__ import annotations

import numpy as np

from audit.surveillance import dealer, detect
from audit.surveillance.data import BANKER, PUNTER, TIE
from audit.surveillance.mix import DRAW, NONE, STAND
from tables.chemmy import evaluate
from tables.chemmy.cards import POINTS


def test_every_coup_is_the_rules_engines_verdict():
    rng = np.random.default_rng(1)
    d = dealer.deal(60, rng, false_draw_rate=0.05)  # many false draws to see
    assert len(d.shoe) > 60 * 45 and d.false_draw.sum() > 50
    names = {BANKER: "banker", PUNTER: "punter", TIE: "tie"}
    choice = {NONE: None, DRAW: "draw", STAND: "stand"}
    for i in range(len(d.shoe)):
        punter, banker = d.codes(i)
        v = evaluate(punter, banker)
        assert v.outcome == names[int(d.outcome[i])], (punter, banker)
        assert v.punter_choice == choice[int(d.punter_choice[i])]
        assert v.banker_choice == choice[int(d.banker_choice[i])]
        wrong = any(f.code == "false_draw" for f in v.findings)
        assert wrong == bool(d.false_draw[i]), (punter, banker)
        if v.banker_choice:
            b2 = (POINTS[banker[0]] + POINTS[banker[1]]) % 10
            col = 0 if v.punter_third is None else v.punter_third + 1
            assert d.banker_cell[i] == b2 * 11 + col


def test_shoes_run_to_the_cut_card_and_close_whole():
    rng = np.random.default_rng(2)
    d = dealer.deal(40, rng)
    size = 52 * 6
    for s in range(40):
        mine = np.flatnonzero(d.shoe == s)
        assert d.start[mine[0]] == d.burned[s]
        assert np.all(d.start[mine[1:]] == d.start[mine[:-1]] + d.used[mine[:-1]])
        assert size - d.start[mine[-1]] >= 7  # begun with 7 or more left
        assert size - d.start[mine[-1]] - d.used[mine[-1]] < 7  # the cut card
    s = dealer.honest(tables=3, days=2, coups_per_day=500, seed=4)
    assert len(s.rows) == 3000
    for close in s.shoes:
        assert close.dealt + close.burned + close.left_counted == size
        assert sum(close.rank_counts.values()) == close.dealt
        assert max(close.rank_counts.values()) <= 24


def test_the_floors_mix_is_what_it_was_dealt_at_and_weighs_the_odds():
    s = dealer.honest(tables=10, days=2, seed=5)
    draws, stands = s.truth["mix"]["punter"]
    assert abs(draws / (draws + stands) - dealer.MIX["punter"]) < 0.03
    # punters who stand on 5 more often than not: the banker's expectation
    # is above the "always draw" figure, 0.45865
    assert s.rows.p_banker[0] > 0.4595
    assert detect.analyse(s.rows, s.shoes).tests > 0
