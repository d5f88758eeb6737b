"""Helpers shared by the hostile-input tests."""

from __future__ import annotations

from collections import Counter


def row_counts() -> dict[str, int]:
    """What a refused request must not have written."""
    from casino.models import ChangeLog
    from tables.models import Coup, Finding, Stake

    return {m.__name__: m.objects.count() for m in (Coup, Stake, Finding, ChangeLog)}


# Written by migrations and never by the API; big (the tableaux): counted only.
STATIC_MODELS = {"auth.Permission", "contenttypes.ContentType", "tables.TableauVersion"}


def db_state() -> dict[str, object]:
    """Every row of every model, as tuples (counts and the last id for the big
    static ones): a refused request must leave this exactly as it was. Rows,
    not counts, so an UPDATE (a session closed, a croupier changed, a flag
    decided) shows as well as an INSERT or a DELETE."""
    from django.apps import apps

    state: dict[str, object] = {}
    for model in apps.get_models():
        meta = model._meta
        if meta.proxy or not meta.managed:
            continue
        rows = model._base_manager.order_by("pk")
        if meta.label in STATIC_MODELS:
            state[meta.label] = (rows.count(), rows.values_list("pk").last())
        else:
            state[meta.label] = list(rows.values_list())
    return state


def state_changes(before: dict, after: dict) -> list[str]:
    """Which models a request wrote to, with the rows that differ."""
    out = []
    for label in sorted(set(before) | set(after)):
        old, new = before.get(label), after.get(label)
        if old == new:
            continue
        if isinstance(old, list) and isinstance(new, list):
            gone = [r for r in old if r not in new]
            came = [r for r in new if r not in old]
            out.append(f"{label}: -{gone[:2]} +{came[:2]}")
        else:
            out.append(f"{label}: {old} -> {new}")
    return out


# How many hostile requests this run sent, by source; printed at the end of
# the run (tests/hostile/conftest.py) as the "inputs tried" figure.
INPUTS: Counter[str] = Counter()
