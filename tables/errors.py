"""Errors a service raises (their home is casino.errors, the ground floor that
every layer may import); re-exported here under their old names."""

from casino.errors import (  # noqa: F401
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    RecordChanged,
    ServiceError,
)
