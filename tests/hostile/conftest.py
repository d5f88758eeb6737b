"""Fixtures for hostile input: a furnished floor, one API token per role, and
the app reached in-process over WSGI (as gunicorn would call it).

FUZZ_EXAMPLES sets how many inputs hypothesis tries per operation and role
(small in the suite; `make fuzz` raises it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from decimal import Decimal

import pytest

from tests.conftest import make_user

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "2"))
FUZZ_LONG = os.environ.get("FUZZ_LONG", "") not in ("", "0")
# Roles as the API sees them: the four groups, the admin (superuser), a signed-in
# user with no role, and nobody at all.
ROLES = ("croupier", "pitboss", "manager", "auditor", "admin", "outsider", "anonymous")
# Invalid bodies are about parsing and validation, which only a role allowed in
# reaches: in the suite the admin (allowed everywhere) sends them; at length
# (`make fuzz`) every role does, with twice the examples.
NEGATIVE_ROLES = ROLES if FUZZ_LONG else ("admin",)
# In the suite the inputs are the same on every run (derandomized: CI is
# reproducible); `make fuzz` draws new ones each time.
DERANDOMIZE = not FUZZ_LONG


@dataclass
class Floor:
    """Real objects for path ids: a fuzzer that only ever guesses ids tests
    nothing but the 404 branch."""

    tokens: dict[str, str] = field(default_factory=dict)
    ids: dict[str, int] = field(default_factory=dict)
    users: dict = field(default_factory=dict)  # role -> User (not "anonymous")


def restore_token(user, token: str) -> None:
    """Put a role's token back as it was issued, when a request revoked it
    (an allowed role revoking its own: the fuzzer drew its user id)."""
    from django.conf import settings
    from django.utils import timezone
    from knox.crypto import hash_token
    from knox.settings import CONSTANTS

    from casino.models import ApiToken
    from casino.tokenauth import password_mark

    ApiToken.objects.get_or_create(
        digest=hash_token(token),
        defaults={
            "user": user,
            "token_key": token[: CONSTANTS.TOKEN_KEY_LENGTH],
            "expiry": timezone.now() + settings.API_TOKEN_TTL,
            "password_mark": password_mark(user),
            "device": "fuzz",
        },
    )


@pytest.fixture
def floor(db) -> Floor:
    from casino.tokenauth import token_issue
    from tables import services

    out = Floor()
    users = {}
    for role in ROLES:
        if role == "anonymous":
            continue
        group = role if role not in ("admin", "outsider") else None
        users[role] = make_user(f"fz-{role}", group, is_superuser=role == "admin")
        out.tokens[role] = token_issue(user=users[role], device="fuzz")[1]
    out.users = users
    manager, croupier = users["manager"], users["croupier"]
    table = services.table_create(
        user=manager, name="Fuzz", seats=9, minimum_banco=Decimal("100.00")
    )
    session = services.session_open(table=table, user=croupier)
    shoe = services.shoe_open(session=session, user=croupier, burned=5)
    turn = services.banker_turn_open(
        session=session, user=croupier, seat=1, bank=Decimal("1000.00")
    )
    coup = services.coup_record(
        shoe_id=shoe.pk,
        user=croupier,
        punter=["2H", "3D", "4C"],
        banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("300.00"), seat=2)],
    ).coup
    out.ids = {
        "tables": table.pk,
        "sessions": session.pk,
        "shoes": shoe.pk,
        "turns": turn.pk,
        "coups": coup.pk,
    }
    return out


@dataclass
class Neighbours:
    """Path ids for the permission probe: ``own`` names objects at the table
    the fuzz croupier runs (the floor fixture's), ``other`` the same kinds of
    object at a neighbouring table run by another croupier. Both also name a
    flag of that table, a user with a token to revoke, a report job, a
    re-audit run and a cagnotte count, so a refused request meets a real row."""

    own: dict[str, int] = field(default_factory=dict)
    other: dict[str, int] = field(default_factory=dict)


@pytest.fixture
def neighbours(floor) -> Neighbours:
    from audit import services as audit_services
    from audit.models import Flag
    from audit.reports.reaudit import reaudit_request
    from audit.reports.services import report_request
    from casino.tokenauth import token_issue
    from tables import services

    manager, pitboss = floor.users["manager"], floor.users["pitboss"]
    croupier2 = make_user("fz-croupier2", "croupier")
    victim = make_user("fz-victim", "croupier")
    token_issue(user=victim, device="fuzz")
    table = services.table_create(
        user=manager, name="Fuzz 2", seats=9, minimum_banco=Decimal("100.00")
    )
    # An earlier session, closed and counted (the attest endpoint's object),
    # then the one croupier2 runs now.
    earlier = services.session_open(table=table, user=croupier2)
    services.session_close(session=earlier, user=pitboss)
    count = audit_services.cagnotte_count(
        session=earlier, counted=Decimal("0.00"), user=pitboss
    )
    session = services.session_open(table=table, user=croupier2)
    shoe = services.shoe_open(session=session, user=croupier2, burned=5)
    turn = services.banker_turn_open(
        session=session, user=croupier2, seat=1, bank=Decimal("1000.00")
    )
    coup = services.coup_record(
        shoe_id=shoe.pk,
        user=croupier2,
        punter=["2H", "3D", "4C"],
        banker=["8C", "TS"],
        stakes=[services.StakeInput(amount=Decimal("300.00"), seat=2)],
    ).coup
    audit_services.flags_sync()
    day = coup.gaming_day
    job = report_request(user=manager, kind="commission", format="csv",
                         from_day=day, to_day=day)
    run = reaudit_request(user=manager, from_day=day, to_day=day)
    shared = {"users": victim.pk, "reports": job.pk, "reaudit": run.pk,
              "cagnotte": count.pk}

    def flag_of(table_id: int) -> dict[str, int]:
        flag = Flag.objects.filter(table_id=table_id).order_by("pk").first()
        return {"flags": flag.pk} if flag else {}

    return Neighbours(
        own={**floor.ids, **flag_of(floor.ids["tables"]), **shared},
        other={"tables": table.pk, "sessions": session.pk, "shoes": shoe.pk,
               "turns": turn.pk, "coups": coup.pk, **flag_of(table.pk),
               **shared},
    )


@pytest.fixture(autouse=True)
def _no_rate_limits(settings):
    """Hostile input is about what each request does to the data; at the
    fuzzer's volume (hundreds of requests a test from one user) the API's
    rate limits would answer 429 instead (they have their own tests in
    tests/test_security.py)."""
    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(rest["DEFAULT_THROTTLE_RATES"])
    settings.REST_FRAMEWORK = rest


@pytest.fixture
def wsgi_app():
    """Django's WSGI handler, called in-process inside the test's transaction.

    Like Django's test client, keep the request signals from closing the
    connection (that would end the test transaction mid-test)."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)



def pytest_terminal_summary(terminalreporter):
    from .util import INPUTS

    if INPUTS:
        parts = ", ".join(f"{k}: {v}" for k, v in sorted(INPUTS.items()))
        terminalreporter.write_line(
            f"hostile inputs tried: {sum(INPUTS.values())} ({parts})"
        )
