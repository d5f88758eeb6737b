"""casino.drf.PrototypeFields: the busiest input serializers copy their
fields from prototypes instead of deep-copying them per request. Each use
still gets fields of its own, and one request's data or errors never reach
another's, in sequence or from several threads at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

from rest_framework import serializers

from tables.api.serializers import (
    CoupAcceptSerializer,
    CoupInSerializer,
    StakeInSerializer,
    TurnOpenSerializer,
)

GOOD = {"punter": ["9H", "KD"], "banker": ["3C", "4S"],
        "stakes": [{"seat": 3, "amount": "20.00"}, {"standing": "Mme R.",
                                                    "amount": "5.50"}]}


def bad(n: int) -> dict:
    """Wrong in stake n only (no seat and no standing player)."""
    stakes = [{"seat": 2, "amount": "1.00"} for _ in range(n)]
    return {**GOOD, "stakes": [*stakes, {"amount": "3.00"}]}


def test_each_use_has_its_own_bound_fields():
    one, two = CoupInSerializer(data=GOOD), CoupInSerializer(data=GOOD)
    for name in ("punter", "stakes", "declared_bank"):
        assert one.fields[name] is not two.fields[name]
        assert one.fields[name].parent is one and two.fields[name].parent is two
        assert one.fields[name].field_name == name
    stakes = one.fields["stakes"]
    assert stakes.child is not two.fields["stakes"].child
    assert stakes.child.parent is stakes
    # the nested serializer's own fields: bound to this use's child
    assert stakes.child.fields["seat"].parent is stakes.child
    prototypes = CoupInSerializer._prototype_fields
    assert all(field.parent is None for field in prototypes.values())
    assert prototypes["stakes"].child.parent is prototypes["stakes"]


def test_a_subclass_has_prototypes_of_its_own():
    accept = CoupAcceptSerializer(data={}).fields
    assert set(accept) - set(CoupInSerializer(data={}).fields) == {"reason"}
    assert accept["entered_by"].required  # its own declaration, not the parent's
    assert not CoupInSerializer(data={}).fields["entered_by"].required


def test_errors_and_data_stay_with_their_use():
    first = CoupInSerializer(data=bad(1))
    assert not first.is_valid()
    second = CoupInSerializer(data=GOOD)
    assert second.is_valid(), second.errors
    assert first.errors["stakes"][1]["seat"]  # names the second stake
    assert second.validated_data["stakes"][1] == {
        "standing": "Mme R.", "amount": Decimal("5.50"), "announcement": "none"}
    third = CoupInSerializer(data=bad(0))
    assert not third.is_valid()
    assert list(third.errors["stakes"]) == [0]
    turn = TurnOpenSerializer(data={"seat": 0, "bank": "100.00"})
    assert not turn.is_valid() and list(turn.errors) == ["seat"]
    assert TurnOpenSerializer(data={"seat": 2, "bank": "100.00"}).is_valid()


def test_many_threads_validate_at_once():
    def check(i: int) -> bool:
        n = i % 5
        s = CoupInSerializer(data=GOOD if i % 2 else bad(n))
        if i % 2:
            return s.is_valid() and len(s.validated_data["stakes"]) == 2
        return not s.is_valid() and list(s.errors["stakes"]) == [n]

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(check, range(2000)))


def test_drf_would_have_made_the_same_fields():
    """What the prototypes hold is DRF's own deep copy of the declarations."""
    ours = StakeInSerializer(data={}).fields
    drf = serializers.Serializer.get_fields(StakeInSerializer())
    assert list(ours) == list(drf)
    for name in drf:
        assert type(ours[name]) is type(drf[name])
        assert ours[name]._kwargs == drf[name]._kwargs
