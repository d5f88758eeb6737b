"""Classes DRF's settings name (paginator, parser). DRF imports them while it
imports its own views, so this module must not import those views back."""

from django.conf import settings
from rest_framework import parsers, serializers
from rest_framework.exceptions import APIException, ParseError
from rest_framework.pagination import LimitOffsetPagination


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
