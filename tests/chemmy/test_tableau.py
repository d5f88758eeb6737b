"""The tableau as versioned data, and the punter's rule (docs/rules.md, "The
banker's tableau")."""

from __future__ import annotations

import json

import pytest

from tables.chemmy import (
    PUNTO_BANCO_TABLEAU,
    STANDARD_TABLEAU,
    Action,
    Tableau,
    evaluate,
    punter_action,
)


@pytest.fixture(autouse=True)
def _clear_cache():
    # Overrides tests/conftest.py's Django cache fixture: no Django here.
    yield


# docs/rules.md, "The banker's tableau", pasted verbatim: an independent copy of the
# data, so a typo in the engine's table cannot agree with itself.
RULES_MD_TABLE = """
| 0, 1, 2 | D | D | D | D | D | D | D | D | D | D | D |
| 3 | D | D | D | D | D | D | D | D | D | S | O |
| 4 | D | S | S | D | D | D | D | D | D | S | S |
| 5 | D | S | S | S | S | O | D | D | D | S | S |
| 6 | S | S | S | S | S | S | S | D | D | S | S |
| 7 | S | S | S | S | S | S | S | S | S | S | S |
"""


def rules_md_rows() -> dict[int, list[str]]:
    rows = {}
    for line in RULES_MD_TABLE.strip().splitlines():
        head, *cells = [c.strip() for c in line.strip().strip("|").split("|")]
        for total in head.split(","):
            rows[int(total)] = cells
    return rows


def test_standard_tableau_is_rules_md_cell_for_cell():
    expected = rules_md_rows()
    assert sorted(expected) == list(range(8))
    assert STANDARD_TABLEAU.version == "chemmy-standard-1"
    for total, cells in expected.items():
        assert len(cells) == 11
        assert [a.value for a in STANDARD_TABLEAU.rows[total]] == cells
        assert STANDARD_TABLEAU.banker_action(total, None).value == cells[0]
        for v in range(10):
            assert STANDARD_TABLEAU.banker_action(total, v).value == cells[1 + v]


@pytest.mark.parametrize("tableau", [STANDARD_TABLEAU, PUNTO_BANCO_TABLEAU])
def test_to_dict_from_dict_round_trip_through_json(tableau):
    data = json.loads(json.dumps(tableau.to_dict()))
    assert data["version"] == tableau.version
    assert sorted(data["rows"]) == [str(t) for t in range(8)]
    again = Tableau.from_dict(data)
    assert again == tableau
    assert again.to_dict() == tableau.to_dict()


def test_to_dict_shape():
    d = STANDARD_TABLEAU.to_dict()
    assert d["rows"]["3"] == list("DDDDDDDDDSO")
    assert d["rows"]["5"] == list("DSSSSODDDSS")
    assert set(d) == {"version", "rows"}


def _rows(**changes):
    rows = {str(t): ["S"] * 11 for t in range(8)}
    rows.update(changes)
    return rows


def test_from_dict_builds_a_house_variant():
    variant = Tableau.from_dict(
        {"version": "house-2", "rows": _rows(**{"5": ["D"] * 11})}
    )
    assert variant.version == "house-2"
    assert variant.banker_action(5, 9) is Action.DRAW
    assert variant.banker_action(6, 9) is Action.STAND
    verdict = evaluate(["KS", "6S"], ["KH", "5H", "2C"], tableau=variant)
    assert verdict.findings == ()
    assert verdict.tableau_version == "house-2"


