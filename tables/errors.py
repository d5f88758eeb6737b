"""Errors a service raises; the API turns them into 4xx JSON naming the field."""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "invalid"

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class Invalid(ServiceError):
    """The request breaks a rule (bad amount, seat out of range...)."""


class Conflict(ServiceError):
    """The request is well-formed but the table is not in a state to take it
    (closed shoe, no open banker turn, the shoe moved on, key reused)."""

    status = 409
    code = "conflict"


class NotFound(ServiceError):
    """The object the request names does not exist."""

    status = 404
    code = "not_found"


class Forbidden(ServiceError):
    """The role may do this in general, but not here: four eyes (nobody
    reviews or corrects his own entry), or not the croupier of this session."""

    status = 403
    code = "forbidden"
