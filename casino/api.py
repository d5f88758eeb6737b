"""API glue shared by the apps: errors as JSON that name the field."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from tables.chemmy import CoupError
from tables.errors import ServiceError


def exception_handler(exc, context):
    """DRF's handler, plus the domain errors: a service or engine refusal is a
    4xx whose body names the field ({"field": ["message"], "detail": ...})."""
    if isinstance(exc, ServiceError):
        return Response(
            {exc.field: [exc.message], "detail": str(exc), "code": exc.code},
            status=exc.status,
        )
    if isinstance(exc, CoupError):
        return Response(
            {exc.field: [exc.message], "detail": str(exc), "code": "invalid"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    return drf_exception_handler(exc, context)
