"""Forms of the floor pages. They check shape; the services check the rules
(and their refusals come back as form errors naming the field)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from casino.bounds import day_validator
from tables import chemmy
from tables.services import StakeInput

from .models import Flag

MONEY = {"max_digits": 14, "decimal_places": 2}
ANNOUNCEMENTS = [(a.value, a.value.replace("_", " ")) for a in chemmy.Announcement]
MAX_STAKES = 12


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label=_("Reason"), max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": _("Why (required)")}))


class ConfirmForm(ReasonForm):
    fine_amount = forms.DecimalField(label=_("Fine"), required=False,
                                     min_value=Decimal("0.01"), **MONEY)


class QueueForm(forms.Form):
    table = forms.IntegerField(required=False, min_value=1)
    code = forms.CharField(required=False, max_length=32)
    side = forms.ChoiceField(required=False, choices=[
        ("", "any"), ("punter", "punter"), ("banker", "banker"), ("-", "-")])
    croupier = forms.IntegerField(required=False, min_value=1)
    gaming_day = forms.DateField(required=False,
                                 validators=[day_validator("gaming_day")])
    status = forms.ChoiceField(required=False, initial="open",
                               choices=[("", "any"), *Flag.Status.choices])
    severity = forms.ChoiceField(required=False, choices=[
        ("", "any"), ("critical", "critical"), ("warning", "warning")])


class CorrectionForm(forms.Form):
    """The coup as it really was: cards in dealing order, stakes, the bank the
    croupier declared. Stakes come as rows stake-N-seat/-standing/-amount/
    -announcement (an empty amount skips the row)."""

    p1 = forms.CharField(label=_("Punter 1"), max_length=3)
    b1 = forms.CharField(label=_("Banker 1"), max_length=3)
    p2 = forms.CharField(label=_("Punter 2"), max_length=3)
    b2 = forms.CharField(label=_("Banker 2"), max_length=3)
    p3 = forms.CharField(label=_("Punter 3"), max_length=3, required=False)
    b3 = forms.CharField(label=_("Banker 3"), max_length=3, required=False)
    declared_bank = forms.DecimalField(label=_("Declared bank"), required=False,
                                       min_value=Decimal("0.01"), **MONEY)
    reason = forms.CharField(label=_("Reason"), max_length=2000, required=False,
                             widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, data=None, **kwargs):
        super().__init__(data, **kwargs)
        self.stake_rows: list[dict] = []
        self.stake_errors: list[str] = []

    def clean(self):
        data = super().clean()
        self.stake_rows, self.stake_errors = parse_stakes(self.data)
        if not self.stake_rows and not self.stake_errors:
            self.stake_errors.append("stakes: at least one stake")
        if self.stake_errors:
            raise forms.ValidationError(self.stake_errors)
        return data

    def hands(self) -> tuple[list[str], list[str]]:
        d = self.cleaned_data
        punter = [d[k].strip() for k in ("p1", "p2", "p3") if d.get(k, "").strip()]
        banker = [d[k].strip() for k in ("b1", "b2", "b3") if d.get(k, "").strip()]
        return punter, banker

    def stakes(self) -> list[StakeInput]:
        return [StakeInput(**row) for row in self.stake_rows]

    @classmethod
    def initial_for(cls, coup) -> dict:
        out = {"declared_bank": coup.declared_bank}
        for side, cards in (("p", coup.punter_cards), ("b", coup.banker_cards)):
            for i, card in enumerate(cards, start=1):
                out[f"{side}{i}"] = card
        return out


def parse_stakes(data) -> tuple[list[dict], list[str]]:
    rows, errors = [], []
    for i in range(MAX_STAKES):
        amount = (data.get(f"stake-{i}-amount") or "").strip()
        if not amount:
            continue
        where = f"stakes[{len(rows)}]"
        seat = (data.get(f"stake-{i}-seat") or "").strip()
        standing = (data.get(f"stake-{i}-standing") or "").strip()
        announcement = data.get(f"stake-{i}-announcement") or "none"
        try:
            value = Decimal(amount)
            if not value.is_finite():
                raise ValueError
        except (ArithmeticError, ValueError):
            errors.append(f"{where}.amount: not an amount")
            continue
        if seat and not (seat.isascii() and seat.isdigit() and len(seat) <= 2):
            errors.append(f"{where}.seat: a seat number")
            continue
        rows.append({"amount": value, "seat": int(seat) if seat else None,
                     "standing": standing or None, "announcement": announcement})
    return rows, errors


def stake_rows_for(coup, extra: int = 2) -> list[dict]:
    rows = [{"seat": s.seat or "", "standing": s.standing, "amount": s.amount,
             "announcement": s.announcement} for s in coup.stakes.all()]
    rows += [{"seat": "", "standing": "", "amount": "", "announcement": "none"}
             for _ in range(extra)]
    return [{"i": i, **r} for i, r in enumerate(rows)]


def rows_from_post(data) -> list[dict]:
    out = []
    for i in range(MAX_STAKES):
        keys = [f"stake-{i}-{k}" for k in ("seat", "standing", "amount",
                                           "announcement")]
        if not any(k in data for k in keys):
            continue
        out.append({"i": i, "seat": data.get(keys[0], ""),
                    "standing": data.get(keys[1], ""),
                    "amount": data.get(keys[2], ""),
                    "announcement": data.get(keys[3], "none")})
    return out


class CountForm(forms.Form):
    counted = forms.DecimalField(label=_("Counted in the box"),
                                 min_value=Decimal("0"), **MONEY)
    reason = forms.CharField(label=_("Reason (a recount needs one)"), required=False,
                             max_length=2000,
                             widget=forms.Textarea(attrs={"rows": 2}))


class CroupierForm(forms.Form):
    croupier = forms.ModelChoiceField(
        label=_("Croupier"),
        queryset=get_user_model().objects.filter(
            is_active=True, groups__name="croupier").order_by("username"))
    reason = forms.CharField(label=_("Reason"), required=False, max_length=2000)


class StatsForm(forms.Form):
    day_from = forms.DateField(label=_("From"), required=False,
                               validators=[day_validator("day_from")])
    day_to = forms.DateField(label=_("To"), required=False,
                             validators=[day_validator("day_to")])
    table = forms.IntegerField(required=False, min_value=1)
