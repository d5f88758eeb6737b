"""schemathesis against the project's own OpenAPI schema, as every role.

The operations come from the live schema (drf-spectacular, generated at
collection time), so an endpoint added tomorrow is fuzzed tomorrow without
touching this file. For each operation, hypothesis draws requests valid per
the schema as every role (croupier, pit boss, manager, auditor, admin, a user
with no role, nobody), and deliberately invalid ones as the admin (as every
role in `make fuzz`), sends them through Django's WSGI handler with that
role's token, and schemathesis checks that:

- nothing answers 5xx (an exception in a view fails the test with its traceback);
- the status code is one the schema documents for that operation;
- the body and content type match the schema for that status code;
- in negative mode, a request body that breaks the schema is refused with a
  4xx. (Query strings are lenient by design, as django-filter and the
  paginator are: an empty or unknown filter value is ignored, so for them
  only the first three checks apply.)

Path ids name real objects half of the time where the floor fixture has one
(tables, sessions, shoes, turns, coups), so the fuzzer reaches the views'
bodies, not only their 404 branch.

Bounded here (FUZZ_EXAMPLES per operation and role); `make fuzz` runs it at
length. Business rules a JSON schema cannot state (stake coverage, the open
banker turn, the shoe's state) make a valid-per-schema request a 400/409 more
often than not, so "positive data must be accepted" is not one of the checks.
"""

from __future__ import annotations

import json
import re

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import DERANDOMIZE, FUZZ_EXAMPLES, NEGATIVE_ROLES, ROLES
from .util import INPUTS

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def live_schema() -> dict:
    """The schema exactly as /api/schema/ serves it (JSON round trip)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    raw = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(raw))


RAW = live_schema()
SCHEMA = schemathesis.openapi.from_dict(RAW)
OPERATIONS = [
    f"{method.upper()} {path}"
    for path, item in RAW["paths"].items()
    for method in item
    if method in {"get", "post", "put", "patch", "delete"}
]


def negatable(label: str) -> bool:
    """Negative mode needs something to break besides the path (a path that
    breaks the schema is just another URL: a 404, covered by the positive run)."""
    method, path = label.split(" ", 1)
    operation = RAW["paths"][path][method.lower()]
    return "requestBody" in operation or any(
        p.get("in") == "query" for p in operation.get("parameters", [])
    )


NEGATABLE = [label for label in OPERATIONS if negatable(label)]
ID_PARAM = re.compile(r"/(\w+)/\{(\w+)\}/")


def real_ids(path: str, ids: dict[str, int]) -> dict[str, int]:
    """Path parameters that name real objects: /shoes/{id}/ -> the shoe's id."""
    return {
        param: ids[collection]
        for collection, param in ID_PARAM.findall(path)
        if collection in ids
    }


def headers_for(role: str, tokens: dict[str, str]) -> dict[str, str]:
    if role == "anonymous":
        return {}
    return {"Authorization": f"Token {tokens[role]}"}


def body_is_negative(case) -> bool:
    body = case.meta.components.get(ParameterLocation.BODY) if case.meta else None
    return body is not None and body.mode.is_negative


def fuzz(label: str, role: str, floor, app, mode: GenerationMode) -> None:
    method, path = label.split(" ", 1)
    operation = SCHEMA[path][method]
    headers = headers_for(role, floor.tokens)
    ids = real_ids(path, floor.ids)

    @settings(
        max_examples=FUZZ_EXAMPLES * (2 if mode.is_negative else 1),
        deadline=None,
        database=None,
        derandomize=DERANDOMIZE,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data):
        case = data.draw(operation.as_strategy(generation_mode=mode))
        if ids and data.draw(st.booleans(), label="real ids"):
            case.path_parameters = {**(case.path_parameters or {}), **ids}
        response = case.call(app=app, headers=headers)
        INPUTS["schemathesis"] += 1
        checks = CHECKS
        if body_is_negative(case):
            checks = [*CHECKS, negative_data_rejection]
        case.validate_response(response, checks=checks, headers=headers)

    run()


def fuzz_roles(label, roles, floor, app, mode) -> None:
    """One hypothesis run per role, on one furnished floor; a failure says
    which role met it."""
    for role in roles:
        try:
            fuzz(label, role, floor, app, mode)
        except BaseException as exc:
            exc.add_note(f"role: {role}")
            raise


@pytest.mark.parametrize("label", OPERATIONS)
def test_schema_positive(label, floor, wsgi_app):
    fuzz_roles(label, ROLES, floor, wsgi_app, GenerationMode.POSITIVE)


@pytest.mark.parametrize("label", NEGATABLE)
def test_schema_negative(label, floor, wsgi_app):
    fuzz_roles(label, NEGATIVE_ROLES, floor, wsgi_app, GenerationMode.NEGATIVE)


def test_schema_lists_every_api_url():
    """The fuzzer walks what the schema lists; the schema must list every
    /api/v1/ route, or an endpoint escapes the fuzz."""
    from django.urls import get_resolver

    def walk(patterns, prefix=""):
        for p in patterns:
            route = prefix + str(p.pattern)
            if hasattr(p, "url_patterns"):
                yield from walk(p.url_patterns, route)
            else:
                yield route

    routes = {
        re.sub(r"<(?:\w+:)?(\w+)>", "{id}", r).lstrip("^").rstrip("$")
        for r in walk(get_resolver().url_patterns)
    }
    api_routes = {"/" + r for r in routes if r.startswith("api/v1/")}
    schema_paths = {re.sub(r"\{\w+\}", "{id}", p) for p in RAW["paths"]}
    assert api_routes - {"/api/v1/bench/bare/"} <= schema_paths
