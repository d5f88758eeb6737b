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

        from django.contrib.auth.models import User
        from django.db.models.signals import m2m_changed

        from .roles import forget_roles

        m2m_changed.connect(
            forget_roles, sender=User.groups.through, dispatch_uid="casino.forget_roles"
        )
