"""Ledger rows exactly as the trail digests them (casino/trail.py).

`ledger_digest` hashes a canonical dict of a row's fields (primary key, a
child row's parent and DIGEST_EXCLUDE left out; a field at its default left
out too). The bundle carries that very dict, so the verifier re-computes the
digest with nothing but hashlib and json; the defaults a dict may leave out
are stated once per model in the manifest (`fields`), so the verifier can
read every field of a row back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from django.apps import apps

from casino.trail import _UNSET, BOUND, BOUND_ONLY, _canonical, _dumps, _plan

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


def content(label: str, values: dict[str, Any]) -> dict[str, Any]:
    """The dict `ledger_digest` hashes, from a row's values by attname."""
    out = {}
    for attname, kind, quant, omit in _plan(model_of(label)):
        value = values[attname]
        if omit is not _UNSET and value == omit:
            continue
        out[attname] = _canonical(kind, quant, value)
    return out


def digest(row_content: dict[str, Any]) -> str:
    return hashlib.sha256(_dumps(row_content).encode("utf-8")).hexdigest()


def keyed_rows(label: str, queryset, chunk: int = 5000
               ) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(key, pk, content) of each row of `queryset` (a queryset of the
    label's model), in key order, filed as the trail files them: by pk, or
    "parent#position" for child rows (their position among the parent's
    rows in pk order, as casino.trail._ledger_rows numbers them). A child
    queryset must hold whole parents."""
    parent = BOUND.get(label)
    names = attnames(label)
    extra = [parent] if parent and parent not in names else []
    qs = queryset.filter(**BOUND_ONLY.get(label, {}))
    qs = qs.order_by(*(parent, "pk") if parent else ("pk",))
    last_parent, n = object(), 0
    for values in qs.values("pk", *names, *extra).iterator(chunk_size=chunk):
        pk = values["pk"]
        if parent is None:
            key = str(pk)
        else:
            pid = values[parent]
            n = n + 1 if pid == last_parent else 0
            last_parent = pid
            key = f"{pid}#{n}"
        yield key, pk, content(label, values)
