"""Model instances from rows read in SQL made once (a request's token, user
and roles: casino/tokenauth.py, casino/roles.py), as the ORM would give
them: each column through the converters the ORM applies on this database
(SQLite returns a datetime as text, for instance). Made once per model and
database; on PostgreSQL these models' columns need none."""

from __future__ import annotations

from functools import cache

from django.db import connections


class RowReader:
    """Every concrete column of `model`, in its order, read from a slice of
    a raw row."""

    def __init__(self, model, alias: str) -> None:
        self.model, self.alias = model, alias
        connection = connections[alias]
        self.fields = list(model._meta.concrete_fields)
        self.width = len(self.fields)
        self.converters = []
        for i, field in enumerate(self.fields):
            col = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(col) + col.get_db_converters(
                connection)
            if found:
                self.converters.append((i, found, col))

    def build(self, values):
        if self.converters:
            values = list(values)
            connection = connections[self.alias]
            for i, found, col in self.converters:
                for convert in found:
                    values[i] = convert(values[i], col, connection)
        return self.model.from_db(self.alias, None, values)


@cache
def reader(model, alias: str) -> RowReader:
    return RowReader(model, alias)
