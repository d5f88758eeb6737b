from django.apps import AppConfig


class TablesConfig(AppConfig):
    name = "tables"
    verbose_name = "Tables"

    def ready(self):
        from casino.api import refusal_register

        from .chemmy import CoupError

        # The engine's structural refusals are 400s naming their field.
        refusal_register(CoupError)

        from casino import warm

        warm.register(warm_odds)


def warm_odds() -> None:
    """The exact odds of the standard play at every shoe size, which a coup's
    expected levy needs (tables/rollups.py): enumerated once per process,
    before the first coup rather than in it (casino/warm.py)."""
    from .chemmy.odds import house_odds
    from .models import HouseRules

    field = HouseRules._meta.get_field("decks")
    low = min((v.limit_value for v in field.validators
               if type(v).__name__ == "MinValueValidator"), default=1)
    high = max((v.limit_value for v in field.validators
                if type(v).__name__ == "MaxValueValidator"), default=8)
    for decks in sorted(range(low, high + 1), key=lambda d: d != field.default):
        house_odds(decks=decks)
