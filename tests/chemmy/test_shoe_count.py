"""The shoe's count at its close (docs/rules.md, "The shoe"): no database."""

from __future__ import annotations

import pytest

from tables.chemmy import FINDING_SEVERITY, shoe_count_finding


def test_a_shoe_that_adds_up_has_no_finding():
    assert shoe_count_finding(6, 5, 258, 49) is None
    assert shoe_count_finding(1, 0, 0, 52) is None
    assert shoe_count_finding(8, 0, 416, 0) is None


def test_the_rule_books_example_four_short():
    # docs/rules.md: 6 decks, 5 burned, 258 dealt, 45 counted left: 4 short.
    f = shoe_count_finding(6, 5, 258, 45)
    assert f is not None
    assert (f.code, f.severity, f.side) == ("shoe_count", "critical", None)
    assert dict(f.detail) == {
        "expected": 312, "dealt": 258, "burned": 5, "left": 45, "difference": -4,
    }
    assert "4 fewer" in f.message


def test_a_long_shoe_is_a_positive_difference():
    f = shoe_count_finding(6, 5, 258, 52)
    assert f.detail["difference"] == 3 and "3 more" in f.message


@pytest.mark.parametrize("left", range(0, 60))
def test_every_count_but_one_is_a_finding(left):
    f = shoe_count_finding(1, 2, 5, left)
    assert (f is None) == (left == 45)
    if f is not None:
        assert f.detail["difference"] == left - 45


@pytest.mark.parametrize(
    "args, name",
    [
        ((0, 0, 0, 0), "decks"),
        ((9, 0, 0, 0), "decks"),
        ((6, -1, 0, 0), "burned"),
        ((6, 0, -1, 0), "dealt"),
        ((6, 0, 0, -1), "left"),
        ((6, 0, 0, True), "left"),
        ((6, 0, 0, 4.0), "left"),
        ((6, 0, 0, "47"), "left"),
    ],
)
def test_bad_arguments_are_refused_by_name(args, name):
    with pytest.raises(ValueError, match=name):
        shoe_count_finding(*args)


def test_the_code_is_critical_in_the_rule_book_table():
    assert FINDING_SEVERITY["shoe_count"] == "critical"
