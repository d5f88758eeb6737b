from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit"

    def ready(self) -> None:
        # A new coup's findings raise their review flags in the coup's own
        # transaction (tables.services.hooks; audit/services/flag_raise.py).
        from tables.services import hooks

        from .services.flag_raise import FINDING_FLAGS, SHOE_FLAGS

        hooks.register(FINDING_FLAGS)
        # A shoe's own finding (shoe_count at its close), in the close's.
        hooks.register_shoe(SHOE_FLAGS)
