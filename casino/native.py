"""A field's value as the database will give it back, from whatever Python
form it was written in (issue 33 item 0).

The trail digests a row at its write, from the instance in hand, and
verify_trail digests it again from the row read back. The two must agree
whatever form the writer used: beat writes an interval's `every` as 900.0
(a float) into an integer column and PostgreSQL gives back 900; a decimal
written as "1.5" comes back as Decimal("1.50"); a naive datetime is stored in
the default time zone; a date written into a DateTimeField comes back as its
midnight; an integer written into a BooleanField comes back as True. So
before a value is digested it goes through what the database will do to it:
the field's own conversion (`to_python`, which Django's `get_prep_value`
applies on the way in too), the rounding of the column's decimal places
(PostgreSQL's numeric rounds a half away from zero; on SQLite Django's
converter quantizes half to even), the default time zone for a naive
datetime (as Django's DateTimeField stores one).

`native(field)` gives, per field and once, the type a value read back has
and the function that brings any other form to it; a value already of that
type (the common case, and every value read back) is taken as it is, so a
row read back digests exactly as before. JSON values are handled by the
trail's own canonical form (casino/trail.py `_canonical`), which folds the
number forms jsonb rewrites.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Any

Fix = Callable[[Any], Any]

# The Python type each kind of column gives back (Django's converters).
_TYPES: dict[str, type] = {
    "AutoField": int, "BigAutoField": int, "SmallAutoField": int,
    "IntegerField": int, "BigIntegerField": int, "SmallIntegerField": int,
    "PositiveIntegerField": int, "PositiveBigIntegerField": int,
    "PositiveSmallIntegerField": int,
    "BooleanField": bool, "FloatField": float,
    "DateTimeField": datetime, "DateField": date, "TimeField": time,
    "DurationField": timedelta, "UUIDField": uuid.UUID,
    "CharField": str, "TextField": str, "SlugField": str, "EmailField": str,
    "URLField": str, "FilePathField": str, "FileField": str, "ImageField": str,
    "GenericIPAddressField": str,
}
# How the database rounds a decimal with more places than its column.
_ROUNDING = {"postgresql": ROUND_HALF_UP}
_DEFAULT_ROUNDING = ROUND_HALF_EVEN  # SQLite: Django's converter's quantize


def internal_type(field) -> str:
    """The column's kind; a foreign key's is its target's."""
    while field.is_relation:
        field = field.target_field
    return field.get_internal_type()


def db_rounding() -> str:
    """How the default database rounds a decimal with more places than its
    column keeps."""
    from django.db import connection

    return _ROUNDING.get(connection.vendor, _DEFAULT_ROUNDING)


def decimal_places(value: Decimal, quant: Decimal) -> Decimal:
    """A Decimal with its column's places, rounded as the database rounds
    it (the app's own amounts have their places already: one quantize)."""
    rounded = value.quantize(quant)
    if rounded != value:  # more places than the column keeps
        rounded = value.quantize(quant, rounding=db_rounding())
    return rounded


def aware(value: datetime) -> datetime:
    """A naive datetime as DateTimeField.get_prep_value stores it (USE_TZ):
    in the default time zone."""
    from django.utils import timezone

    return timezone.make_aware(value, timezone.get_default_timezone())


def _decimal(field) -> Fix:
    def fix(value):
        # "1.5", 2, 1.1 (in max_digits' context, as Django converts it);
        # the places are the trail's canonical form's (decimal_places)
        return field.to_python(value)

    return fix


def _datetime(field) -> Fix:
    def fix(value):
        if not isinstance(value, datetime):
            if isinstance(value, date):  # stored as its midnight
                value = datetime(value.year, value.month, value.day)
            else:
                value = field.to_python(value)  # a string
        if value is not None and value.tzinfo is None:
            value = aware(value)
        return value

    return fix


def _float(field) -> Fix:
    def fix(value):
        value = field.to_python(value)
        return None if value is None else float(value)

    return fix


def _plain(field) -> Fix:
    def fix(value):
        return field.to_python(value)

    return fix


def native(field) -> tuple[type | None, Fix | None]:
    """(the type a value of `field` has when read back, the function bringing
    another form to it; None where the trail's canonical form does it all:
    JSON). A Decimal's places and a naive datetime's zone are the canonical
    form's too (`decimal_places`, `aware`), so that a value already of its
    type costs one type check."""
    kind = internal_type(field)
    if kind == "JSONField":
        return None, None
    if kind == "DecimalField":
        return Decimal, _decimal(field)
    if kind == "DateTimeField":
        # a naive one is a datetime too: the canonical form makes it aware
        return datetime, _datetime(field)
    if kind == "FloatField":
        return float, _float(field)
    return _TYPES.get(kind), _plain(field)
