"""API glue shared by the apps: errors as JSON that name the field, and a schema
that documents every error a view can answer."""

from __future__ import annotations

import re

from django import forms
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.views.defaults import page_not_found
from django_filters import rest_framework as filters
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import append_meta
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .dbsession import (
    chain_held,
    chain_held_response,
    trail_stopped,
    trail_stopped_response,
)
from .drf import DecimalField as StrictDecimalField
from .drf import ErrorSerializer, PayloadTooLarge
from .errors import ServiceError

# Refusals of code below the services that carry ``field`` and ``message``
# (the rules engine's CoupError: pure Python, it imports nothing of ours);
# their app registers them at start-up (refusal_register), so the ground floor
# names no app.
REFUSALS: tuple[type[Exception], ...] = ()


def refusal_register(kind: type[Exception]) -> None:
    """A 400 naming ``exc.field`` for every ``kind`` raised in a view."""
    global REFUSALS
    if kind not in REFUSALS:
        REFUSALS = (*REFUSALS, kind)


def exception_handler(exc, context):
    """DRF's handler, plus the domain errors: a service or engine refusal is a
    4xx whose body names the field ({"field": ["message"], "detail": ...}).
    DRF's own validation errors get the same shape: a `detail` that names the
    first offending field (nested ones as `stakes[0].amount`) and a `code`."""
    if isinstance(exc, ServiceError):
        return Response(
            {exc.field: [exc.message], "detail": str(exc), "code": exc.code},
            status=exc.status,
        )
    if isinstance(exc, REFUSALS):
        return Response(
            {exc.field: [exc.message], "detail": str(exc), "code": "invalid"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, RequestDataTooBig):  # a form body past the limit
        exc = PayloadTooLarge()
    stopped = trail_stopped(exc)
    if stopped:  # the witnesses named a fork or a rollback (casino/witness.py)
        return trail_stopped_response(context["request"], stopped)
    if isinstance(exc, OperationalError) and chain_held(exc):
        # The change log's chain held past lock_timeout (casino/dbsession.py):
        # say so, and alert, rather than "the database is unavailable".
        return chain_held_response(context["request"])
    if isinstance(exc, OperationalError | InterfaceError):
        # The database is down or restarting. The request did not commit (a
        # coup is one transaction), so the tablet retries with the same
        # Idempotency-Key; say so instead of a bare 500.
        return Response(
            {
                "detail": "the database is unavailable or busy; retry the same "
                "request (same Idempotency-Key) in a moment",
                "code": "unavailable",
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "1"},
        )
    response = drf_exception_handler(exc, context)
    if (
        response is not None
        and not isinstance(exc, ValidationError)
        and isinstance(response.data, dict)
    ):
        # DRF's own refusals (401, 403, 404, 405, 415, 429...) say what kind
        # too, as every other 4xx body does: "throttled", "not_found"...
        code = getattr(exc, "default_code", None)
        if code is None:  # Django's own, which DRF answers as its equivalents
            code = "not_found" if isinstance(exc, Http404) else "permission_denied"
        response.data.setdefault("code", code)
    if response is not None and isinstance(exc, ValidationError):
        data = response.data
        if not isinstance(data, dict):  # ValidationError("...") from a view
            data = {"non_field_errors": data}
        if "detail" not in data:
            data = {**data, "detail": first_error(data)}
        data.setdefault("code", "invalid")
        response.data = data
    return response


def first_error(errors, path: str = "") -> str:
    """`stakes[0].amount: A valid number is required.` from DRF's nested errors."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            if isinstance(key, int) or str(key).isdigit():
                sub = f"{path}[{key}]"
            else:
                sub = f"{path}.{key}" if path else str(key)
            found = first_error(value, sub)
            if found:
                return found
        return ""
    if isinstance(errors, list | tuple):
        for i, value in enumerate(errors):
            if isinstance(value, dict | list | tuple):
                found = first_error(value, f"{path}[{i}]")
                if found:
                    return found
            else:
                return f"{path}: {value}" if path else str(value)
        return ""
    return f"{path}: {errors}" if path else str(errors)


def not_found(request, exception=None):
    """handler404: JSON under /api/ (a tablet parses it), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return page_not_found(request, exception)


# The largest id a URL or a filter takes: 18 digits fit a 64-bit integer column.
MAX_ID = 999_999_999_999_999_999
_ID = re.compile(r"[0-9]{1,18}")


def parse_id(value) -> int | None:
    """An object id from a query string, a form or a session: ASCII digits
    ("²".isdigit() is true, int("²") fails), from 1 to what the database
    holds (SQLite overflows past 2**63). Anything else: None."""
    text = value if isinstance(value, str) else ""
    if _ID.fullmatch(text) and int(text) >= 1:
        return int(text)
    return None


class IdConverter:
    """`<id:pk>`: an object id as the database can hold it (at most 18 digits).
    Django's `<int:...>` takes any length, and SQLite raises OverflowError (a
    500) on an id past 2**63; this one answers 404 instead."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(int(value))


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(filters.NumberFilter):
    """A filter on an object id: a whole number the database can hold. A
    NumberFilter takes any decimal, and SQLite overflows (a 500) past 2**63;
    this one refuses it with a 400 naming the parameter."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


# status -> why a view may answer it; which ones apply is read off the view.
ERROR_DESCRIPTIONS = {
    400: "Invalid input; the body names the field",
    401: "Not signed in, or the token is unknown, expired or revoked",
    403: "Role not allowed (or CSRF check failed for a browser session)",
    404: "No such object",
    413: "The request body is too large",
    415: "Unsupported media type (send JSON)",
    429: "Too many requests; retry after the Retry-After header",
}


def reads_through_null(field) -> bool:
    """Does this serializer field's source cross a nullable model field?"""
    parent = getattr(field, "parent", None)  # unbound fields have none
    model = getattr(getattr(parent, "Meta", None), "model", None)
    source = getattr(field, "source", None)
    if model is None or not source or source == "*":
        return False
    for name in source.split("."):
        try:
            model_field = model._meta.get_field(name)
        except Exception:  # a property or a method: nothing to read off
            return False
        if not getattr(model_field, "concrete", False):
            return False  # a reverse relation: a list, never null
        if getattr(model_field, "null", False):
            return True
        model = getattr(model_field, "related_model", None)
        if model is None:
            return False
    return False


class CasinoAutoSchema(AutoSchema):
    """drf-spectacular's schema, plus the error responses each view can give.

    Views document their own responses with extend_schema; the errors that
    come from DRF's machinery rather than the view's code (authentication,
    permissions, parsing, filters, throttling, a missing object) are added
    here, read off the view's configuration, so a new endpoint is documented
    correctly without listing them by hand."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(
            path, path_regex, path_prefix, method, registry
        )
        if operation is None:
            return None
        responses = operation.setdefault("responses", {})
        for code in self._error_codes(operation):
            if str(code) not in responses:
                responses[str(code)] = self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, ERROR_DESCRIPTIONS[code]),
                    str(code),
                )
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        # A request amount (casino.drf.DecimalField): the pattern its code
        # matches, published as is, in place of drf-spectacular's looser one
        # (which lets through "-", "", "1." and Unicode digits).
        if isinstance(field, StrictDecimalField):
            meta = self._get_serializer_field_meta(field, direction)
            schema = {"type": "string", "format": "decimal", "pattern": field.pattern}
            return append_meta(schema, meta)
        return super()._map_serializer_field(field, direction, bypass_extensions)

    def _get_serializer_field_meta(self, field, direction):
        # A read-only field reading through a nullable foreign key (say
        # `closed_by = StringRelatedField()` on an open session) renders null,
        # but drf-spectacular only marks `allow_null` fields nullable.
        meta = super()._get_serializer_field_meta(field, direction)
        if getattr(field, "read_only", False) and "nullable" not in meta:
            if reads_through_null(field):
                meta["nullable"] = True
        return meta

    def _error_codes(self, operation) -> set[int]:
        view = self.view
        # Any request: a NUL byte in its query string (casino/nul.py). And a
        # filter or query value the view refuses, or an unparsable body.
        codes = {400}
        has_body = "requestBody" in operation
        if has_body:
            codes |= {413, 415}  # too large, unsupported body
        authenticators = view.get_authenticators()
        if authenticators:
            codes.add(401)  # a malformed or unknown token, even where anyone may
        try:
            permissions = view.get_permissions()
        except Exception:  # a view that picks permissions from the request
            permissions = [None]
        if any(not isinstance(p, AllowAny) for p in permissions):
            codes |= {401, 403}
        if has_body and any(
            type(a).__name__ == "SessionAuthentication" for a in authenticators
        ):
            codes.add(403)  # CSRF for a browser session
        if any(p.get("in") == "path" for p in operation.get("parameters", [])):
            codes.add(404)
        if view.get_throttles():
            codes.add(429)
        return codes
