"""Statistics: per croupier, per seat, per table and hour of the day."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.utils import timezone

from audit import stats
from tables import services

from .conftest import BANKER_WINS, FALSE_DRAW, stake

D = Decimal
# Punter 5 draws (optional, recorded as his choice), banker 7 stands: 5+K=5 < 7.
AT_FIVE_DRAWS = (["2H", "3D", "KC"], ["4S", "3C"])
AT_FIVE_STANDS = (["2H", "3D"], ["4S", "3C"])
TICK = timedelta(microseconds=1)


def tie(i: int):
    """7 v 7, both stand; suits rotate so no card is seen more than 6 times."""
    s = "HDCS"
    return ([f"3{s[i % 4]}", f"4{s[(i + 1) % 4]}"],
            [f"2{s[(i + 2) % 4]}", f"5{s[(i + 3) % 4]}"])


def test_croupier_rates_count_only_their_dealing_time(
    table, croupier, croupier2, pitboss, clock, deal
):
    start = timezone.make_aware(datetime(2026, 3, 2, 21, 0))
    day = (start - timedelta(hours=6)).date()
    with clock(start, TICK) as c:
        session = services.session_open(table=table, user=croupier)
        shoe = services.shoe_open(session=session, user=croupier)
        services.banker_turn_open(session=session, user=croupier, seat=1,
                                  bank=D("1000"))
        for i in range(11):  # a coup a minute for 10 minutes
            c["now"] = start + timedelta(minutes=i)
            deal(shoe, FALSE_DRAW if i == 10 else tie(i), [stake("100")])
        # a 40-minute break, then the relief deals 5 coups in 4 minutes
        services.session_croupier_change(session=session, croupier=croupier2,
                                         user=pitboss)
        for i in range(5):
            c["now"] = start + timedelta(minutes=50 + i)
            deal(shoe, tie(i), [stake("100")], user=croupier2)
    rows = {r["name"]: r for r in stats.croupier_stats(day, day)}
    one, two = rows["croupier1"], rows["croupier2"]
    assert (one["coups"], one["findings"], one["findings_per_100"]) == (11, 1, D("9.1"))
    # 10 intervals in 10 minutes
    assert (one["hours"], one["coups_per_hour"]) == (D("0.17"), D("60.0"))
    assert two["coups"] == 5 and two["coups_per_hour"] is None  # 4 minutes only
    assert one["findings_by_code"] == {"false_draw": 1}


def test_seats_draw_at_five_and_false_draws(shoe, turn, deal):
    deal(shoe, AT_FIVE_DRAWS, [stake("100", seat=3)])
    deal(shoe, AT_FIVE_STANDS, [stake("100", seat=3)])
    deal(shoe, AT_FIVE_DRAWS, [stake("100", seat=3)])
    deal(shoe, FALSE_DRAW, [stake("100", seat=3)])  # the banker's (seat 1)
    deal(shoe, BANKER_WINS, [stake("100", seat=4)])
    today = shoe.session.gaming_day
    rows = {r["seat"]: r for r in stats.seat_stats(today, today)}
    assert (rows[3]["at_five"], rows[3]["drew_at_five"]) == (3, 2)
    assert rows[3]["draw_at_five_pct"] == D("66.7")
    assert rows[3]["punter_hands"] == 4 and rows[3]["false_draws"] == 0
    assert rows[1]["false_draws"] == 1 and rows[1]["banker_coups"] == 5


def test_table_coups_per_hour_by_hour_of_day(table, croupier, clock, deal):
    start = timezone.make_aware(datetime(2026, 3, 2, 21, 30))
    with clock(start, TICK) as c:
        session = services.session_open(table=table, user=croupier)
        shoe = services.shoe_open(session=session, user=croupier)
        services.banker_turn_open(session=session, user=croupier, seat=1,
                                  bank=D("1000"))
        for i in range(9):  # every 20 minutes: 21:30 .. 00:10
            c["now"] = start + timedelta(minutes=20 * i)
            deal(shoe, tie(i), [stake("100")])
    day = session.gaming_day
    (row,) = stats.table_hours(day, day)
    assert row["table_name"] == "Table 1"
    # one evening: 21h 2 coups, 22h 3, 23h 3, 0h 1 (still the same gaming day)
    assert row["hours"] == {21: D("2.0"), 22: D("3.0"), 23: D("3.0"), 0: D("1.0")}
