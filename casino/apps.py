from django.apps import AppConfig


class CasinoConfig(AppConfig):
    name = "casino"
    verbose_name = "Casino"

    def ready(self):
        from . import accounts

        accounts.connect()  # user and role changes go to the trail

        from django.contrib.auth.models import User
        from django.db.models.signals import m2m_changed

        from .roles import forget_roles

        m2m_changed.connect(
            forget_roles, sender=User.groups.through, dispatch_uid="casino.forget_roles"
        )
