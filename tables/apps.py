from django.apps import AppConfig


class TablesConfig(AppConfig):
    name = "tables"
    verbose_name = "Tables"

    def ready(self):
        from casino.api import refusal_register

        from .chemmy import CoupError

        # The engine's structural refusals are 400s naming their field.
        refusal_register(CoupError)
