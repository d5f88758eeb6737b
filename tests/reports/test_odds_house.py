"""The odds as each house plays them: decks, tableau, the punter's 5 and the
banker's optional cells as prescribed (a free cell drawn), and the levy's
rounding; `manage.py odds --table`."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest
from django.core.management import CommandError, call_command

from audit.reports.odds import compute_odds, house_odds, levy
from tables.chemmy import PUNTO_BANCO_TABLEAU, STANDARD_TABLEAU
from tables.services import house_rules_change, table_create


def ordered_six_card_sequences(decks: int) -> int:
    """What the odds code enumerates: every coup is weighed by the ordered
    sequences of six cards it starts (the cards a coup does not use are the
    next ones dealt), so the three counts add up to n x (n-1) x ... x (n-5)
    for a shoe of n = 52 x decks cards."""
    n, total = 52 * decks, 1
    for i in range(6):
        total *= n - i
    return total


BANKER_CELLS = [
    {},
    {"3/9": "draw"},
    {"3/9": "stand"},
    {"5/4": "draw"},
    {"5/4": "stand"},
    {"3/9": "stand", "5/4": "stand"},
]
VARIANTS = [
    (decks, STANDARD_TABLEAU, five, cells)
    for decks in (6, 8)
    for five in ("free", "draw", "stand")
    for cells in BANKER_CELLS
] + [
    (decks, PUNTO_BANCO_TABLEAU, five, {})
    for decks in (6, 8)
    for five in ("free", "draw", "stand")
]


@pytest.mark.parametrize(
    "decks,tableau,five,cells", VARIANTS,
    ids=[f"{d}d-{t.version}-5{f}-{'+'.join(f'{k}{v}' for k, v in c.items()) or 'free'}"
         for d, t, f, c in VARIANTS],
)
def test_every_variant_adds_up_to_the_deals(decks, tableau, five, cells):
    odds = house_odds(decks=decks, tableau=tableau, punter_five=five,
                      banker_prescriptions=cells)
    assert odds.banker + odds.punter + odds.tie == ordered_six_card_sequences(decks)
    assert min(odds.banker, odds.punter, odds.tie) > 0
    # the play is the house's: the punter stands on 5 only where prescribed,
    # the banker stands only in the cells prescribed "stand"
    assert odds.punter_draws_on_5 is (five != "stand")
    assert set(odds.banker_stands) == {k for k, v in cells.items() if v == "stand"}
    # a free cell is played as the odds code always has: a draw
    same = compute_odds(
        decks=decks, tableau=tableau, punter_draws_on_5=five != "stand",
        banker_optional={(int(k[0]), int(k[2])): v == "draw" for k, v in cells.items()},
    )
    assert (odds.banker, odds.punter, odds.tie) == (same.banker, same.punter, same.tie)


@pytest.mark.parametrize("decks", [6, 8])
def test_prescriptions_change_the_counts_as_they_should(decks):
    free = house_odds(decks=decks)
    # prescribing what a free cell is played as already changes nothing...
    assert house_odds(decks=decks, punter_five="draw",
                      banker_prescriptions={"3/9": "draw", "5/4": "draw"}) == free
    # ...prescribing the other choice does, cell by cell
    counts = {
        (o.banker, o.punter, o.tie) for o in (
            free,
            house_odds(decks=decks, punter_five="stand"),
            house_odds(decks=decks, banker_prescriptions={"3/9": "stand"}),
            house_odds(decks=decks, banker_prescriptions={"5/4": "stand"}),
        )
    }
    assert len(counts) == 4
    # every optional cell drawn is punto banco's table
    pb = house_odds(decks=decks, tableau=PUNTO_BANCO_TABLEAU)
    assert (free.banker, free.punter, free.tie) == (pb.banker, pb.punter, pb.tie)


def test_a_cell_the_tableau_does_not_leave_open_is_refused():
    with pytest.raises(ValueError, match="not an optional cell"):
        house_odds(decks=6, banker_prescriptions={"6/stood": "draw"})
    with pytest.raises(ValueError, match="not an optional cell"):
        house_odds(decks=8, tableau=PUNTO_BANCO_TABLEAU,
                   banker_prescriptions={"3/9": "stand"})


# C, unit -> the levy per banker win by mode (worked out by hand: 5 % of
# 1,025.00 is 51.25, half-way between 51.20 and 51.30; of 1,075.00, 53.75)
LEVIES = [
    ("1025.00", "0.10", {"half_up": "51.30", "half_even": "51.20", "down": "51.20"}),
    ("1075.00", "0.10", {"half_up": "53.80", "half_even": "53.80", "down": "53.70"}),
    ("1000.00", "0.10", {"half_up": "50.00", "half_even": "50.00", "down": "50.00"}),
    ("333.00", "0.10", {"half_up": "16.70", "half_even": "16.60", "down": "16.60"}),
    ("333.00", "1.00", {"half_up": "17.00", "half_even": "17.00", "down": "16.00"}),
    ("10.10", "0.01", {"half_up": "0.51", "half_even": "0.50", "down": "0.50"}),
]


@pytest.mark.parametrize("covered,unit,by_mode", LEVIES)
def test_the_expected_levy_differs_from_rate_times_c_as_the_rounding_says(
    covered, unit, by_mode
):
    odds = house_odds(decks=6)
    rate, c, u = Decimal("0.05"), Decimal(covered), Decimal(unit)
    for mode, taken in by_mode.items():
        assert levy(c, rate=rate, unit=u, rounding=mode) == Decimal(taken)
        expected = odds.expected_levy(c, rate=rate, unit=u, rounding=mode)
        assert expected == odds.p_banker * Fraction(Decimal(taken))
        # the difference from rate x C x P(banker) is the rounding's, exactly
        unrounded = odds.expected_commission_per_unit(rate) * Fraction(c)
        assert expected - unrounded == odds.p_banker * (
            Fraction(Decimal(taken)) - Fraction(rate * c))


# -- manage.py odds ---------------------------------------------------------------


@pytest.fixture
def house_table(manager):
    table = table_create(user=manager, name="Maison", decks=8,
                         commission_unit=Decimal("0.10"))
    house_rules_change(
        table=table, user=manager, reason="the house's own play",
        punter_five="stand", banker_prescriptions={"3/9": "stand", "5/4": "draw"},
        commission_rounding="half_even",
    )
    return table


@pytest.mark.django_db
def test_the_command_takes_a_tables_own_rules(house_table, capsys):
    call_command("odds", "--table", "Maison", "--covered", "1025", "--covered",
                 "1075", "--json")
    out = json.loads(capsys.readouterr().out)
    mine = house_odds(decks=8, punter_five="stand",
                      banker_prescriptions={"3/9": "stand", "5/4": "draw"})
    assert out["counts"] == {"banker": mine.banker, "punter": mine.punter,
                             "tie": mine.tie, "total": ordered_six_card_sequences(8)}
    assert (out["table"], out["rules_version"], out["decks"]) == ("Maison", 2, 8)
    assert out["punter_draws_on_5"] is False and out["banker_stands_in"] == ["3/9"]
    assert out["commission_rounding"] == "half_even"
    assert [(x["covered"], x["levy"], x["unrounded"]) for x in out["levies"]] == [
        ("1025", "51.20", "51.2500"), ("1075", "53.80", "53.7500")]
    # the version before the change: as the table was created
    call_command("odds", "--table", str(house_table.pk), "--rules-version", "1",
                 "--json")
    first = json.loads(capsys.readouterr().out)
    assert first["rules_version"] == 1 and first["punter_draws_on_5"] is True
    assert first["banker_stands_in"] == [] and first["commission_rounding"] == "half_up"
    # an option given wins over the table's rule
    call_command("odds", "--table", "Maison", "--rounding", "down", "--covered",
                 "1025", "--decks", "6")
    text = capsys.readouterr().out
    assert "Maison: house rules v2" in text and "6 decks" in text
    assert "punter stands on 5 (prescribed)" in text and "3/9 stand" in text
    assert "a banker win takes 51.20 (51.2500 rounded to 0.10 down)" in text
    six = house_odds(decks=6, punter_five="stand",
                     banker_prescriptions={"3/9": "stand", "5/4": "draw"})
    assert f"{six.banker:,}" in text


@pytest.mark.django_db
def test_the_command_refuses_what_it_cannot_use(house_table):
    with pytest.raises(CommandError, match="unknown table"):
        call_command("odds", "--table", "Nowhere")
    with pytest.raises(CommandError, match="no rules version 9"):
        call_command("odds", "--table", "Maison", "--rules-version", "9")
    with pytest.raises(CommandError, match="needs --table"):
        call_command("odds", "--rules-version", "1")
    with pytest.raises(CommandError, match="not an optional cell"):
        call_command("odds", "--banker-cell", "6/stood=draw")
    with pytest.raises(CommandError, match="CELL=CHOICE"):
        call_command("odds", "--banker-cell", "3/9")
    with pytest.raises(CommandError, match="unit"):
        call_command("odds", "--unit", "0.001")
    with pytest.raises(CommandError, match="covered"):
        call_command("odds", "--covered", "-5")


def test_the_command_with_explicit_options(capsys):
    call_command("odds", "--decks", "6", "--punter-five", "stand", "--banker-cell",
                 "5/4=stand", "--json")
    out = json.loads(capsys.readouterr().out)
    mine = house_odds(decks=6, punter_five="stand",
                      banker_prescriptions={"5/4": "stand"})
    assert out["counts"]["banker"] == mine.banker
    assert out["banker_prescriptions"] == {"5/4": "stand"}


# -- what a report says it used ----------------------------------------------------


@pytest.mark.django_db
def test_reports_state_the_rules_they_weighed_with(croupier, manager, as_user,
                                                   tmp_path):
    from audit.reports import sheets, writers
    from tables.models import Coup

    from .conftest import DAY1, play

    play(croupier, DAY1, seed=61, prefix="Stated")
    r = as_user(manager).get("/api/v1/reports/commission/",
                             {"from_day": str(DAY1), "to_day": str(DAY1)})
    assert r.status_code == 200, r.content
    body = r.json()
    [rules] = body["house_rules"]
    assert rules["commission_rounding"] == "half_up"
    assert rules["commission_unit"] == "0.10" and rules["maximum_bank"] is None
    assert rules["punter_five"] == "free" and rules["banker_prescriptions"] == {}
    assert rules["coups"] == Coup.objects.count() > 0
    # money, the expectation and its band as decimal strings (casino/drf.py)
    total = body["total"]
    for key in ("covered", "commission", "expected", "band_low", "band_high"):
        assert isinstance(total[key], str) and Decimal(total[key]) >= 0, key
    # the CSV's stamp names them too
    doc = sheets.commission_document(
        params={"from_day": str(DAY1), "to_day": str(DAY1)}, user=manager)
    path = tmp_path / "c.csv"
    writers.write_csv(doc, path)
    text = path.read_text()
    assert "rounded to 0.10 half up" in text and "punter's 5 free" in text
    assert f"{rules['coups']} coups" in text