def test_from_dict_accepts_integer_keys():
    rows = {t: ["O"] * 11 for t in range(8)}
    assert Tableau.from_dict({"version": "v", "rows": rows}).banker_action(0, 0) is (
        Action.OPTIONAL
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "tableau"),
        ({"rows": _rows()}, "version"),
        ({"version": "", "rows": _rows()}, "version"),
        ({"version": 3, "rows": _rows()}, "version"),
        ({"version": "v"}, "rows"),
        ({"version": "v", "rows": [["S"] * 11] * 8}, "rows"),
        ({"version": "v", "rows": _rows(), "extra": 1}, "extra"),
        ({"version": "v", "rows": {str(t): ["S"] * 11 for t in range(7)}}, "7"),
        ({"version": "v", "rows": _rows(**{"8": ["S"] * 11})}, "'8'"),
        ({"version": "v", "rows": _rows(x=["S"] * 11)}, "'x'"),
        ({"version": "v", "rows": _rows(**{"-1": ["S"] * 11})}, "'-1'"),
        ({"version": "v", "rows": {**_rows(), 3: ["S"] * 11}}, "twice"),
        ({"version": "v", "rows": _rows(**{"4": ["S"] * 10})}, "rows['4']"),
        ({"version": "v", "rows": _rows(**{"4": ["S"] * 12})}, "rows['4']"),
        ({"version": "v", "rows": _rows(**{"4": "SSSSSSSSSSS"})}, "rows['4']"),
        ({"version": "v", "rows": _rows(**{"2": ["S"] * 10 + ["X"]})}, "rows['2'][10]"),
        ({"version": "v", "rows": _rows(**{"2": ["d"] + ["S"] * 10})}, "rows['2'][0]"),
    ],
)
def test_from_dict_validates_and_names_the_problem(data, problem):
    with pytest.raises(ValueError) as err:
        Tableau.from_dict(data)
    assert problem in str(err.value)


def test_rows_are_read_only():
    with pytest.raises(TypeError):
        STANDARD_TABLEAU.rows[3] = (Action.DRAW,) * 11  # type: ignore[index]


@pytest.mark.parametrize(("total", "third"), [(8, None), (9, 3), (-1, None), (3, 10)])
def test_banker_action_refuses_out_of_range(total, third):
    with pytest.raises(ValueError):
        STANDARD_TABLEAU.banker_action(total, third)


@pytest.mark.parametrize(
    ("total", "third", "action"),
    [
        (3, 8, "S"),
        (3, 9, "D"),  # chemmy: optional
        (3, 7, "D"),
        (4, 1, "S"),
        (4, 2, "D"),
        (4, 7, "D"),
        (4, 8, "S"),
        (5, 3, "S"),
        (5, 4, "D"),  # chemmy: optional
        (5, 7, "D"),
        (5, None, "D"),
        (6, None, "S"),
        (6, 5, "S"),
        (6, 6, "D"),
        (6, 7, "D"),
        (6, 8, "S"),
        (7, 6, "S"),
        (2, 8, "D"),
        (0, None, "D"),
    ],
)
def test_punto_banco_spot_checks(total, third, action):
    assert PUNTO_BANCO_TABLEAU.banker_action(total, third).value == action


def test_punto_banco_has_no_optional_cell_and_differs_where_rules_md_says():
    assert PUNTO_BANCO_TABLEAU.version == "punto-banco-1"
    cells = {
        (t, c)
        for t in range(8)
        for c in range(11)
        if PUNTO_BANCO_TABLEAU.rows[t][c] != STANDARD_TABLEAU.rows[t][c]
    }
    # banker 3 against a 9 and banker 5 against a 4: the standard's O cells.
    assert cells == {(3, 10), (5, 5)}
    assert all(
        a is not Action.OPTIONAL
        for row in PUNTO_BANCO_TABLEAU.rows.values()
        for a in row
    )


def test_evaluate_with_punto_banco_records_its_version():
    # banker 3 draws against a 9 under punto banco: standing is a false draw
    verdict = evaluate(["KS", "2S", "9D"], ["KH", "3H"], tableau=PUNTO_BANCO_TABLEAU)
    assert verdict.tableau_version == "punto-banco-1"
    assert [f.code for f in verdict.findings] == ["false_draw"]
    assert verdict.banker_choice is None
    # ... while the standard tableau leaves it to the banker
    verdict = evaluate(["KS", "2S", "9D"], ["KH", "3H"])
    assert verdict.findings == ()
    assert verdict.banker_choice == "stand"


@pytest.mark.parametrize(
    ("total", "action"),
    [(0, "D"), (1, "D"), (2, "D"), (3, "D"), (4, "D"), (5, "O"), (6, "S"), (7, "S")],
)
def test_punter_action(total, action):
    assert punter_action(total).value == action


@pytest.mark.parametrize("total", [8, 9, -1, 10, None, "5"])
def test_punter_action_refuses_naturals_and_nonsense(total):
    with pytest.raises(ValueError):
        punter_action(total)


def test_action_values():
    assert [a.value for a in Action] == ["D", "S", "O"]
    assert Action("D") is Action.DRAW
