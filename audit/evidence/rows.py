"""Ledger rows exactly as the trail digests them (casino/trail.py).

`ledger_digest` hashes a canonical dict of a row's fields (primary key, a
child row's parent and DIGEST_EXCLUDE left out; a field at its default left
out too). The bundle carries that very dict, so the verifier re-computes the
digest with nothing but hashlib and json; the defaults a dict may leave out
are stated once per model in the manifest (`fields`), so the verifier can
read every field of a row back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.apps import apps
from django.db.models import F, Func, TextField
from django.db.models.functions import Cast

from casino.trail import (
    _DECIMAL,
    _JSON,
    _UNSET,
    BOUND,
    BOUND_ONLY,
    _canonical,
    _plan,
)

# The ledger rows a bundle carries, in the order its ledger part lists them.
LABELS = (
    "tables.tableauversion",
    "tables.table",
    "tables.houserules",
    "tables.tablesession",
    "tables.shoe",
    "tables.shoefinding",
    "tables.shoerelease",
    "tables.bankerturn",
    "tables.coup",
    "tables.stake",
    "tables.finding",
    "audit.cagnottecount",
    "audit.cagnotteattestation",
    "audit.flagevent",
)
assert set(LABELS) <= set(BOUND)


def model_of(label: str):
    return apps.get_model(label)


def fields_of(label: str) -> dict[str, Any]:
    """Per digested field of the model: the value a row leaves out when the
    field holds it ({"name": default}); a field always kept maps to
    {"kept": true} instead, so the verifier tells 'absent' from 'default'."""
    out: dict[str, Any] = {}
    for attname, kind, quant, omit in _plan(model_of(label)):
        out[attname] = ({"kept": True} if omit is _UNSET
                        else {"default": _canonical(kind, quant, omit)})
    return out


def attnames(label: str) -> list[str]:
    return [p[0] for p in _plan(model_of(label))]


_PLAIN = (str, int, bool, list, dict)


def _converter(label: str):
    """`content` for rows read back from the database, compiled once per
    label: a value of a plain type (a JSON field's value, decoded, is plain
    JSON already) is kept as it is; the others go through the trail's own
    `_canonical` (decimals, times, dates)."""
    plan = [(attname, kind, quant, omit, omit is not _UNSET)
            for attname, kind, quant, omit in _plan(model_of(label))]

    def convert(values: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for attname, kind, quant, omit, omittable in plan:
            value = values[attname]
            if omittable and value == omit:
                continue
            if value is None or (kind != _DECIMAL and type(value) in _PLAIN):
                out[attname] = value
            else:
                out[attname] = _canonical(kind, quant, value)
        return out

    return convert


_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode


def keyed_rows(label: str, queryset, chunk: int = 2000, *,
               order: tuple[str, ...] | None = None, session: str | None = None
               ) -> Iterator[tuple]:
    """(key, pk, content's canonical JSON) of each row of `queryset` (a
    queryset of the label's model), filed as the trail files them: by pk, or
    "parent#position" for child rows (their position among the parent's
    rows in pk order, as casino.trail._ledger_rows numbers them). Ordered by
    `order` (default: the key's), which must keep a child's parent's rows
    together in pk order; with `session` (a lookup path), each item starts
    with that value (the session id). A child queryset must hold whole
    parents."""
    parent = BOUND.get(label)
    qs = queryset.filter(**BOUND_ONLY.get(label, {}))
    qs = qs.order_by(*(order or ((parent, "pk") if parent else ("pk",))))
    if session:
        from django.db.models import F

        qs = qs.annotate(_session=F(session))
    from django.db import connections

    pg = connections[qs.db].vendor == "postgresql"
    rows = (_rows_pg if pg else _rows_orm)(label, qs, chunk, parent, session)
    encode = _ENCODE
    last_parent, n = object(), 0
    for pk, pid, sid, content in rows:
        if parent is None:
            key = str(pk)
        else:
            n = n + 1 if pid == last_parent else 0
            last_parent = pid
            key = f"{pid}#{n}"
        row_json = encode(content)
        if session:
            yield sid, key, pk, row_json
        else:
            yield key, pk, row_json


def _rows_orm(label, qs, chunk, parent, session):
    """(pk, parent id, session id, content) through the ORM's values."""
    names = attnames(label)
    extra = [parent] if parent and parent not in names else []
    fields = ["pk", *names, *extra, *(["_session"] if session else [])]
    convert = _converter(label)
    for values in qs.values(*fields).iterator(chunk_size=chunk):
        yield (values["pk"], values[parent] if parent else None,
               values.get("_session"), convert(values))


# Field types whose values the driver gives as the trail's canonical JSON
# already (str, int, bool, None)
_PLAIN_FIELDS = {"BooleanField", "CharField", "TextField", "IntegerField",
                 "PositiveIntegerField", "PositiveSmallIntegerField",
                 "SmallIntegerField", "BigIntegerField", "ForeignKey",
                 "OneToOneField"}


class _UTC(Func):
    """A time as the trail writes it (casino.trail._when), by the server."""

    template = ("to_char(%(expressions)s AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
    output_field = TextField()


def _rows_pg(label, qs, chunk, parent, session):
    """The same as `_rows_orm`, the server writing times, dates and decimals
    as the trail's canonical text (so no Python datetime or Decimal is made
    per value) and JSON as text, decoded once here: a month's four million
    rows cost a third of the ORM's converters and dictionaries."""
    model = model_of(label)
    plan = _plan(model)
    names, exprs, omits, json_at, python_at = [], {}, [], [], []
    for i, (attname, kind, quant, omit) in enumerate(plan):
        internal = model._meta.get_field(attname).get_internal_type()
        alias = f"_v{i}"
        if internal == "DateTimeField":
            exprs[alias] = _UTC(F(attname))
        elif internal == "DateField" or kind == _DECIMAL:
            exprs[alias] = Cast(F(attname), TextField())
        elif kind == _JSON:
            exprs[alias] = Cast(F(attname), TextField())
            json_at.append(i)
        else:
            alias = attname
            if internal not in _PLAIN_FIELDS:  # a type this path does not know
                python_at.append((i, kind, quant))
        if omit is not _UNSET and omit is not None and alias != attname and (
                kind != _JSON):
            omit = _canonical(kind, quant, omit)  # as the server writes it
        names.append(attname)
        exprs.setdefault(alias, None)
        omits.append(omit)
    columns = [alias for alias in exprs]
    qs = qs.annotate(**{a: e for a, e in exprs.items() if e is not None})
    tail = [parent or "pk", "_session" if session else "pk"]
    loads = json.loads
    for row in qs.values_list("pk", *columns, *tail).iterator(chunk_size=chunk):
        values = list(row[1:-2])
        for i in json_at:
            if values[i] is not None:
                values[i] = loads(values[i])
        for i, kind, quant in python_at:
            values[i] = _canonical(kind, quant, values[i])
        content = {n: v for n, v, o in zip(names, values, omits, strict=True)
                   if v != o}
        yield row[0], row[-2] if parent else None, row[-1], content
