"""Tablet tokens: tied to a user, revoked by a higher role, refused at once.

The token's life (hashing, expiry, password change, deactivation, devices,
the full order of roles) is tried in tests/insider/test_tokens_lifecycle.py."""

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from casino.models import ChangeLog


def token_for(user) -> APIClient:
    client = APIClient()
    r = client.post(
        "/api/v1/auth/token/",
        {"username": user.username, "password": f"pw-{user.username}"},
        format="json",
    )
    assert r.status_code == 200
    client.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    return client


def revoke(client, user, reason="tablet stolen"):
    return client.post(
        f"/api/v1/users/{user.pk}/token/revoke/", {"reason": reason}, format="json"
    )


def test_a_revoked_token_is_refused_at_once(croupier, pitboss, as_user, table):
    tablet = token_for(croupier)
    assert tablet.get("/api/v1/tables/").status_code == 200
    r = revoke(as_user(pitboss), croupier)
    assert r.status_code == 200 and r.json() == {"revoked": True, "tokens": 1}
    assert tablet.get("/api/v1/tables/").status_code == 401
    row = ChangeLog.objects.get(action="auth.token.revoked")
    assert (row.user, row.reason, row.object_id) == (
        pitboss,
        "tablet stolen",
        str(croupier.pk),
    )


@pytest.mark.parametrize("role", ["croupier2", "auditor", "outsider"])
def test_a_peer_or_a_role_without_the_right_cannot_revoke(
    role, request, croupier, as_user
):
    token_for(croupier)
    r = revoke(as_user(request.getfixturevalue(role)), croupier)
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    assert not ChangeLog.objects.filter(action="auth.token.revoked").exists()
    admin = User.objects.create_superuser("boss", password="pw-boss")
    r = revoke(as_user(admin), croupier)
    assert r.json() == {"revoked": True, "tokens": 1}


def test_revoke_needs_a_reason_and_a_real_user(pitboss, croupier, as_user):
    client = as_user(pitboss)
    r = revoke(client, croupier, reason=" ")
    assert r.status_code == 400 and "reason" in r.json()
    r = client.post(
        "/api/v1/users/999999/token/revoke/", {"reason": "x"}, format="json"
    )
    assert r.status_code == 404
