"""Request bodies take exactly the types their OpenAPI schema states (issue 11,
finding 10): an amount is a JSON string of the schema's pattern (two places
at most; no exponent, sign, spaces, NaN or Infinity, never a JSON number), a
whole number is a JSON integer (not "2", not true, not 2.0). Anything else is
a 400 naming the field, and nothing is written. The schema is read back and
checked against the fields' own validation, so the two cannot drift."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from casino.drf import DecimalField, IntegerField

COUP = {"punter": ["2H", "3D"], "banker": ["8C", "TS"]}

# Refused as an amount, each for its own reason.
BAD_AMOUNTS = [
    "1e3", "1E3", 50.5, 50, 0, True, None, [], {}, "", " 50", "50 ", "50\n",
    "+50", "-0", "-0.00", "-1.00", "50.505", "50.", ".5", "NaN", "nan",
    "Infinity", "-Infinity", "0x10", "1_000", "1,00", "050", "00.50",
    "\u0663\u0660",  # Arabic-Indic "30": Decimal() takes it, the schema does not
    "\uff15\uff10",  # fullwidth "50"
    "1000000000000.00",  # 13 whole digits: past the column
]
GOOD_AMOUNTS = ["100", "100.5", "100.50", "0.01", "999999999999.99"]
# Refused as a whole number.
BAD_INTEGERS = ["2", "", " 2", True, False, 2.0, 2.5, [2], {"n": 2}, "two"]


def record(client, shoe, stake, key="strict", **extra):
    return client.post(
        f"/api/v1/shoes/{shoe.pk}/coups/",
        {**COUP, "stakes": [stake], **extra},
        format="json",
        headers={"Idempotency-Key": key},
    )


def refused(r, field: str) -> dict:
    assert r.status_code == 400, (r.status_code, r.content)
    body = r.json()
    assert body["detail"].startswith(f"{field}: "), body
    assert body["code"] == "invalid"
    return body


# -- the finding, as reported --------------------------------------------------


@pytest.mark.parametrize(
    "stake, field",
    [
        ({"seat": 2, "amount": "1e3"}, "stakes[0].amount"),
        ({"seat": 2, "amount": 50.5}, "stakes[0].amount"),
        ({"seat": "2", "amount": "100.00"}, "stakes[0].seat"),
    ],
)
def test_the_findings_inputs_are_refused(as_user, croupier, shoe, turn, stake, field):
    from tables.models import Coup

    refused(record(as_user(croupier), shoe, stake), field)
    assert not Coup.objects.exists()


@pytest.mark.parametrize("amount", BAD_AMOUNTS, ids=repr)
def test_an_amount_is_a_decimal_string_of_the_pattern(
    as_user, croupier, shoe, turn, amount
):
    from tables.models import Coup

    r = record(as_user(croupier), shoe, {"seat": 2, "amount": amount})
    refused(r, "stakes[0].amount")
    assert not Coup.objects.exists()


@pytest.mark.parametrize("amount", ["100", "100.5", "100.50"])
def test_good_amounts_go_in(as_user, croupier, shoe, turn, amount):
    r = record(as_user(croupier), shoe, {"seat": 2, "amount": amount})
    assert r.status_code == 201, r.content
    assert Decimal(r.json()["stakes"][0]["amount"]) == Decimal(amount)


@pytest.mark.parametrize("seat", BAD_INTEGERS, ids=repr)
def test_a_seat_is_a_json_integer(as_user, croupier, shoe, turn, seat):
    from tables.models import Coup

    r = record(as_user(croupier), shoe, {"seat": seat, "amount": "100.00"})
    refused(r, "stakes[0].seat")
    assert not Coup.objects.exists()


@pytest.mark.parametrize("value", BAD_INTEGERS, ids=repr)
def test_expected_seq_is_a_json_integer(as_user, croupier, shoe, turn, value):
    r = record(
        as_user(croupier), shoe, {"seat": 2, "amount": "100.00"}, expected_seq=value
    )
    refused(r, "expected_seq")


def test_the_message_says_what_was_sent(as_user, croupier, shoe, turn):
    client = as_user(croupier)
    body = refused(record(client, shoe, {"seat": 2, "amount": 50.5}),
                   "stakes[0].amount")
    assert "not a number" in body["detail"]
    body = refused(record(client, shoe, {"seat": True, "amount": "1"}),
                   "stakes[0].seat")
    assert "not a boolean" in body["detail"]
    body = refused(record(client, shoe, {"seat": 2.0, "amount": "1"}),
                   "stakes[0].seat")
    assert "decimal point" in body["detail"]


# -- every other request body ---------------------------------------------------


@pytest.fixture
def closed_session(session, croupier):
    from tables.services import session_close

    session_close(session=session, user=croupier)
    return session


CASES = [
    # (who, url, good body, field, bad value)
    ("croupier", "/api/v1/sessions/{session}/turns/",
     {"seat": 1, "bank": "1000.00"}, "seat", "1"),
    ("croupier", "/api/v1/sessions/{session}/turns/",
     {"seat": 1, "bank": "1000.00"}, "bank", 1000),
    ("croupier", "/api/v1/sessions/{session}/turns/",
     {"seat": 1, "bank": "1000.00"}, "bank", "1e3"),
    ("croupier", "/api/v1/sessions/{session}/shoes/",
     {"decks": 6, "burned": 5}, "burned", "5"),
    ("croupier", "/api/v1/sessions/{session}/shoes/",
     {"decks": 6, "burned": 5}, "decks", True),
    ("manager", "/api/v1/tables/", {"name": "T9"}, "seats", "9"),
    ("manager", "/api/v1/tables/", {"name": "T9"}, "gaming_day_cutoff", 6.0),
    ("manager", "/api/v1/tables/", {"name": "T9"}, "minimum_banco", 100),
    ("manager", "/api/v1/tables/", {"name": "T9"}, "commission_rate", 0.05),
    ("manager", "/api/v1/tables/", {"name": "T9"}, "commission_rate", "5e-2"),
    ("manager", "/api/v1/tables/", {"name": "T9"}, "commission_unit", "0.105"),
    ("pitboss", "/api/v1/sessions/{closed}/cagnotte/",
     {"counted": "10.00"}, "counted", "-0"),
    ("pitboss", "/api/v1/sessions/{closed}/cagnotte/",
     {"counted": "10.00"}, "counted", 10.0),
    ("pitboss", "/api/v1/sessions/{session}/croupier/", {}, "croupier", "1"),
    ("manager", "/api/v1/reports/",
     {"kind": "commission", "format": "csv", "from_day": "2025-03-03",
      "to_day": "2025-03-03"}, "tables", ["1"]),
    ("manager", "/api/v1/reports/reaudit/",
     {"from_day": "2025-03-03", "to_day": "2025-03-03"}, "chunk_size", "50"),
]


@pytest.mark.parametrize(
    "who, url, good, field, bad", CASES,
    ids=[f"{c[1].split('/')[-2]}.{c[3]}={c[4]!r}" for c in CASES],
)
def test_every_body_refuses_the_wrong_type(
    request, as_user, session, closed_session, who, url, good, field, bad
):
    from casino.models import ChangeLog

    user = request.getfixturevalue(who)
    before = ChangeLog.objects.count()
    url = url.format(session=session.pk, closed=closed_session.pk)
    r = as_user(user).post(url, {**good, field: bad}, format="json")
    expected = f"{field}[0]" if isinstance(bad, list) else field
    refused(r, expected)
    assert ChangeLog.objects.count() == before  # nothing written


# -- the schema states exactly what the code takes --------------------------------


def _schema_and_registry():
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    generator = SchemaGenerator()
    raw = generator.get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(raw)), generator.registry


def _ref_name(schema: dict) -> str | None:
    ref = schema.get("$ref") or next(
        (s.get("$ref") for s in schema.get("allOf", []) if "$ref" in s), None
    )
    return ref.rsplit("/", 1)[-1] if ref else None


def request_fields():
    """(component, property, property schema, serializer field) for every
    field of every request body, nested ones included."""
    schema, registry = _schema_and_registry()
    components = schema["components"]["schemas"]
    from rest_framework.serializers import BaseSerializer

    serializers = {
        c.name: c.object
        for c in registry._components.values()
        if c.type == "schemas" and isinstance(c.object, BaseSerializer)
    }
    todo = [
        _ref_name(media["schema"])
        for item in schema["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "requestBody" in op
        for media in op["requestBody"]["content"].values()
    ]
    seen: set[str] = set()
    out = []
    while todo:
        name = todo.pop()
        if not name or name in seen or name not in serializers:
            continue
        seen.add(name)
        fields = serializers[name].fields
        for prop, prop_schema in components[name].get("properties", {}).items():
            field = fields[prop]
            if prop_schema.get("type") == "array":
                nested = _ref_name(prop_schema["items"])
                if nested:
                    todo.append(nested)
                    continue
                prop_schema, field = prop_schema["items"], field.child
            nested = _ref_name(prop_schema)
            if nested:
                todo.append(nested)
                continue
            out.append((name, prop, prop_schema, field))
    return out


REQUEST_FIELDS = request_fields()
SAMPLES = [*BAD_AMOUNTS, *GOOD_AMOUNTS, "0", "0.5", "1.0000", "0.0500", "9" * 13]


def ecma(pattern: str) -> re.Pattern:
    """An OpenAPI pattern is ECMA-262, where `$` is the end of the text;
    Python's `$` also matches before a final newline ("50\n")."""
    return re.compile(pattern.replace("$", r"\Z"))


