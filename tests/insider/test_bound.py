"""Everything a decision reads is bound (issue 23): every model of the
project is bound to the trail, checked against bound rows, or left out by
name with a reason. A model added without a decision fails here."""

from __future__ import annotations

from django.apps import apps

from casino.trail import BOUND, DERIVED, INDEXED, LEFT_OUT, UPDATABLE


def test_every_model_is_bound_derived_or_left_out_with_a_reason():
    labels = {m._meta.label_lower for m in apps.get_models(include_auto_created=True)}
    undecided = sorted(labels - set(BOUND) - set(DERIVED) - set(LEFT_OUT))
    assert not undecided, f"neither bound nor left out with a reason: {undecided}"
    both = sorted((set(BOUND) | set(DERIVED)) & set(LEFT_OUT))
    assert not both, f"bound and left out at once: {both}"
    assert all(len(why) > 20 for why in [*LEFT_OUT.values(), *DERIVED.values()])
    stale = sorted((set(BOUND) | set(DERIVED) | set(LEFT_OUT)) - labels)
    assert not stale, f"named but no such model: {stale}"


def test_the_rows_the_design_updates_are_checked_before_each_write():
    from casino.models import AppendOnlyModel

    for label in BOUND:
        model = apps.get_model(label)
        if not issubclass(model, AppendOnlyModel):
            assert label in UPDATABLE, f"{label} may be updated: continuity"
    assert UPDATABLE <= INDEXED and UPDATABLE <= set(BOUND)
    for label in ("tables.houserules", "tables.tableauversion",
                  "audit.gamingdayclose"):
        assert label in INDEXED
