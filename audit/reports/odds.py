"""The exact odds live with the rules engine (tables/chemmy/odds.py), where the
floor's rollups weigh each coup's expected levy as it is written; the reports
read them from there."""

from tables.chemmy.odds import (
    Odds,
    as_decimal,
    chemmy_odds,
    compute_odds,
    house_odds,
    levy,
    punto_banco_odds,
)

__all__ = [
    "Odds",
    "as_decimal",
    "chemmy_odds",
    "compute_odds",
    "house_odds",
    "levy",
    "punto_banco_odds",
]
