from django.apps import AppConfig


class TabletConfig(AppConfig):
    """The croupier's tablet pages (Django templates + htmx)."""

    name = "tables.tablet"
    label = "tablet"
    verbose_name = "Croupier tablet"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from .language import on_login
        from .pins import forget_on_sign_in
        from .theme import on_login as theme_on_login

        user_logged_in.connect(on_login, dispatch_uid="tablet-language-on-login")
        user_logged_in.connect(theme_on_login, dispatch_uid="tablet-theme-on-login")
        user_logged_in.connect(
            forget_on_sign_in, dispatch_uid="tablet-pin-attempts-on-login"
        )
