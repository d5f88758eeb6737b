"""The permission table, walked by schemathesis: no role reaches data or
actions outside its row.

tests/audit/test_access.py asks every URL once per role, with an empty body
and ids of nothing. Here schemathesis draws requests valid per the live
OpenAPI schema (the machinery of test_schema_fuzz.py), for every operation and
every role, with path ids naming real rows: at the table the fuzz croupier
runs and at a neighbouring table another croupier runs (the `neighbours`
fixture). Custom schemathesis checks hold each answer to the table:

- The capability an operation needs is read where the app reads it: Django
  resolves the schema path to its URL name, `casino.access.ROUTES` names the
  capability for that name and method, and the view's own permission classes
  must check that same one (test_every_operation_needs_what_its_view_checks).
  `casino.roles.PERMISSIONS` says which roles hold it. An operation the
  table does not know fails: tomorrow's endpoint cannot slip by.
- A role outside the row: 401/403 on every request (never a 2xx), and the
  database is left exactly as it was (every row of every model).
- A role in the row: never a 401, and a 403 only as a service's object-level
  refusal (code "forbidden": four eyes, not his session), never "your role
  does not allow". Business answers (400/404/409) are fine.
- A croupier, for what he may do only at his own table (OWN_TABLE_ONLY, per
  `casino.roles.works_at`): a list shows his table's rows only, an object of
  the neighbouring table is a 403/404, and a write there writes nothing.

Bounded here (FUZZ_EXAMPLES per operation, role and id source; the croupier
tries both tables, the others his); `make fuzz` runs it at length, with
fuzzed ids and invalid bodies as well.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup

from casino import access
from casino.roles import CROUPIER, PERMISSIONS, works_at

from .conftest import DERANDOMIZE, FUZZ_EXAMPLES, FUZZ_LONG, ROLES, restore_token
from .test_schema_fuzz import (
    ID_PARAM,
    NEGATABLE,
    OPERATIONS,
    SCHEMA,
    headers_for,
    real_ids,
)
from .util import INPUTS, db_state, state_changes

# The object-level rule on top of the role table: a croupier holds these only
# at the table he works at (casino.roles.works_at; coup reads go through
# tables.api.views.visible_coups). Table state (table.read) is his own table's
# too for sessions, shoes and banker turns (tables.services.access.read_check);
# the table list stays floor-wide: he picks his table there, and finds the
# session he takes over as the relief (session.assign).
OWN_TABLE_ONLY = frozenset({"coup.read", "coup.record", "shoe.manage", "turn.manage"})
OWN_TABLE_READS = frozenset({"sessions", "shoes", "turns"})
ROLE_REFUSAL = (401, 403)


@dataclass(frozen=True)
class Operation:
    label: str  # "POST /api/v1/shoes/{id}/close/"
    method: str
    path: str
    view_name: str
    need: str | None  # the capability, or access.PUBLIC...; None: unknown

    @property
    def collection(self) -> str:
        """What the path is about: /api/v1/coups/{id}/revisions/ -> coups."""
        return self.path.strip("/").split("/")[2]


def concrete(path: str) -> str:
    return re.sub(r"\{\w+\}", "1", path)


def operation(label: str) -> Operation:
    from django.urls import resolve

    method, path = label.split(" ", 1)
    match = resolve(concrete(path))
    return Operation(label, method, path, match.view_name,
                     access.requirement(match.view_name, method))


OPS = {label: operation(label) for label in OPERATIONS}


def view_needs(op: Operation) -> set[str]:
    """What the view's permission classes check for this method."""
    from django.test import RequestFactory
    from django.urls import resolve
    from rest_framework.permissions import AllowAny

    match = resolve(concrete(op.path))
    view = match.func.view_class(**match.func.view_initkwargs)
    request = RequestFactory().generic(op.method, concrete(op.path))
    request.resolver_match = match
    view.setup(request, *match.args, **match.kwargs)
    needs = set()
    for permission in view.get_permissions():
        can = re.fullmatch(r"Can\[(.+)\]", type(permission).__name__)
        if isinstance(permission, access.ByRoute):
            needs.add(access.requirement(match.view_name, op.method))
        elif isinstance(permission, AllowAny):
            needs.add(access.PUBLIC)
        elif can:
            needs.add(can[1])
        else:  # IsAuthenticated alone, or a class this test does not know
            needs.add(type(permission).__name__)
    return needs


