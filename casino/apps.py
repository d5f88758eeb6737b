from django.apps import AppConfig


class CasinoConfig(AppConfig):
    name = "casino"
    verbose_name = "Casino"

    def ready(self):
        from . import accounts

        accounts.connect()  # user and role changes go to the trail

        # no anchor signed before the keyed chain under it is checked
        from .anchors import chain_check_register
        from .chain_check import chain_checked

        chain_check_register(chain_checked)
