"""What the tablet keeps per person: the PIN that reopens a locked tablet and
the language the screens speak. The password stays Django's; the PIN is a
second, short secret that only unlocks a tablet already signed in for a shift
(it is hashed like a password and its attempts are rate-limited)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.hashers import check_password, make_password
from django.db import models
from django.utils.translation import gettext_lazy as _

from . import theme as themes


class TabletProfile(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="tablet_profile",
    )
    pin_hash = models.CharField(max_length=128, blank=True)
    # "" follows the browser; otherwise one of settings.LANGUAGES.
    language = models.CharField(
        _("language"), max_length=8, blank=True, choices=settings.LANGUAGES
    )
    # "day" or "night" (tables/tablet/theme.py): every page the user opens.
    theme = models.CharField(
        _("theme"),
        max_length=8,
        default=themes.DAY,
        choices=themes.CHOICES,
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"tablet profile of {self.user}"

    @property
    def has_pin(self) -> bool:
        return bool(self.pin_hash)

    def set_pin(self, pin: str) -> None:
        self.pin_hash = make_password(pin)

    def check_pin(self, pin: str) -> bool:
        return bool(self.pin_hash) and check_password(pin, self.pin_hash)


def profile_for(user) -> TabletProfile:
    """The user's profile; an unsaved one at the defaults while he has none
    (reading a page writes nothing: the first change saves it)."""
    profile = TabletProfile.objects.filter(user=user).first()
    return profile if profile is not None else TabletProfile(user=user)


class PinAttempts(models.Model):
    """The PIN lockout's counter: PIN attempts under one user name from one
    device (client address), as the sign-in lockout counts passwords.

    An attempt is *taken* before the PIN is checked, by one conditional
    UPDATE (``attempts < limit``) that the database applies row by row: of
    any number of parallel requests, at most ``limit`` get to check a PIN
    (tables/tablet/pins.py). Kept in the database, not the cache, so the
    limit holds with Redis down."""

    username = models.CharField(max_length=150)  # as typed, lower-cased
    address = models.CharField(max_length=45, blank=True)  # "" if unknown
    # Taken since the last right PIN: the failed ones and those being checked.
    attempts = models.PositiveSmallIntegerField(default=0)
    last_at = models.DateTimeField()  # the last attempt taken: the cool-off's start
    locked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("PIN attempts")
        verbose_name_plural = _("PIN attempts")
        constraints = [
            models.UniqueConstraint(
                fields=["username", "address"], name="tablet_pin_attempts_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.attempts} PIN attempts for {self.username} from {self.address}"
