from django.apps import AppConfig


class CasinoConfig(AppConfig):
    name = "casino"
    verbose_name = "Casino"

    def ready(self):
        from . import accounts

        accounts.connect()  # user and role changes go to the trail