def in_row(need: str, role: str) -> bool:
    """Whether the role may use an operation needing ``need``: its row of
    casino.roles.PERMISSIONS; the admin (superuser) may do everything, the
    user without a role nothing but what is public or merely signed in."""
    if need == access.PUBLIC:
        return True
    if role == "anonymous":
        return False
    if need == access.SIGNED_IN:
        return True
    if role == "admin":
        return True
    if need == access.STAFF:
        return False
    return role in PERMISSIONS[need]


def scoped(op: Operation, role: str) -> bool:
    if role != CROUPIER:
        return False
    return op.need in OWN_TABLE_ONLY or (
        op.need == "table.read" and op.collection in OWN_TABLE_READS)


# ---------------------------------------------------------------- objects


def table_object(collection: str, pk):
    """The object an id names in a table-scoped collection, with its session
    (None, None: no such object)."""
    from tables.models import BankerTurn, Coup, Shoe, TableSession

    models = {
        "coups": (Coup.objects.select_related("shoe__session"), "shoe.session"),
        "shoes": (Shoe.objects.select_related("session"), "session"),
        "turns": (BankerTurn.objects.select_related("session"), "session"),
        "sessions": (TableSession.objects.all(), ""),
    }
    if collection not in models:
        raise LookupError(
            f"/{collection}/ is scoped to the croupier's table (OWN_TABLE_ONLY) "
            "but this test does not know how its objects reach a session: "
            "add it to table_object()"
        )
    queryset, to_session = models[collection]
    obj = queryset.filter(pk=pk).first() if str(pk).isdigit() else None
    if obj is None:
        return None, None
    session = obj
    for attr in filter(None, to_session.split(".")):
        session = getattr(session, attr)
    return obj, session


def at_his_table(user, obj, session) -> bool:
    """What the croupier may see and touch: the table he works at, and the
    coups he entered himself."""
    return works_at(user, session) or getattr(obj, "entered_by_id", None) == user.pk


def routed(case) -> bool:
    """Whether the request's path reaches a view at all."""
    from django.urls import Resolver404, resolve

    try:
        resolve(unquote(case.formatted_path))
    except Resolver404:
        return False
    return True


def rows_of(body) -> list[dict]:
    if isinstance(body, dict) and isinstance(body.get("results"), list):
        return body["results"]
    return body if isinstance(body, list) else []


def json_or_none(response):
    try:
        return response.json()
    except Exception:
        return None


# ----------------------------------------------------------------- checks


def checks_outside_the_row(op: Operation, role: str, before: dict) -> list:
    def no_2xx_outside_the_row(ctx, response, case):
        assert not 200 <= response.status_code < 300, (
            f"{role} is not in the row of {op.need!r} (casino.roles.PERMISSIONS) "
            f"but {op.label} answered {response.status_code}"
        )

    def refused_as_401_or_403(ctx, response, case):
        if response.status_code == 404 and not routed(case):
            return  # a fuzzed id the URL pattern refuses: no view, no data
        assert response.status_code in ROLE_REFUSAL, (
            f"{role} lacks {op.need!r}: {op.label} must refuse with 401/403 "
            f"before looking at anything, got {response.status_code}"
        )

    def refusal_writes_nothing(ctx, response, case):
        changes = state_changes(before, db_state())
        assert not changes, (
            f"{op.label} refused {role} but wrote: " + "; ".join(changes)
        )

    return [no_2xx_outside_the_row, refused_as_401_or_403, refusal_writes_nothing]


def checks_inside_the_row(op: Operation, role: str) -> list:
    def not_refused_for_the_role(ctx, response, case):
        status = response.status_code
        assert status != 401, f"{role} holds {op.need!r}; {op.label} said 401"
        if status == 403:
            body = json_or_none(response)
            code = body.get("code") if isinstance(body, dict) else None
            assert code == "forbidden", (
                f"{role} holds {op.need!r} (casino.roles.PERMISSIONS) but "
                f"{op.label} refused the role: {response.text[:200]}"
            )

    return [not_refused_for_the_role]


