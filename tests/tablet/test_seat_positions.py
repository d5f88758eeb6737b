"""The table map's seats (tables/tablet/coup.py seat_positions) never cover
one another, the map's edge or the felt's words, for every seat count a
table may have (2 to 12), at both tablet sizes: a pure geometry check with
the sizes tablet.css gives them (the browser test in test_layout.py looks at
a nine-seat table on the real page)."""

from __future__ import annotations

import pytest

from tables.tablet.coup import seat_positions

# The map's box and a seat's width at each size (tablet.css: .table-map,
# .seat; narrower past ten seats); a seat three lines tall (seat number,
# amount, what was declined: coup.js stakeInfo) and one with no stake.
SIZES = {"landscape": (436.0, 260.0, 104.0), "portrait": (415.0, 270.0, 100.0)}
MANY_WIDTH = 80.0
TALL, BARE = 80.0, 60.0
FELT_WORDS = (0.25, 0.32, 0.75, 0.68)  # .felt-label: left, top, right, bottom


def boxes(n: int, size: str, height: float):
    width_map, height_map, width = SIZES[size]
    out = []
    for p in seat_positions(n):
        w = MANY_WIDTH if p["many"] else width
        x = p["x"] / 100 * width_map
        y = p["y"] / 100 * height_map
        top = {"top": y, "bottom": y - height, "side": y - height / 2}[p["row"]]
        out.append((p["n"], (x - w / 2, top, x + w / 2, top + height)))
    return out


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("n", range(2, 13))
def test_no_seat_covers_another_or_leaves_the_map(n, size):
    width_map, height_map, _ = SIZES[size]
    seats = boxes(n, size, TALL)
    assert [k for k, _ in seats] == list(range(1, n + 1))
    for k, (left, top, right, bottom) in seats:
        # inside the map (a pixel of rounding at the sides): the "croupier"
        # label under the map and the controls above it stay clear
        assert left >= -1 and right <= width_map + 1, (n, size, k)
        assert top >= 0 and bottom <= height_map, (n, size, k)
    for i, (k, a) in enumerate(seats):
        for m, b in seats[i + 1:]:
            assert not overlap(a, b), (n, size, k, m)


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("n", range(2, 13))
def test_the_felt_s_words_are_clear_of_the_resting_seats(n, size):
    """No bank open: the seats hold no stake, the felt says so in the middle."""
    width_map, height_map, _ = SIZES[size]
    left, top, right, bottom = FELT_WORDS
    words = (left * width_map, top * height_map, right * width_map,
             bottom * height_map)
    for k, box in boxes(n, size, BARE):
        assert not overlap(box, words), (n, size, k)


def test_seat_one_is_on_the_croupier_s_right_and_the_round_closes_on_his_left():
    seats = seat_positions(9)
    first, last = seats[0], seats[-1]
    assert first["row"] == last["row"] == "bottom"
    assert last["x"] < 50 < first["x"]
    # and the round goes up the right side, across the top, down the left
    assert [s["row"] for s in seats] == [
        "bottom", "bottom", "side", "top", "top", "top", "side", "bottom", "bottom"]