def schema_accepts(prop_schema: dict, value) -> bool:
    """JSON Schema (OpenAPI 3.0: draft 4 types) on one value: type, pattern."""
    if value is None:
        return bool(prop_schema.get("nullable"))
    kind = prop_schema.get("type")
    if kind == "integer":
        return type(value) is int
    if kind == "string":
        pattern = prop_schema.get("pattern")
        return isinstance(value, str) and (
            pattern is None or ecma(pattern).search(value) is not None
        )
    return True


def test_request_bodies_have_amounts_and_integers():
    kinds = {(c, p): s.get("format") or s.get("type") for c, p, s, _ in REQUEST_FIELDS}
    assert kinds[("StakeInRequest", "amount")] == "decimal"
    assert kinds[("StakeInRequest", "seat")] == "integer"
    assert kinds[("ReportRequestRequest", "tables")] == "integer"


@pytest.mark.parametrize(
    "component, prop, prop_schema, field",
    [f for f in REQUEST_FIELDS if f[2].get("format") == "decimal"],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_request_amount_publishes_the_pattern_it_checks(
    component, prop, prop_schema, field
):
    from rest_framework.exceptions import ValidationError

    assert isinstance(field, DecimalField), f"{component}.{prop}: not strict"
    assert prop_schema["type"] == "string"
    assert prop_schema["pattern"] == field.pattern
    for value in SAMPLES:
        by_schema = schema_accepts(prop_schema, value)
        assert field.matches(value) == (by_schema and value is not None), value
        if not by_schema:  # what the schema refuses, the code refuses
            with pytest.raises(ValidationError):
                field.run_validation(value)
                pytest.fail(f"{component}.{prop} took {value!r}")


@pytest.mark.parametrize(
    "component, prop, prop_schema, field",
    [f for f in REQUEST_FIELDS if f[2].get("type") == "integer"],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_request_integer_is_a_json_integer(component, prop, prop_schema, field):
    from rest_framework.exceptions import ValidationError

    assert isinstance(field, IntegerField), f"{component}.{prop}: not strict"
    low = prop_schema.get("minimum", 0)
    for value in BAD_INTEGERS:
        assert not schema_accepts(prop_schema, value)
        with pytest.raises(ValidationError):
            field.run_validation(value)
    assert field.run_validation(low) == low  # a JSON integer in range goes in


def test_no_plain_numeric_field_takes_a_request_body():
    """Every integer or decimal of a request body is one of the strict
    fields: a new serializer with DRF's own would be caught here."""
    loose = [
        f"{c}.{p}"
        for c, p, s, f in REQUEST_FIELDS
        if s.get("type") in ("integer", "number") or s.get("format") == "decimal"
        if not isinstance(f, IntegerField | DecimalField)
    ]
    assert loose == []