def checks_of_the_croupier(op: Operation, user, theirs: bool, before) -> list:
    """The croupier at a table he does not work at, and his lists."""

    def other_table_is_403_or_404(ctx, response, case):
        if not theirs:
            return
        allowed = (403, 404) if op.method == "GET" else (400, 403, 404)
        assert response.status_code in allowed, (
            f"{op.label} on an object of a table the croupier does not work "
            f"at answered {response.status_code} (want one of {allowed})"
        )

    def other_table_writes_nothing(ctx, response, case):
        if not theirs:
            return
        changes = state_changes(before, db_state())
        assert not changes, (
            f"{op.label} at another croupier's table wrote: " + "; ".join(changes)
        )

    def lists_show_his_table_only(ctx, response, case):
        if op.method != "GET" or not 200 <= response.status_code < 300:
            return
        strangers = []
        for row in rows_of(json_or_none(response)):
            obj, session = table_object(op.collection, row.get("id"))
            if obj is not None and not at_his_table(user, obj, session):
                strangers.append(row.get("id"))
        assert not strangers, (
            f"{op.label} showed the croupier {op.collection} {strangers} of a "
            "table he does not work at"
        )

    return [other_table_is_403_or_404, other_table_writes_nothing,
            lists_show_his_table_only]


# ------------------------------------------------------------------ probe


def id_sources(op: Operation, role: str, neighbours) -> tuple:
    """Which path ids to send: the croupier's own table's objects, the
    neighbouring table's (the croupier in the suite; every role at length),
    and, at length, whatever the fuzzer draws."""
    if not ID_PARAM.search(op.path):
        return (None,)
    sources = ["own"]
    other_differs = (real_ids(op.path, neighbours.own)
                     != real_ids(op.path, neighbours.other))
    if other_differs and (role == CROUPIER or FUZZ_LONG):
        sources.append("other")
    if FUZZ_LONG:
        sources.append("fuzzed")
    return tuple(sources)


def probe(op: Operation, role: str, source, floor, neighbours, app,
          mode: GenerationMode = GenerationMode.POSITIVE,
          examples: int = FUZZ_EXAMPLES) -> None:
    schema_op = SCHEMA[op.path][op.method]
    headers = headers_for(role, floor.tokens)
    ids = {"own": neighbours.own, "other": neighbours.other}.get(source, {})
    path_ids = real_ids(op.path, ids)
    user = floor.users.get(role)
    allowed = in_row(op.need, role)
    is_scoped = allowed and scoped(op, role)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=DERANDOMIZE,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data):
        case = data.draw(schema_op.as_strategy(generation_mode=mode))
        if path_ids:
            case.path_parameters = {**(case.path_parameters or {}), **path_ids}
        theirs = False
        if is_scoped and case.path_parameters:
            pk = next(iter(case.path_parameters.values()))
            obj, session = table_object(op.collection, pk)
            theirs = obj is not None and not at_his_table(user, obj, session)
        if user is not None:
            # Any role may revoke its own API token (when the fuzzer draws its
            # user id): give it back before each request.
            restore_token(user, floor.tokens[role])
        before = db_state() if (not allowed or theirs) else None
        response = case.call(app=app, headers=headers)
        INPUTS["permissions"] += 1
        checks = [not_a_server_error]
        if not allowed:
            checks += checks_outside_the_row(op, role, before)
        else:
            checks += checks_inside_the_row(op, role)
            if is_scoped:
                checks += checks_of_the_croupier(op, user, theirs, before)
        case.validate_response(response, checks=checks, headers=headers)

    run()


def probe_roles(op: Operation, floor, neighbours, app, mode) -> int:
    runs = 0
    for role in ROLES:
        for source in id_sources(op, role, neighbours):
            try:
                probe(op, role, source, floor, neighbours, app, mode)
            except BaseException as exc:
                exc.add_note(f"role: {role}; path ids: {source or 'none'}; "
                             f"needs: {op.need} ({op.view_name})")
                raise
            runs += 1
    return runs


# ------------------------------------------------------------------ tests


