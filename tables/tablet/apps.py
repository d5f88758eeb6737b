from django.apps import AppConfig


class TabletConfig(AppConfig):
    """The croupier's tablet pages (Django templates + htmx)."""

    name = "tables.tablet"
    label = "tablet"
    verbose_name = "Croupier tablet"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from .pins import forget_on_sign_in
        from .sign_in import on_login

        user_logged_in.connect(on_login, dispatch_uid="tablet-preferences-on-login")
        user_logged_in.connect(
            forget_on_sign_in, dispatch_uid="tablet-pin-attempts-on-login"
        )
