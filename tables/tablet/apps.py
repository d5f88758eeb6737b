from django.apps import AppConfig


class TabletConfig(AppConfig):
    """The croupier's tablet pages (Django templates + htmx)."""

    name = "tables.tablet"
    label = "tablet"
    verbose_name = "Croupier tablet"
