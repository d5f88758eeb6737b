"""With the cache (Redis in production) unreachable, the floor keeps working:
coups are recorded and read, the pit boss reviews flags, people sign in (and
the lockout still holds: axes counts in the database), and the API's rate
limits let requests through rather than answer 500 (casino/throttles.py);
the PIN unlock and its attempt limit work (counted in the database); only
what needs Redis (reports) says so."""

import logging
from decimal import Decimal

import pytest
import redis.exceptions

from tests.audit.conftest import FALSE_DRAW, stake

DEAD_REDIS = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
    }
}


@pytest.fixture
def dead_cache(settings):
    settings.CACHES = DEAD_REDIS
    from django.core.cache import cache

    with pytest.raises(redis.exceptions.ConnectionError):
        cache.get("probe")  # the outage is real
    yield


def test_coup_entry_and_reading_without_the_cache(
    as_user, croupier, auditor, shoe, turn, dead_cache
):
    body = {
        "punter": ["2H", "3D"],
        "banker": ["8C", "TS"],
        "stakes": [{"seat": 2, "amount": "100.00"}],
    }
    r = as_user(croupier).post(
        f"/api/v1/shoes/{shoe.pk}/coups/",
        body,
        format="json",
        headers={"Idempotency-Key": "cache-down-1"},
    )
    assert r.status_code == 201, r.content
    assert r.json()["commission"] == "5.00"
    listing = as_user(auditor).get("/api/v1/coups/")
    assert listing.status_code == 200 and listing.json()["count"] == 1
    assert turn.pk and Decimal(r.json()["bank_after"]) == Decimal("195.00")


@pytest.fixture
def flag(shoe, turn, croupier):
    """A false draw at Table 1, flagged for review (built before the outage)."""
    from audit.models import Flag
    from audit.services import flags_sync
    from tables import services

    punter, banker = FALSE_DRAW
    services.coup_record(
        shoe_id=shoe.pk, user=croupier, punter=punter, banker=banker,
        stakes=[stake("200", seat=3)], device="tablet-1",
    )  # fmt: skip
    flags_sync()
    return Flag.objects.get()


def test_the_pit_boss_reviews_flags_without_the_cache(
    client, pitboss, flag, dead_cache
):
    client.force_login(pitboss)
    assert client.get("/floor/").status_code == 200
    queue = client.get("/floor/queue/")
    assert queue.status_code == 200 and "false_draw" in queue.content.decode()
    page = client.get(f"/floor/flags/{flag.pk}/")
    assert page.status_code == 200 and "Confirm" in page.content.decode()
    # Dismissing a finding the record still shows is refused (the page says
    # why); confirming it is recorded.
    r = client.post(f"/floor/flags/{flag.pk}/dismiss/", {"reason": "mis-key"})
    assert r.status_code == 409
    r = client.post(f"/floor/flags/{flag.pk}/confirm/", {"reason": "seen on camera"})
    assert r.status_code == 302
    flag.refresh_from_db()
    assert flag.status == "confirmed" and flag.decided_by == pitboss


def test_signing_in_and_the_lockout_without_the_cache(
    client, api, croupier, croupier2, dead_cache
):
    login = "/accounts/login/"
    r = client.post(login, {"username": "croupier1", "password": "pw-croupier1"})
    assert r.status_code == 302 and "_auth_user_id" in client.session
    client.logout()
    r = api.post(
        "/api/v1/auth/token/",
        {"username": "croupier1", "password": "pw-croupier1"},
        format="json",
    )
    assert r.status_code == 200 and r.json()["token"]
    # Five failures lock croupier2 out on this device, page and API alike.
    for _ in range(4):
        r = client.post(login, {"username": "croupier2", "password": "wrong"})
        assert r.status_code == 200
    r = client.post(login, {"username": "croupier2", "password": "wrong"})
    assert r.status_code == 429
    r = api.post(
        "/api/v1/auth/token/",
        {"username": "croupier2", "password": "pw-croupier2"},
        format="json",
    )
    assert r.status_code == 429 and r.json()["code"] == "locked_out"


def test_throttles_fail_open_without_the_cache(
    as_user, croupier, settings, shoe, turn, dead_cache, caplog, monkeypatch
):
    """At one request a minute, a live cache would refuse the second coup
    (tests/test_security.py shows it); a dead one must not refuse them all
    with a 500, nor with a 429: the coups go through, and the log says why."""
    from casino import throttles

    rest = dict(settings.REST_FRAMEWORK)
    rest["DEFAULT_THROTTLE_RATES"] = {
        **rest["DEFAULT_THROTTLE_RATES"], "coup": "1/min", "api": "1/min",
    }  # fmt: skip
    settings.REST_FRAMEWORK = rest
    monkeypatch.setattr(throttles, "_last_warning", None)
    client = as_user(croupier)
    with caplog.at_level(logging.WARNING, logger="casino.throttles"):
        for i in range(3):
            r = client.post(
                f"/api/v1/shoes/{shoe.pk}/coups/",
                {
                    "punter": ["2H", "3D"],
                    "banker": ["8C", "TS"],
                    "stakes": [{"seat": 2, "amount": "100.00"}],
                },
                format="json",
                headers={"Idempotency-Key": f"fail-open-{i}"},
            )
            assert r.status_code == 201, r.content
        assert client.get("/api/v1/coups/").json()["count"] == 3
    warnings = [r for r in caplog.records if r.name == "casino.throttles"]
    assert len(warnings) == 1  # once a minute, not once a request
    assert "cache is unavailable" in warnings[0].getMessage()


def test_pin_unlock_and_its_limit_hold_without_the_cache(
    client, croupier, croupier2, dead_cache
):
    """A PIN is four digits: what protects it is its attempt limit, counted in
    the database (tables/tablet/pins.py), so with the cache down the limit
    still holds and a right PIN still unlocks; never a 500."""
    from tables.tablet.models import profile_for

    profile = profile_for(croupier2)
    profile.set_pin("2468")
    profile.save()
    r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "2468"})
    assert r.status_code == 302 and client.session["_auth_user_id"] == str(
        croupier2.pk
    )
    client.logout()
    for _ in range(5):
        r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "0000"})
        assert r.status_code == 400
    r = client.post("/tablet/unlock/", {"username": "croupier2", "pin": "2468"})
    assert r.status_code == 429 and b"Too many wrong PINs" in r.content
    assert "_auth_user_id" not in client.session


@pytest.fixture
def hung_cache(settings):
    """A "Redis" that accepts connections and never answers, with the
    production cache options (timeouts)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": settings.REDIS_CACHE_OPTIONS,
        }
    }
    yield
    server.close()


def test_a_hung_cache_fails_fast_and_coups_still_go_in(
    as_user, croupier, shoe, turn, hung_cache
):
    """Without socket timeouts the request below would wait for ever; with
    them every cache call gives up and the coup is recorded. (An alarm turns
    a regression into a failure here instead of a hung suite.)"""
    import signal

    def hung(signum, frame):
        raise AssertionError("the request hung on the cache")

    body = {"punter": ["2H", "3D"], "banker": ["8C", "TS"],
            "stakes": [{"seat": 2, "amount": "100.00"}]}
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        r = as_user(croupier).post(
            f"/api/v1/shoes/{shoe.pk}/coups/", body, format="json")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert r.status_code == 201, r.content
