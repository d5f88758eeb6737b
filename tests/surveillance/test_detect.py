"""detect(): the contract, certain findings, the CUSUM's date, evidence
(no database)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit.surveillance import detect, stats, synth
from audit.surveillance.data import RANKS, Alert, CoupRows, ShoeClose

F = synth.FIRST_DAY


def test_contract_checks_dtypes_and_lengths():
    s = synth.honest(tables=1, days=1, coups_per_day=100, seed=1)
    cols = {name: getattr(s.rows, name) for name in s.rows.__dataclass_fields__}
    with pytest.raises(TypeError, match="outcome"):
        CoupRows(**{**cols, "outcome": cols["outcome"].astype(np.int64)})
    with pytest.raises(ValueError, match="rows"):
        CoupRows(**{**cols, "seq": cols["seq"][:-1]})
    with pytest.raises(TypeError, match="missing"):
        CoupRows.from_columns(table=[1])
    again = CoupRows.from_columns(**{k: v.tolist() for k, v in cols.items()})
    assert len(again) == 100 and again.banker.dtype == object
    assert len(CoupRows.concat([s.rows, s.rows.take(np.arange(10))])) == 110


def test_empty_period_and_bad_fdr():
    assert detect.detect(CoupRows.empty(), []) == []
    with pytest.raises(ValueError, match="fdr"):
        detect.detect(CoupRows.empty(), [], fdr=0)


def _shoe(**kw):
    base = dict(shoe=7, table=1, day=F, decks=6, burned=5, dealt=290,
                left_counted=17, rank_counts={"9": 22})
    return ShoeClose(**{**base, **kw})


def test_certain_shoe_findings_always_alert_outside_bh():
    rows = CoupRows.empty()
    assert detect.detect(rows, [_shoe()]) == []  # 5 + 290 + 17 = 312
    report = detect.analyse(rows, [
        _shoe(left_counted=13),  # four cards missing
        _shoe(shoe=8, rank_counts={"K": 25}),  # a 25th king in six decks
        # a 9 missing, counted by rank: 20 dealt + 0 left + 3 burned < 24
        _shoe(shoe=9, burned=3, dealt=284, left_counted=24,
              rank_counts={r: 20 if r == "9" else 22 for r in RANKS},
              left_ranks={r: 0 if r == "9" else 2 for r in RANKS}),
        _shoe(shoe=10, left_counted=None),  # not counted: nothing certain
    ], fdr=0.01)
    got = {(a.subject, a.test, a.statistic) for a in report.alerts}
    assert got == {("shoe:7", "count", -4.0), ("shoe:8", "rank_over", 1.0),
                   ("shoe:9", "count", -1.0), ("shoe:9", "rank_short", -1.0)}
    assert all(a.p_value == 0.0 and a.kind == "shoe_count" for a in report.alerts)
    assert report.tests == 0  # facts are not hypotheses: none entered BH


def test_cusum_alert_is_dated_the_day_it_crosses():
    s = synth.honest(tables=3, days=8, coups_per_day=1000, seed=21)
    s = synth.inject_table(s, seed=21, table=2, from_day=F + 2, share=0.38)
    alerts = [a for a in detect.detect(s.rows, s.shoes) if a.kind == "table_cusum"]
    assert [a.subject for a in alerts] == ["table:2"]
    a = alerts[0]
    # recompute: the first coup of table 2 (time order) at or over the limit
    mine = np.flatnonzero(s.rows.table == 2)
    mine = mine[np.argsort(s.rows.at[mine], kind="stable")]
    c = stats.BernoulliCusum(float(s.rows.p_banker[0]), detect.DEFAULT_DELTA,
                             detect.DEFAULT_ARL0)
    path = c.run(s.rows.outcome[mine] == 0, s.rows.p_banker[mine])
    first = int(np.flatnonzero(path >= c.limit)[0])
    assert a.day == int(s.rows.day[mine[first]]) >= F + 2
    assert a.evidence["crossed_at_coup"] == first + 1
    assert a.evidence["limit_h"] == pytest.approx(c.h)
    assert max(a.evidence["series"]["cusum_max"]) >= c.h


def test_a_rising_banker_share_has_its_own_cusum():
    """Issue 27: a table whose banker wins rise to 52 % is found by the
    upward CUSUM, dated the day it crosses; the falling one stays quiet."""
    s = synth.honest(tables=3, days=8, coups_per_day=1000, seed=22)
    s = synth.inject_table(s, seed=22, table=3, from_day=F + 2, share=0.52)
    alerts = [a for a in detect.detect(s.rows, s.shoes) if a.kind == "table_cusum"]
    assert [(a.subject, a.test) for a in alerts] == [
        ("table:3", "cusum_banker_share_up")]
    a = alerts[0]
    mine = np.flatnonzero(s.rows.table == 3)
    mine = mine[np.argsort(s.rows.at[mine], kind="stable")]
    c = stats.BernoulliCusum(float(s.rows.p_banker[0]), detect.DEFAULT_DELTA,
                             detect.DEFAULT_ARL0, direction=1)
    path = c.run(s.rows.outcome[mine] == 0, s.rows.p_banker[mine])
    first = int(np.flatnonzero(path >= c.limit)[0])
    assert a.day == int(s.rows.day[mine[first]]) >= F + 2
    assert a.evidence["direction"] == "up" and a.evidence["p1"] > a.evidence["p0"]


def test_alerts_carry_json_ready_evidence_and_q_values():
    s = synth.honest(tables=4, days=4, coups_per_day=1000, seed=8)
    s = synth.inject_croupier(s, seed=8)
    s = synth.inject_banker(s, seed=8, coups=3000)
    s = synth.inject_short_shoe(s, seed=8, shoe=s.shoes[3].shoe)
    alerts = detect.detect(s.rows, s.shoes)
    kinds = {(a.kind, a.subject) for a in alerts}
    assert ("croupier", "croupier:99") in kinds
    assert ("banker", "card:999999") in kinds
    assert ("shoe_count", f"shoe:{s.shoes[3].shoe}") in kinds
    for a in alerts:
        assert isinstance(a, Alert)
        json.dumps(a.evidence)  # plain types only
        if a.kind not in ("shoe_count", "table_cusum"):
            assert 0 <= a.p_value <= a.evidence["q_value"] <= a.evidence["fdr"]
    cr = next(a for a in alerts if a.subject == "croupier:99")
    ev = cr.evidence
    assert ev["wilson95"][0] > ev["rest_of_floor_rate"]
    assert ev["rate"] > ev["limits_at_n"]["hi998"]
    assert len(ev["funnel"]["n"]) == len(ev["funnel"]["hi998"])


def test_cusum_over_a_trailing_window():
    s = synth.honest(tables=2, days=8, coups_per_day=1000, seed=23)
    s = synth.inject_table(s, seed=23, table=1, from_day=F + 1, share=0.38)
    last_day = s.rows.take(s.rows.day == F + 7)
    alone = detect.analyse(last_day, [])
    assert not [a for a in alone.alerts if a.kind == "table_cusum"]
    windowed = detect.analyse(last_day, [], cusum_rows=s.rows)
    cusum = [a for a in windowed.alerts if a.kind == "table_cusum"]
    assert [a.subject for a in cusum] == ["table:1"]
    assert cusum == detect.table_cusums(s.rows)
    assert windowed.tests == alone.tests  # the window adds no BH test
