"""Classes DRF's settings name (paginator, parser), and the API's strict
request fields. DRF imports them while it imports its own views, so this
module must not import those views back."""

import copy
import re
from decimal import Decimal

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import parsers, renderers, serializers
from rest_framework.exceptions import APIException, ParseError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.utils.encoders import JSONEncoder


class DecimalAsTextEncoder(JSONEncoder):
    """Every Decimal leaves as a string ("8072.10", not 8072.1): money and
    exact rates stay exact for the reader, whichever view built the body (a
    serializer's DecimalField already does so; a dict built by hand, a
    report's rows, did not: DRF's own encoder turns a Decimal into a float)."""

    def default(self, obj):
        if isinstance(obj, Decimal):
            return str(obj)
        return super().default(obj)


class JSONRenderer(renderers.JSONRenderer):
    encoder_class = DecimalAsTextEncoder


class Pagination(LimitOffsetPagination):
    """limit/offset with a ceiling: `?limit=10**30` is not a way to read a
    whole table in one response (nor, on SQLite, a LIMIT it cannot hold)."""

    max_limit = 1000


class PayloadTooLarge(APIException):
    status_code = 413
    default_detail = "the request body is too large"
    default_code = "too_large"


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with two guards. DRF reads the body stream itself, so
    Django's DATA_UPLOAD_MAX_MEMORY_SIZE never applies to JSON: check it here
    (413). And a body nested a few thousand levels deep makes the decoder
    raise RecursionError (a 500): that is a parse error like any other (400)."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if request is not None and limit is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                raise PayloadTooLarge(
                    f"the request body is {length} bytes; the limit is {limit}"
                )
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None


class CharField(serializers.CharField):
    """A text field that takes text only. DRF's turns a number into its
    digits (`"reason": 1276` becomes "1276"); the API's schema says string,
    and a wrong type is refused naming the field, as every other."""

    default_error_messages = {"invalid": "must be a string, not {kind}"}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", kind=type(data).__name__)
        return super().to_internal_value(data)


def _kind(data) -> str:
    """The JSON type a client sent, in the schema's words."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "boolean"
    if isinstance(data, int | float):
        return "number"
    if isinstance(data, str):
        return "string"
    if isinstance(data, list | tuple):
        return "array"
    return "object"


class IntegerField(serializers.IntegerField):
    """A whole number in a request body: a JSON integer, as the schema says
    (`"type": "integer"`). DRF's also takes "2", 2.0 and true (as 1); a
    tablet that sends a seat as text has a bug worth a 400 naming the field,
    not a guess. (Query strings are text by nature: their serializers keep
    DRF's field.)"""

    default_error_messages = {
        "type": "must be a JSON integer (such as 2), not a {kind}",
        "fraction": "must be a JSON integer (such as 2), not a number with a "
        "decimal point",
    }

    def to_internal_value(self, data):
        if type(data) is not int:  # bool is a subclass of int: refused too
            if isinstance(data, float) and not isinstance(data, bool):
                self.fail("fraction")
            self.fail("type", kind=_kind(data))
        return super().to_internal_value(data)


class DecimalField(serializers.DecimalField):
    """An amount (money, a rate) in a request body: a JSON string in plain
    decimal notation, as the schema's pattern says: ASCII digits, no leading
    zero, at most `decimal_places` after a point; no sign (no amount in a
    request is negative, and "-0" is not zero to a reader), no exponent
    ("1e3"), no NaN or Infinity, no spaces, and never a JSON number (50.5 is
    a binary float before it reaches us). The pattern is the one check: the
    code matches it (`re.fullmatch`) and the schema publishes it
    (casino.api.CasinoAutoSchema), so the two cannot disagree."""

    default_error_messages = {
        "type": 'must be a decimal string such as "300.00", not a {kind}',
        "format": 'must be a decimal string such as "300.00": digits, at most '
        "{places} after the point, no sign, exponent or spaces",
    }

    def __init__(self, max_digits: int, decimal_places: int, **kwargs):
        minimum = kwargs.get("min_value")
        if minimum is None or minimum < 0:
            raise ValueError("a request amount is never negative: give min_value")
        super().__init__(max_digits, decimal_places, coerce_to_string=True, **kwargs)
        whole = max_digits - decimal_places
        # [0-9], not \d: Python's \d takes other scripts' digits ("٣"),
        # ECMAScript's (the schema's readers) does not.
        self.pattern = (
            rf"^(0|[1-9][0-9]{{0,{whole - 1}}})(\.[0-9]{{1,{decimal_places}}})?$"
        )
        self._regex = re.compile(self.pattern)

    def validate_empty_values(self, data):
        # DRF's DecimalField reads "" (or spaces) as null when allow_null;
        # the schema's null is JSON null, and "" is a malformed amount.
        return serializers.Field.validate_empty_values(self, data)

    def matches(self, data) -> bool:
        """Does this JSON value have the form the schema states?"""
        return isinstance(data, str) and self._regex.fullmatch(data) is not None

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("type", kind=_kind(data))
        if not self.matches(data):
            self.fail("format", places=self.decimal_places)
        return super().to_internal_value(data)


class BooleanField(serializers.BooleanField):
    """true or false in a request body, as the schema says. DRF's also takes
    "yes", "on", 1 and "0": a house rule switched by a typo is worth a 400."""

    default_error_messages = {"invalid": "must be a JSON boolean, not a {kind}"}

    def to_internal_value(self, data):
        if type(data) is not bool:
            self.fail("invalid", kind=_kind(data))
        return data


class PrototypeFields:
    """For the input serializers of the tablet's busiest requests (a coup, a
    banker turn): each instance gets shallow copies of field prototypes made
    once per class. DRF deep-copies every declared field per instance, which
    re-runs each field's __init__ (and a nested serializer's) on every
    request: a third of a coup's validation (bench/profile_coup.py).

    A field keeps nothing between validations (its settings, validators and
    messages are read, never written, while validating), so copies may share
    them; each copy gets its own binding (name, parent), a list's child is
    copied and re-parented with it, and a nested serializer makes its own
    bound fields the same way."""

    def get_fields(self):
        cls = type(self)
        prototypes = cls.__dict__.get("_prototype_fields")
        if prototypes is None:  # once per class (a race makes equal copies)
            prototypes = super().get_fields()  # DRF's deep copy, unbound
            cls._prototype_fields = prototypes
        return {name: _fresh(field) for name, field in prototypes.items()}


# What a serializer keeps of one use of it: never carried into a copy.
_PER_USE = ("fields", "_validated_data", "_errors", "_data", "initial_data")


def _fresh(field):
    new = copy.copy(field)
    if isinstance(field, serializers.BaseSerializer):
        for name in _PER_USE:
            new.__dict__.pop(name, None)
    child = getattr(field, "child", None)
    if isinstance(field, serializers.ListField) and child is not None:
        new.child = _fresh(child)
        new.child.parent = new  # bound once by ListField (name "", source "")
    return new


@extend_schema_field(
    {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
)
class _Message(serializers.CharField):
    """A string; a list of messages only when a request field is itself named
    `detail` or `code` (a filter called `code`, say): its errors keep the key."""


class ErrorSerializer(serializers.Serializer):
    """Every 4xx body: `detail` names the field first ("stakes[0].amount: ..."),
    `code` says what kind of refusal, and each offending field maps to its
    messages ({"punter": [...], "stakes": {"0": {"amount": [...]}}})."""

    detail = _Message()
    code = _Message(required=False)
