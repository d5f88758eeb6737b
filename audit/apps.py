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
        # A shoe's close, once committed, asks the live surveillance for a
        # look (audit/surveillance/live.py: sent to Celery, off the close).
        from .surveillance.live import live_dispatch

        hooks.register_shoe_closed(live_dispatch)
        # A record found changed outside the app: the alarm is a flag; and a
        # flag's status must be its decisions' (casino/continuity.py, trail).
        from casino import continuity, trail

        from .services.integrity import flags_state_problems, integrity_alarm

        continuity.register_alarm(integrity_alarm)
        if flags_state_problems not in trail.DERIVED_CHECKS:
            trail.DERIVED_CHECKS.append(flags_state_problems)
