"""collect(): the period's coups at their current revision, as the
statistics read them — one row per coup (a corrected coup once, marked), its
findings, its banker's identity, the exact odds and the levy of its own house
rules — and the shoes closed in the period. On PostgreSQL the fast SQL path
hands over exactly what the ORM path does."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from audit.reports.odds import house_odds, levy
from audit.surveillance import collect
from tables import services
from tables.chemmy.cards import point
from tables.chemmy.house import cell_key
from tables.models import BankerTurn, Coup, Finding, Shoe
from tables.rollups import current_coups
from tables.services.coups import tableau_for

from .conftest import DAY1, DAY2

pytestmark = pytest.mark.django_db


def _correct_one(pitboss) -> Coup:
    """A stake of some coup raised by 10 (a second revision)."""
    for coup in current_coups().order_by("id"):
        stakes = [services.StakeInput(amount=s.amount, seat=s.seat,
                                      standing=s.standing or None)
                  for s in coup.stakes.all()]
        stakes[0] = services.StakeInput(amount=stakes[0].amount + Decimal("10"),
                                        seat=stakes[0].seat,
                                        standing=stakes[0].standing)
        try:
            services.coup_correct(coup=coup, user=pitboss, reason="mis-keyed",
                                  punter=coup.punter_cards,
                                  banker=coup.banker_cards, stakes=stakes)
        except Exception:  # noqa: BLE001 - this stake may not fit: try another
            continue
        return coup
    pytest.fail("no coup could be corrected")


def test_rows_follow_the_current_revisions(floor_night, pitboss):
    corrected = _correct_one(pitboss)
    rows, shoes = collect.collect(from_day=DAY1, to_day=DAY1)
    cur = list(current_coups().filter(gaming_day=DAY1)
               .select_related("rules__tableau", "turn", "shoe__session"))
    assert len(rows) == len(cur) > 300
    keys = list(zip(rows.shoe.tolist(), rows.seq.tolist(), strict=True))
    assert len(set(keys)) == len(keys)  # each coup once
    by_key = {(c.shoe_id, c.seq): c for c in cur}
    i = keys.index((corrected.shoe_id, corrected.seq))
    assert rows.corrected[i] and rows.corrected.sum() == 1
    assert rows.covered[i] == float(by_key[keys[i]].covered)  # the new revision
    fd = set(Finding.objects.filter(code="false_draw", coup__in=cur)
             .values_list("coup__shoe_id", "coup__seq"))
    assert {k for k, f in zip(keys, rows.false_draw, strict=True) if f} == fd
    assert len(fd) > 5
    for k, outcome, banker, croupier, table, day, lw in zip(
            keys, rows.outcome, rows.banker, rows.croupier, rows.table, rows.day,
            rows.levy_win, strict=True):
        c = by_key[k]
        assert outcome == {"banker": 0, "punter": 1, "tie": 2}[c.outcome]
        card = c.turn.player_card
        assert banker == (f"card:{card}" if card else
                          f"seat:{c.banker_seat}@session:{c.shoe.session_id}")
        assert croupier == c.entered_by_id and table == c.shoe.session.table_id
        assert day == DAY1.toordinal()
        r = c.rules
        assert lw == float(levy(c.covered, rate=r.commission_rate,
                                unit=r.commission_unit,
                                rounding=r.commission_rounding))
    # the expectation at the floor's mix of free choices (issue 27): the
    # share of draws at each free cell, counted here from the coups' cards
    seen: dict[str, list[int]] = {}
    for c in cur:
        if c.punter_choice:
            seen.setdefault("punter", []).append(c.punter_choice == "draw")
        if c.banker_choice:
            b2 = (point(c.banker_cards[0]) + point(c.banker_cards[1])) % 10
            third = point(c.punter_cards[2]) if len(c.punter_cards) == 3 else None
            seen.setdefault(cell_key(b2, third), []).append(
                c.banker_choice == "draw")
    assert "punter" in seen
    mix = {cell: Fraction(sum(d), len(d)) for cell, d in seen.items()}
    odds = house_odds(decks=6, tableau=tableau_for("chemmy-standard-1"),
                      punter_five="free", banker_prescriptions={}, mix=mix)
    assert np.allclose(rows.p_banker, float(odds.p_banker))
    period = collect.collect_period(from_day=DAY1, to_day=DAY1)
    assert {c: Fraction(d, d + s) for c, (d, s) in period.mix.counts.items()} == mix
    assert period.mix.expected_share == pytest.approx(float(odds.p_banker))
    assert period.mix.drawn_share == pytest.approx(float(house_odds(
        decks=6, tableau=tableau_for("chemmy-standard-1")).p_banker))
    assert np.allclose(rows.p_banker + rows.p_punter + rows.p_tie, 1.0)
    net = rows.banker_net
    assert np.allclose(net[rows.outcome == 1], -rows.covered[rows.outcome == 1])
    assert np.all(net[rows.outcome == 2] == 0)
    # the shoes closed that day, with what was dealt from them
    closed = Shoe.objects.filter(session__gaming_day=DAY1, closed_at__isnull=False)
    assert sorted(s.shoe for s in shoes) == sorted(closed.values_list("pk", flat=True))
    for s in shoes:
        shoe = closed.get(pk=s.shoe)
        assert s.dealt == shoe.dealt == sum(s.rank_counts.values())
        assert s.burned == shoe.burned and s.left_counted == shoe.left_counted


def test_tables_and_days_filter(floor_night, croupier):
    from .conftest import play

    play(croupier, DAY2, tables=1, shoes=1, seed=31, prefix="Next")
    bad = floor_night["bad"].table_ids
    rows, shoes = collect.collect(from_day=DAY1, to_day=DAY1, table_ids=bad)
    assert set(rows.table.tolist()) == set(bad) and rows.croupier.size
    assert set(rows.croupier.tolist()) == {floor_night["culprit"].pk}
    assert {s.table for s in shoes} == set(bad)
    both, _ = collect.collect(from_day=DAY1, to_day=DAY2)
    assert Counter(both.day.tolist()).keys() == {DAY1.toordinal(), DAY2.toordinal()}
    assert len(collect.collect(from_day=DAY2, to_day=DAY2)[0]) == \
        current_coups().filter(gaming_day=DAY2).count()
    empty, none = collect.collect(from_day=DAY1.replace(year=2020),
                                  to_day=DAY1.replace(year=2020))
    assert len(empty) == 0 and none == []


@pytest.mark.postgres
def test_the_sql_path_reads_what_the_orm_path_reads(floor_night, pitboss):
    _correct_one(pitboss)
    assert BankerTurn.objects.exclude(player_card="").exists()
    fast = sorted(r for c in collect._pg_chunks(DAY1, DAY1, None) for r in c)
    slow = sorted(r for c in collect._orm_chunks(DAY1, DAY1, None) for r in c)
    assert len(fast) == len(slow) == Coup.objects.filter(gaming_day=DAY1).count()
    for a, b in zip(fast, slow, strict=True):
        assert a[:7] == b[:7] and a[8:] == b[8:]
        assert abs(a[7] - b[7]) <= 1  # µs: float rounding of the epoch
