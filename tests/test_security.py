"""Sign-in lockout (django-axes) and the API's rate limits (casino/throttles.py).

Lockout: AXES_FAILURE_LIMIT failures for one user name from one address lock
that pair out, on the sign-in page (a 429 page) and on the token endpoint
(429 JSON, code "locked_out"), for AXES_COOLOFF_MINUTES; other names on that
address and that name elsewhere still sign in.

Throttles: each scope at a small rate (settings overridden per test): the
request past the rate is a 429 with Retry-After, and another user is not
affected. The schema documents the 429 everywhere.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from decimal import Decimal

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.db.models import F

from casino import access, throttles
from tests.test_settings import ROOT, start

LOGIN = "/accounts/login/"
TOKEN = "/api/v1/auth/token/"
OTHER_IP = "10.1.2.3"


# -- the sign-in page --------------------------------------------------------


def page_login(client, username, password, **extra):
    return client.post(LOGIN, {"username": username, "password": password}, **extra)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_the_limit_is_five_failures_for_a_quarter_of_an_hour(settings):
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert settings.AUTHENTICATION_BACKENDS[:2] == [
        "casino.backends.AddressLimit", "axes.backends.AxesStandaloneBackend"]
    assert settings.LOGIN_ADDRESS_FAILURE_LIMIT == 30


@pytest.mark.django_db
def test_page_locks_a_name_on_one_device_after_five_failures(client, croupier):
    for _ in range(4):
        r = page_login(client, "croupier1", "wrong")
        assert r.status_code == 200  # the form again, with its error
        assert "Unknown user name or wrong password." in r.content.decode()
    r = page_login(client, "croupier1", "wrong")  # the fifth
    assert r.status_code == 429
    page = r.content.decode()
    assert "Sign-in locked" in page and "croupier1" in page
    assert "Try again in 15 minutes" in page
    assert r.headers["Retry-After"] == "900"
    # Locked: even the right password is refused, and nobody is signed in.
    r = page_login(client, "croupier1", "pw-croupier1")
    assert r.status_code == 429 and not signed_in(client)


@pytest.mark.django_db
def test_a_locked_name_does_not_lock_the_device_or_the_person(
    client, croupier, croupier2
):
    for _ in range(5):
        page_login(client, "croupier1", "wrong")
    assert page_login(client, "croupier1", "pw-croupier1").status_code == 429
    # Another croupier on the same tablet signs in.
    r = page_login(client, "croupier2", "pw-croupier2")
    assert r.status_code == 302 and signed_in(client)
    client.logout()
    # The same croupier on another tablet signs in.
    r = page_login(client, "croupier1", "pw-croupier1", REMOTE_ADDR=OTHER_IP)
    assert r.status_code == 302 and signed_in(client)


@pytest.mark.django_db
def test_the_lock_ends_after_the_cool_off(client, croupier):
    for _ in range(5):
        page_login(client, "croupier1", "wrong")
    assert page_login(client, "croupier1", "pw-croupier1").status_code == 429
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=16))
    r = page_login(client, "croupier1", "pw-croupier1")
    assert r.status_code == 302 and signed_in(client)


@pytest.mark.django_db
def test_an_administrator_unlocks_with_the_command(client, croupier, capsys):
    for _ in range(5):
        page_login(client, "croupier1", "wrong")
    call_command("axes_reset_username", "croupier1")
    assert "attempts removed" in capsys.readouterr().out
    r = page_login(client, "croupier1", "pw-croupier1")
    assert r.status_code == 302 and signed_in(client)


@pytest.mark.django_db
def test_a_success_forgets_the_earlier_typos(client, croupier):
    for _ in range(4):
        page_login(client, "croupier1", "wrong")
    assert page_login(client, "croupier1", "pw-croupier1").status_code == 302
    client.logout()
    for _ in range(4):  # four more: still under the limit
        assert page_login(client, "croupier1", "wrong").status_code == 200
    assert page_login(client, "croupier1", "pw-croupier1").status_code == 302


@pytest.mark.django_db
def test_the_lockout_page_speaks_french(client, croupier):
    for _ in range(5):
        r = page_login(client, "croupier1", "wrong", HTTP_ACCEPT_LANGUAGE="fr")
    assert r.status_code == 429
    page = r.content.decode()
    assert "Connexion bloquée" in page and "Réessayez dans 15 minutes" in page


@pytest.mark.django_db
def test_the_admin_sign_in_is_covered_too(client, db):
    from django.contrib.auth.models import User

    User.objects.create_superuser("boss", password="pw-boss")
    for _ in range(4):
        r = client.post("/admin/login/", {"username": "boss", "password": "x"})
        assert r.status_code == 200
    r = client.post("/admin/login/", {"username": "boss", "password": "x"})
    assert r.status_code == 429


@pytest.mark.django_db
def test_the_test_helpers_still_sign_in(client, api, croupier):
    assert client.login(username="croupier1", password="pw-croupier1")
    assert client.get("/tablet/").status_code == 200
    client.logout()
    client.force_login(croupier)
    assert client.get("/tablet/").status_code == 200
    api.force_authenticate(user=croupier)
    assert api.get("/api/v1/tables/").status_code == 200


# -- the API token endpoint --------------------------------------------------


def token(api, username, password, **extra):
    return api.post(
        TOKEN, {"username": username, "password": password}, format="json", **extra
    )


@pytest.mark.django_db
def test_token_endpoint_locks_out_with_a_json_reason(api, croupier, croupier2):
    for _ in range(4):
        r = token(api, "croupier1", "wrong")
        assert r.status_code == 400 and r.json()["password"]
    r = token(api, "croupier1", "wrong")
    assert r.status_code == 429
    body = r.json()
    assert body["code"] == "locked_out"
    assert "too many failed sign-ins" in body["detail"]
    assert body["username"] == [body["detail"]]
    assert r.headers["Retry-After"] == "900"
    r = token(api, "croupier1", "pw-croupier1")
    assert r.status_code == 429 and r.json()["code"] == "locked_out"
    # The same device, another name; the same name, another device.
    assert token(api, "croupier2", "pw-croupier2").status_code == 200
    r = token(api, "croupier1", "pw-croupier1", REMOTE_ADDR=OTHER_IP)
    assert r.status_code == 200 and r.json()["token"]


@pytest.mark.django_db
def test_page_and_token_failures_count_together(client, api, croupier):
    for _ in range(3):
        page_login(client, "croupier1", "wrong")
    assert token(api, "croupier1", "wrong").status_code == 400
    assert token(api, "croupier1", "wrong").status_code == 429
    assert page_login(client, "croupier1", "pw-croupier1").status_code == 429


@pytest.mark.django_db
def test_a_token_success_forgets_the_earlier_typos(api, croupier):
    for _ in range(4):
        token(api, "croupier1", "wrong")
    assert token(api, "croupier1", "pw-croupier1").status_code == 200
    assert not AccessAttempt.objects.filter(username="croupier1").exists()
    for _ in range(4):
        assert token(api, "croupier1", "wrong").status_code == 400


@pytest.mark.django_db
def test_a_forged_forwarded_for_is_still_the_same_device(api, croupier):
    """NUM_PROXIES=0 (no proxy in front): X-Forwarded-For is the client's
    own say-so, and a new one per request must not reset the count."""
    for i in range(5):
        r = token(api, "croupier1", "wrong", HTTP_X_FORWARDED_FOR=f"10.9.9.{i}")
    assert r.status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {
        "127.0.0.1"
    }


def test_client_ip_behind_a_proxy(rf, settings):
    request = rf.get(
        "/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 1.2.3.4"
    )
    assert throttles.client_ip(request) == "10.0.0.1"  # NUM_PROXIES=0
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    assert throttles.client_ip(request) == "1.2.3.4"  # what our proxy saw
    forged = rf.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR="not-an-ip")
    assert throttles.client_ip(forged) == "10.0.0.1"  # axes stores an address


# -- rate limits -------------------------------------------------------------


@pytest.fixture
def rates(settings):
    """rates(coup="3/min", ...): those scopes at those rates for this test."""

    def _set(**scopes):
        rest = dict(settings.REST_FRAMEWORK)
        rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], **scopes}
        settings.REST_FRAMEWORK = rest

    return _set


def assert_throttled(r):
    assert r.status_code == 429, (r.status_code, r.content)
    assert 0 < int(r.headers["Retry-After"]) <= 60
    assert b"Request was throttled" in r.content  # JSON, or the schema's YAML


COUP = {
    "punter": ["2H", "3D"],
    "banker": ["8C", "TS"],
    "stakes": [{"seat": 2, "amount": "100.00"}],
}


@pytest.fixture
def second_table(db, manager, croupier2):
    """Table 2, run by croupier2: a shoe open, a banker at seat 1."""
    from tables import services

    table = services.table_create(
        user=manager, name="Table 2", seats=9, minimum_banco=Decimal("100.00")
    )
    session = services.session_open(table=table, user=croupier2)
    shoe = services.shoe_open(session=session, user=croupier2, burned=5)
    services.banker_turn_open(
        session=session, user=croupier2, seat=1, bank=Decimal("1000.00")
    )
    return shoe


def post_coup(api, user, shoe, key):
    api.force_authenticate(user=user)
    return api.post(
        f"/api/v1/shoes/{shoe.pk}/coups/", COUP, format="json",
        headers={"Idempotency-Key": key},
    )  # fmt: skip


def test_the_default_rates(settings):
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] == {
        "login": "30/min",
        "anon": "60/min",
        "api": "600/min",
        "coup": "120/min",
        "reports": "60/hour",
    }


@pytest.mark.django_db
def test_coup_entry_is_throttled_per_croupier(
    api, rates, croupier, croupier2, shoe, turn, second_table
):
    rates(coup="3/min")
    for i in range(3):
        assert post_coup(api, croupier, shoe, f"c1-{i}").status_code == 201
    assert_throttled(post_coup(api, croupier, shoe, "c1-3"))
    # croupier2, at his own table, is not held back by croupier1's rate
    for i in range(3):
        assert post_coup(api, croupier2, second_table, f"c2-{i}").status_code == 201
    assert_throttled(post_coup(api, croupier2, second_table, "c2-3"))
    # and reading is not the coup scope
    api.force_authenticate(user=croupier)
    assert api.get("/api/v1/coups/").status_code == 200


@pytest.mark.django_db
def test_every_api_request_counts_against_the_user_rate(api, rates, croupier, auditor):
    rates(api="5/min")
    api.force_authenticate(user=croupier)
    for _ in range(5):
        assert api.get("/api/v1/tables/").status_code == 200
    assert_throttled(api.get("/api/v1/tables/"))
    assert_throttled(api.get("/api/v1/coups/"))  # any endpoint: one budget
    api.force_authenticate(user=auditor)
    assert api.get("/api/v1/tables/").status_code == 200


@pytest.mark.django_db
def test_anonymous_requests_are_throttled_per_address(api, rates):
    rates(anon="2/min")
    for _ in range(2):
        assert api.get("/api/schema/").status_code == 200
    assert_throttled(api.get("/api/schema/"))
    assert api.get("/api/schema/", REMOTE_ADDR=OTHER_IP).status_code == 200


@pytest.mark.django_db
def test_the_token_endpoint_is_throttled_per_address(api, rates, croupier):
    rates(login="3/min")
    for name in ("a", "b", "c"):  # guessing across names: no lockout applies
        assert token(api, name, "x").status_code == 400
    r = token(api, "croupier1", "pw-croupier1")
    assert_throttled(r)
    r = token(api, "croupier1", "pw-croupier1", REMOTE_ADDR=OTHER_IP)
    assert r.status_code == 200


@pytest.mark.django_db
def test_report_requests_are_throttled_not_report_reading(api, rates, manager):
    rates(reports="2/min")
    api.force_authenticate(user=manager)
    for _ in range(2):  # invalid bodies: the throttle counts requests
        assert api.post("/api/v1/reports/", {}, format="json").status_code == 400
    assert_throttled(api.post("/api/v1/reports/", {}, format="json"))
    assert_throttled(api.post("/api/v1/reports/reaudit/", {}, format="json"))
    for _ in range(3):
        assert api.get("/api/v1/reports/").status_code == 200


def test_every_route_scope_names_a_url_and_a_rate(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    for name, methods in throttles.ROUTE_SCOPES.items():
        for method, scope in methods.items():
            assert method in access.ROUTES[name], (name, method)
            assert scope in rates, scope


def test_the_schema_documents_the_429_everywhere():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    missing = [
        f"{method.upper()} {path}"
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if "429" not in operation["responses"]
    ]
    assert not missing, missing
    token_op = schema["paths"]["/api/v1/auth/token/"]["post"]["responses"]["429"]
    assert "locked out" in token_op["description"]


# -- settings ----------------------------------------------------------------


@pytest.mark.parametrize(
    "env, variable",
    [
        ({"COUP_THROTTLE": "lots"}, "COUP_THROTTLE"),
        ({"API_THROTTLE": "10/fortnight"}, "API_THROTTLE"),
        ({"AXES_FAILURE_LIMIT": "0"}, "AXES_FAILURE_LIMIT"),
        ({"AXES_COOLOFF_MINUTES": "-1"}, "AXES_COOLOFF_MINUTES"),
        ({"NUM_PROXIES": "-1"}, "NUM_PROXIES"),
    ],
)
def test_a_bad_security_setting_stops_the_start(env, variable):
    result = start(**env)
    assert result.returncode != 0
    assert variable in result.stderr


def rates_with(**env) -> str:
    import os

    code = (
        "import django; django.setup(); from django.conf import settings; "
        "r = settings.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']; "
        "print(sorted((k, v) for k, v in r.items()))"
    )
    ours = {"DATABASE_URL", "API_THROTTLING", "LOGIN_THROTTLE", "ANON_THROTTLE",
            "API_THROTTLE", "COUP_THROTTLE", "REPORTS_THROTTLE"}
    clean = {k: v for k, v in os.environ.items() if k not in ours}
    clean.update(DJANGO_SETTINGS_MODULE="casino.settings", **env)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_rates_from_the_environment_and_the_off_switch():
    out = rates_with(COUP_THROTTLE="off", API_THROTTLE="1000/minute")
    assert "('coup', None)" in out and "('api', '1000/minute')" in out
    assert "('login', '30/min')" in out
    out = rates_with(API_THROTTLING="0")
    for scope in ("anon", "api", "coup", "login", "reports"):
        assert f"('{scope}', None)" in out



def test_drf_refusals_say_what_kind(api, as_user, croupier):
    """401, 404 and 405 bodies carry a `code`, as the service refusals do."""
    assert api.get("/api/v1/coups/").json()["code"] == "not_authenticated"
    client = as_user(croupier)
    assert client.get("/api/v1/coups/987654321/").json()["code"] == "not_found"
    assert client.delete("/api/v1/coups/").json()["code"] == "method_not_allowed"
