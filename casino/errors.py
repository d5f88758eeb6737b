"""Errors a service raises; the API turns them into 4xx JSON naming the field.

They live on the ground floor (casino) because every layer raises them:
tables' services, audit's, and casino's own guards of the trail
(`RecordChanged`). tables.errors re-exports them under their old home."""

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


class RecordChanged(Conflict):
    """A row the write would build on is not in the state the trail last
    sealed: it was changed (or inserted, or deleted) outside the application,
    with the database's own credentials. The write is refused, never laid
    over it (casino/continuity.py); a critical flag says so."""

    code = "record_changed"

    def __init__(self, label: str, key: str, problem: str, *, found: str | None = None,
                 sealed: str | None = None, log_id: int | None = None):
        self.label, self.key = label, key
        self.found, self.sealed, self.log_id = found, sealed, log_id
        self.alarmed = False
        name = label.split(".")[-1]
        super().__init__(
            name,
            f"{name} {key} was changed outside the application ({problem}): "
            "nothing was written; a pit boss and the auditors are told",
        )
