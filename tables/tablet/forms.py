"""Forms of the tablet's set-up screens. They check what a croupier can get
wrong before the service does, with a message in the croupier's language;
the services stay the authority (their refusals are shown as form errors)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from ..models import PLAYER_CARD_MAX
from ..services.facts import PLAYER_CARD_RE
from ..services.floor import CARDS_LEFT_MAX
from . import theme

MAX_MONEY = Decimal("999999999999.99")


def money_field(**kwargs) -> forms.DecimalField:
    return forms.DecimalField(
        max_digits=14,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=MAX_MONEY,
        localize=False,
        widget=forms.NumberInput(attrs={"inputmode": "decimal", "step": "0.01"}),
        **kwargs,
    )


class ShoeOpenForm(forms.Form):
    decks = forms.IntegerField(
        label=_("Decks in the shoe"),
        min_value=1,
        max_value=8,
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )
    burned = forms.IntegerField(
        label=_("Burned cards"),
        min_value=0,
        initial=0,
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )

    def clean(self):
        data = super().clean()
        decks, burned = data.get("decks"), data.get("burned")
        if decks and burned is not None and burned > 52 * decks - 7:
            self.add_error(
                "burned",
                _("At most %(n)s cards can be burned from %(decks)s decks.")
                % {"n": 52 * decks - 7, "decks": decks},
            )
        return data


class ShoeCloseForm(forms.Form):
    """The cards the croupier counted left undealt: the tablet always asks
    (docs/rules.md, "The shoe"); a count that does not make up the shoe is
    recorded as it is, and flagged."""

    cards_left = forms.IntegerField(
        label=_("Cards counted left"),
        min_value=0,
        max_value=CARDS_LEFT_MAX,
        error_messages={
            "required": _("Count the cards left in the shoe and enter the number."),
            "invalid": _("Enter the number of cards left, in digits."),
        },
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )


def player_card_field() -> forms.CharField:
    return forms.CharField(
        label=_("Player's card number (optional)"),
        required=False,
        max_length=PLAYER_CARD_MAX,
        widget=forms.TextInput(
            attrs={"autocomplete": "off", "autocapitalize": "characters",
                   "spellcheck": "false"}
        ),
    )


def clean_player_card(value: str) -> str:
    value = (value or "").strip().upper()
    if value and not PLAYER_CARD_RE.fullmatch(value):
        raise forms.ValidationError(
            _("A card number is letters and digits only, at most %(n)s.")
            % {"n": PLAYER_CARD_MAX}
        )
    return value


class TurnOpenForm(forms.Form):
    """A new bank: any seat, at least the minimum banco; the banker's player
    card when he shows one."""

    seat = forms.TypedChoiceField(label=_("Banker's seat"), coerce=int)
    bank = money_field(label=_("Bank"))
    player_card = player_card_field()

    def clean_player_card(self):
        return clean_player_card(self.cleaned_data.get("player_card"))

    def __init__(self, *args, seats: int, minimum_banco: Decimal, **kwargs):
        super().__init__(*args, **kwargs)
        self.minimum_banco = minimum_banco
        self.fields["seat"].choices = [(n, str(n)) for n in range(1, seats + 1)]
        self.fields["bank"].widget.attrs["min"] = str(minimum_banco)

    def clean_bank(self):
        bank = self.cleaned_data["bank"]
        if bank < self.minimum_banco:
            raise forms.ValidationError(
                _("The bank must be at least the minimum banco, %(minimum)s.")
                % {"minimum": self.minimum_banco}
            )
        return bank


class PreferencesForm(forms.Form):
    language = forms.ChoiceField(
        label=_("Language"),
        required=False,
        choices=[("", _("As the browser says"))] + list(settings.LANGUAGES),
    )


class ThemeForm(forms.Form):
    theme = forms.ChoiceField(
        label=_("Theme"), choices=theme.CHOICES, widget=forms.RadioSelect
    )


class PinForm(forms.Form):
    """Set or change the PIN; the password proves it is you."""

    password = forms.CharField(
        label=_("Your password"),
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )
    pin = forms.RegexField(
        label=_("New PIN (4 to 8 digits)"),
        regex=r"^\d{4,8}$",
        error_messages={"invalid": _("A PIN is 4 to 8 digits.")},
        widget=forms.PasswordInput(
            attrs={"inputmode": "numeric", "autocomplete": "off"}
        ),
    )
    pin_again = forms.CharField(
        label=_("The same PIN again"),
        widget=forms.PasswordInput(
            attrs={"inputmode": "numeric", "autocomplete": "off"}
        ),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self):
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError(_("This is not your password."))
        return password

    def clean(self):
        data = super().clean()
        if data.get("pin") and data.get("pin") != data.get("pin_again"):
            self.add_error("pin_again", _("The two PINs differ."))
        return data


class UnlockForm(forms.Form):
    username = forms.CharField(
        label=_("Your user name"),
        max_length=150,
        widget=forms.TextInput(
            attrs={"autocapitalize": "none", "autocomplete": "username"}
        ),
    )
    pin = forms.CharField(
        label=_("PIN"),
        max_length=8,
        widget=forms.PasswordInput(
            attrs={"inputmode": "numeric", "autocomplete": "off"}
        ),
    )

