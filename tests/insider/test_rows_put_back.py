"""A row put back by hand as it once was sealed grants nothing (issue 33).

Each request checks the rows it rests on (its token, its user, his
memberships and their groups) against the state the trail sealed last
(casino/continuity.py). A web worker lives for days and remembers which rows
it has already found sealed, to spare the digests; what it remembers must
not stand in for the seal itself. Here a membership removed through the app
(the trail: deleted), or a user deactivated through the app (his tokens
deleted), is put back with the runtime role's credentials exactly as it was
sealed before, row for row, in the same process that checked it then: the
request must be refused (409, the alarm), never served as before.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from rest_framework.test import APIClient

from casino.models import ApiToken
from casino.tokenauth import token_issue
from tests.conftest import APP_ROLE

pytestmark = [pytest.mark.postgres, pytest.mark.tampers, pytest.mark.django_db]


def sql(statement: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] == APP_ROLE
        cursor.execute(statement, params)


def tablet(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)[1]}")
    return client


def alarmed(label: str) -> bool:
    from audit.models import Flag

    return Flag.objects.filter(
        kind="integrity", severity="critical", ident__startswith=f"x:{label}:"
    ).exists()


def test_a_membership_removed_then_put_back_by_hand_grants_nothing(croupier):
    client = tablet(croupier)
    assert client.get("/api/v1/tables/").status_code == 200  # checked, sealed
    group = Group.objects.get(name="croupier")
    link = croupier.groups.through.objects.get(user=croupier, group=group)
    croupier.groups.remove(group)  # through the app: logged, sealed deleted
    assert client.get("/api/v1/tables/").status_code == 403
    sql("INSERT INTO auth_user_groups (id, user_id, group_id) VALUES (%s, %s, %s)",
        [link.pk, croupier.pk, group.pk])
    r = client.get("/api/v1/tables/")
    assert r.status_code == 409, r.content
    assert "user_groups" in r.json()["detail"]
    assert alarmed("auth.user_groups")


def test_a_user_deactivated_then_put_back_by_hand_signs_nothing_in(croupier):
    client = tablet(croupier)
    assert client.get("/api/v1/tables/").status_code == 200  # checked, sealed
    token = ApiToken.objects.get(user=croupier)
    croupier.is_active = False
    croupier.save()  # through the app: logged, his tokens deleted
    assert not ApiToken.objects.filter(user=croupier).exists()
    assert client.get("/api/v1/tables/").status_code == 401
    sql("UPDATE auth_user SET is_active = true WHERE id = %s", [croupier.pk])
    sql("INSERT INTO casino_apitoken (digest, token_key, user_id, created, expiry, "
        "device, password_mark) VALUES (%s, %s, %s, %s, %s, %s, %s)",
        [token.digest, token.token_key, croupier.pk, token.created, token.expiry,
         token.device, token.password_mark])
    r = client.get("/api/v1/tables/")
    assert r.status_code == 409, r.content
    assert alarmed("casino.apitoken") or alarmed("auth.user")