def test_every_operation_needs_what_its_view_checks():
    """Each schema operation maps to one known capability (ROUTES), and the
    view's permission classes check exactly that one."""
    unknown, differ = [], []
    for op in OPS.values():
        if op.need is None or (
            op.need not in access.SPECIAL and op.need not in PERMISSIONS
        ):
            unknown.append(f"{op.label} ({op.view_name}): {op.need!r}")
        elif view_needs(op) != {op.need}:
            differ.append(f"{op.label}: ROUTES {op.need!r}, view {view_needs(op)}")
    assert not unknown, (
        "Operations with no known capability: add each to casino.access.ROUTES "
        "with the capability its view checks:\n  " + "\n  ".join(unknown)
    )
    assert not differ, "ROUTES and the views disagree:\n  " + "\n  ".join(differ)


def test_the_croupier_scope_is_within_his_row():
    for capability in OWN_TABLE_ONLY:
        assert CROUPIER in PERMISSIONS[capability], capability
    assert OWN_TABLE_ONLY <= {op.need for op in OPS.values()}


@pytest.mark.parametrize("label", OPERATIONS)
def test_every_role_stays_in_its_row(label, floor, neighbours, wsgi_app):
    op = OPS[label]
    if op.need is None:
        pytest.fail(f"{label} ({op.view_name}) is not in casino.access.ROUTES: "
                    "no role's answer can be checked")
    probe_roles(op, floor, neighbours, wsgi_app, GenerationMode.POSITIVE)
    if FUZZ_LONG and label in NEGATABLE:
        probe_roles(op, floor, neighbours, wsgi_app, GenerationMode.NEGATIVE)


# The checks bite: open a hole on purpose, and the probe must name it.

REVOKE = "POST /api/v1/users/{id}/token/revoke/"


def as_if_role_only(monkeypatch) -> None:
    """The revoke endpoint, as if the table said "pit boss and manager"
    (token.revoke) for it and the service let anyone revoke anyone's token.
    The real endpoint is open to every signed-in user (his own tokens), with
    the rule on both accounts in the service: no role is refused by the
    table there, so the probe is shown a table that refuses the auditor."""
    from casino import tokens

    monkeypatch.setitem(OPS, REVOKE, replace(OPS[REVOKE], need="token.revoke"))
    monkeypatch.setattr(tokens, "may_revoke", lambda actor, target: True)


def failed_checks(label, role, source, floor, neighbours, app) -> set[str]:
    with pytest.raises(FailureGroup) as caught:
        probe(OPS[label], role, source, floor, neighbours, app, examples=2)
    return {re.sub(r".*`(\w+)`.*", r"\1", f.title) for f in caught.value.exceptions}


def test_a_view_opened_to_every_role_is_caught(
    floor, neighbours, wsgi_app, monkeypatch
):
    from rest_framework.permissions import IsAuthenticated

    from casino.tokens import TokenRevokeView

    as_if_role_only(monkeypatch)
    monkeypatch.setattr(TokenRevokeView, "permission_classes", [IsAuthenticated])
    failed = failed_checks(REVOKE, "auditor", "own", floor, neighbours, wsgi_app)
    assert {"no_2xx_outside_the_row", "refused_as_401_or_403",
            "refusal_writes_nothing"} <= failed


def test_a_croupier_reading_another_table_is_caught(
    floor, neighbours, wsgi_app, monkeypatch
):
    from tables.api import views

    monkeypatch.setattr(views, "visible_coups", lambda user, queryset: queryset)
    failed = failed_checks("GET /api/v1/coups/", CROUPIER, None, floor,
                           neighbours, wsgi_app)
    assert failed == {"lists_show_his_table_only"}
    failed = failed_checks("GET /api/v1/coups/{id}/", CROUPIER, "other", floor,
                           neighbours, wsgi_app)
    assert failed == {"other_table_is_403_or_404"}


def test_a_refused_role_that_writes_is_caught(
    floor, neighbours, wsgi_app, monkeypatch
):
    """A view that writes before it refuses: the 403 alone does not pass."""
    from casino.tokens import TokenRevokeView, token_revoke

    def post(self, request, pk):
        from rest_framework.exceptions import PermissionDenied

        token_revoke(user_id=pk, actor=request.user, reason="hole")
        raise PermissionDenied("Your role does not allow token.revoke.")

    as_if_role_only(monkeypatch)
    monkeypatch.setattr(TokenRevokeView, "permission_classes", [])
    monkeypatch.setattr(TokenRevokeView, "post", post)
    failed = failed_checks(REVOKE, "auditor", "own", floor, neighbours, wsgi_app)
    assert failed == {"refusal_writes_nothing"}
