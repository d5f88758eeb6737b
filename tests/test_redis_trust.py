"""What is read from Redis decides nothing on its own (issue 33, item 1): the
parts that need no Redis server (the attacks on a real one are
tests/hostile/test_redis_writer.py).

- the cache's seal: JSON signed over the key, the value and the expiry;
- a throttle's history counts only within its window (casino/throttles.py);
- failed sign-ins per address are limited in the database, whatever the
  throttles' counters say (casino.backends.AddressLimit);
- roles come from the database at each request;
- Celery accepts JSON only.
"""

from __future__ import annotations

import json
import pickle
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User

from casino.cache import _MISS, seal, unseal
from casino.roles import has_capability
from casino.throttles import CLOCK_SKEW, sane_history

# -- the seal ------------------------------------------------------------------


def test_an_entry_reads_back_at_its_own_key_only():
    value = {"html": "<p>é</p>", "n": [1, 2.5, None, True]}
    data = seal(":1:a", value, 60)
    assert data.startswith(b"c1.")
    assert unseal(":1:a", data) == value
    assert unseal(":1:b", data) is _MISS  # copied to another key
    body = data.split(b".", 2)[2]
    assert unseal(":1:a", data.replace(body, body.replace(b"2.5", b"9.5"))) is _MISS


def test_a_string_is_stored_as_it_is_and_signed_all_the_same():
    html = '<p class="x">é</p>\n' * 3
    data = seal(":1:a", html, 60)
    assert html.encode() in data  # no escaping to undo at each read
    assert unseal(":1:a", data) == html
    assert unseal(":1:a", data.replace(b"x", b"y")) is _MISS
    assert unseal(":1:b", data) is _MISS
    assert unseal(":1:a", seal(":1:a", "", 60)) == ""
    assert unseal(":1:a", seal(":1:a", ["a\nb"], 60)) == ["a\nb"]


def test_an_entry_past_its_time_is_a_miss_whatever_redis_keeps():
    assert unseal(":1:a", seal(":1:a", "v", -1)) is _MISS
    assert unseal(":1:a", seal(":1:a", "v", None)) == "v"  # no expiry asked


def test_a_pickle_or_plain_json_is_never_loaded(tmp_path):
    class Payload:
        def __reduce__(self):
            return (tmp_path.joinpath("ran").mkdir, ())

    for data in (pickle.dumps(Payload()), json.dumps([None, "v"]).encode(), b"", 7,
                 "c1.x.[null,1]"):
        assert unseal(":1:a", data) is _MISS
    assert not (tmp_path / "ran").exists()


def test_the_key_is_the_secret_key(settings):
    data = seal(":1:a", "v", 60)
    settings.SECRET_KEY = "another-secret-key-of-enough-length-0123456789"
    assert unseal(":1:a", data) is _MISS


def test_what_json_cannot_hold_is_refused_at_the_write():
    from decimal import Decimal

    with pytest.raises(TypeError):
        seal(":1:a", Decimal("1.00"), 60)


def test_the_production_cache_is_the_signed_one():
    """With REDIS_URL the settings choose casino.cache.SignedRedisCache."""
    import subprocess
    import sys

    code = ("import django; django.setup(); from django.conf import settings; "
            "print(settings.CACHES['default']['BACKEND'])")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        cwd=settings.BASE_DIR,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "casino.settings",
             "REDIS_URL": "redis://127.0.0.1:1/0"}).stdout
    assert out.strip() == "casino.cache.SignedRedisCache"


def test_celery_speaks_json_only():
    from casino.celery import app

    assert app.conf.accept_content == ["json"]
    assert app.conf.result_accept_content == ["json"]
    assert app.conf.task_serializer == "json"
    assert app.conf.result_serializer == "json"


# -- the throttles' history ------------------------------------------------------


def test_a_history_counts_only_within_its_window():
    now = 1_000_000.0
    year = now + 365 * 86400
    assert sane_history([year] * 5, now, 60, 3) == []
    assert sane_history([now - 61, now - 60, now - 59], now, 60, 3) == [now - 59]
    assert sane_history([now - 1, now + CLOCK_SKEW, now - 2, now - 3], now, 60, 3) == [
        now + CLOCK_SKEW, now - 1, now - 2]
    assert sane_history(["x", None, True, float("nan"), now], now, 60, 3) == [now]
    assert sane_history({"a": now}, now, 60, 3) == []
    assert sane_history("[1,2]", now, 60, 3) == []


@pytest.mark.django_db
def test_a_signed_history_of_the_future_refuses_nothing(croupier, api, settings):
    """Even a history the app's own key signed (a process whose clock was a
    year ahead) holds no one back beyond the window."""
    from django.core.cache import cache

    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], "api": "2/min"}
    settings.REST_FRAMEWORK = rest
    api.force_authenticate(user=croupier)
    cache.set(f"throttle_api_{croupier.pk}", [time.time() + 365 * 86400] * 5, 60)
    assert api.get("/api/v1/tables/").status_code == 200
    assert api.get("/api/v1/tables/").status_code == 200
    assert api.get("/api/v1/tables/").status_code == 429  # the rate still holds


# -- sign-in: failures per address, in the database -------------------------------


def token(api, username, password, **extra):
    return api.post("/api/v1/auth/token/", {"username": username,
                                            "password": password},
                    format="json", **extra)


@pytest.mark.django_db
def test_failures_per_address_lock_the_address_without_the_cache(
        api, client, croupier, settings):
    """Guessing across names from one address, the throttles' counters gone
    before each try (the cache emptied: Redis flushed, or down): past
    LOGIN_ADDRESS_FAILURE_LIMIT, no one signs in from that address until the
    failures are older than the cool-off; elsewhere he does."""
    from axes.models import AccessAttempt
    from django.core.cache import cache
    from django.db.models import F

    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 7
    for i in range(7):
        cache.clear()
        assert token(api, f"name{i % 3}", "guess").status_code in (400, 429)
    cache.clear()
    r = token(api, "croupier1", "pw-croupier1")
    assert r.status_code == 429 and "whatever the user name" in r.json()["detail"]
    page = client.post("/accounts/login/", {"username": "croupier1",
                                            "password": "pw-croupier1"})
    assert page.status_code == 429
    assert "Other people can still sign in" not in page.content.decode()
    assert token(api, "croupier1", "pw-croupier1",
                 REMOTE_ADDR="10.9.9.9").status_code == 200
    # the failures age out with the cool-off
    aged = settings.AXES_COOLOFF_TIME + timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - aged)
    cache.clear()
    assert token(api, "croupier1", "pw-croupier1").status_code == 200


@pytest.mark.django_db
def test_a_team_with_typos_is_not_locked_out(api, croupier, croupier2, settings):
    """Below the limit, and each success forgetting its name's typos, the
    tablet's team keeps signing in."""
    from django.core.cache import cache

    for _ in range(3):
        for user, pw in (("croupier1", "pw-croupier1"), ("croupier2", "pw-croupier2")):
            cache.clear()
            assert token(api, user, "typo").status_code == 400
            assert token(api, user, pw).status_code == 200


# -- roles ------------------------------------------------------------------------


@pytest.mark.django_db
def test_roles_are_read_from_the_database_at_each_request(croupier, settings):
    """Nothing of the roles is written to the cache, and a role removed is
    gone at the next request, on every web process."""
    from django.core.cache import cache

    assert has_capability(User.objects.get(pk=croupier.pk), "coup.record")
    assert cache.get(f"casino:roles:{croupier.pk}") is None
    croupier.groups.remove(Group.objects.get(name="croupier"))
    assert not has_capability(User.objects.get(pk=croupier.pk), "coup.record")
