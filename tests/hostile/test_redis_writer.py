"""Someone who can write to Redis, and nothing else (issue 33, attacks 1, 2,
5 and 7): what he writes is never run, never taken as authority, never served
as a page; at worst it refuses a request for one throttle window.

Each attack writes with a plain Redis client into the very database the app's
cache uses (real Redis: marked `redis`), then goes through the app over HTTP
(Django's test client, the whole middleware stack, token auth as a tablet).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import time

import pytest
from django.conf import settings
from django.core.cache import cache

from audit.pages.shared import _pack
from casino.cache import seal
from casino.metrics import CACHE_REFUSED
from casino.roles import ROLES
from tests.conftest import make_user

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def redis_raw():
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    yield client
    client.close()


class Payload:
    """Unpickled, it makes the directory `path`: proof that code ran."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def pickled(path) -> bytes:
    return pickle.dumps(Payload(str(path)))


def roles_key(user) -> str:
    """Where the roles were cached before this release (`:1:casino:roles:<id>`)."""
    return cache.make_key(f"casino:roles:{user.pk}")


def tablet(user):
    from rest_framework.test import APIClient

    from casino.tokenauth import token_issue

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)[1]}")
    return client


def what_a_manager_may_do(client) -> list[int]:
    """Reports, the trail, a new table: the answers."""
    return [client.get("/api/v1/reports/").status_code,
            client.get("/api/v1/trail/").status_code,
            client.post("/api/v1/tables/", {"name": "Forged"},
                        format="json").status_code]


def refused(reason: str) -> float:
    return CACHE_REFUSED.labels(reason=reason)._value.get()


# -- 1, 2: the role entry ----------------------------------------------------

def test_forged_role_entries_give_a_croupier_nothing(
        croupier, manager, redis_raw, tmp_path):
    """A pickle payload, every role with no expiry (raw JSON, a pickled
    list), a manager's genuine signed entry copied onto the croupier's key,
    and the croupier's own signed entry naming every role, expired but made
    persistent: each written into his role entry, then his tablet asks for
    the reports, the trail and a new table: 403 each time, the payload never
    ran, and no table was made."""
    from tables.models import Table

    ran = tmp_path / "pickle-ran"
    everything = sorted(ROLES)
    mine = roles_key(croupier)
    theirs = roles_key(manager)
    cache.set(f"casino:roles:{manager.pk}", everything, 300)  # a genuine entry
    forgeries = {
        "pickle": pickled(ran),
        "every role, JSON": json.dumps(everything).encode(),
        "every role, pickled": pickle.dumps(everything),
        "another user's entry": redis_raw.get(theirs),
        "expired, made persistent": seal(mine, everything, -60),
    }
    client = tablet(croupier)
    tables = Table.objects.count()
    for name, value in forgeries.items():
        assert value, name
        redis_raw.set(mine, value)  # no expiry
        assert redis_raw.ttl(mine) == -1
        assert what_a_manager_may_do(client) == [403, 403, 403], name
    assert not ran.exists()
    assert Table.objects.count() == tables
    # the same requests are the manager's to make: the 403s are the roles'
    assert what_a_manager_may_do(tablet(manager)) == [200, 200, 201]


def test_a_pickle_anywhere_in_the_cache_runs_nothing(
        croupier, redis_raw, tmp_path, caplog, monkeypatch):
    """The cache's own reader (the floor copies, the throttles and any
    later user of it): a pickle at any key is a miss and a warning, never
    unpickled; so are a forged value, another key's entry and a stale one."""
    import casino.cache

    # one warning per 10 s per process: an earlier test in this worker may
    # have had it within the last ten seconds
    monkeypatch.setattr(casino.cache, "_last_warning", None)
    ran = tmp_path / "pickle-ran"
    key = cache.make_key("anything")
    before = refused("signature")
    cache.set("elsewhere", ["genuine"], 300)
    for value in (pickled(ran), b"c1.0000." + json.dumps([None, 1]).encode(),
                  redis_raw.get(cache.make_key("elsewhere"))):
        redis_raw.set(key, value)
        with caplog.at_level(logging.WARNING, logger="casino.cache"):
            assert cache.get("anything", "miss") == "miss"
            assert cache.get_many(["anything"]) == {}
    assert not ran.exists()
    assert refused("signature") - before == 6
    assert "someone who can write to Redis" in caplog.text
    expired = refused("expired")
    redis_raw.set(key, seal(key, "old", -1))
    assert cache.get("anything") is None
    assert refused("expired") - expired == 1
    # and what the app writes, it reads back
    cache.set("anything", {"a": [1, 2.5, "é"]}, 60)
    assert cache.get("anything") == {"a": [1, 2.5, "é"]}


# -- 5: the floor's shared copy -------------------------------------------------

SCRIPT = "<script>alert('floor')</script>"


def test_a_forged_floor_copy_is_not_served(
        client, pitboss, shoe, turn, settings, redis_raw):
    """The floor's shared copy replaced in Redis (raw JSON, a pickle, a
    genuine copy of another key): the next pit boss gets a page rendered for
    him, without the script, and the Content-Security-Policy with it. A copy
    the app itself signed at that key is served: the test can see one."""
    settings.FLOOR_SHARE_SECONDS = 30
    second = make_user("pitboss2", "pitboss")
    client.force_login(pitboss)
    first = client.get("/floor/tables/").content.decode()
    assert "Table 1" in first
    keys = [k.decode() for k in redis_raw.keys("*floor-share:*")
            if not k.endswith(b":rendering")]
    assert keys
    cache.set("elsewhere", _pack(time.time(), SCRIPT), 300)
    copied = redis_raw.get(cache.make_key("elsewhere"))
    for value in (_pack(time.time(), SCRIPT).encode(),
                  json.dumps([time.time(), SCRIPT]).encode(),
                  pickle.dumps((time.time(), SCRIPT)), copied):
        for key in keys:
            redis_raw.set(key, value)
        client.force_login(second)
        r = client.get("/floor/tables/")
        page = r.content.decode()
        assert SCRIPT not in page and "Table 1" in page
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
    # control: a copy signed by the app at that key is what readers get
    for key in keys:
        unprefixed = key.split(":", 2)[2]
        cache.set(unprefixed, _pack(time.time(), "<p>the signed copy</p>"), 60)
    assert "the signed copy" in client.get("/floor/tables/").content.decode()


# -- 7: the throttles ---------------------------------------------------------

@pytest.fixture
def rates(settings):
    def _set(**scopes):
        rest = dict(settings.REST_FRAMEWORK)
        rest["DEFAULT_THROTTLE_RATES"] = {**rest["DEFAULT_THROTTLE_RATES"], **scopes}
        settings.REST_FRAMEWORK = rest

    return _set


def test_a_forged_throttle_history_refuses_at_most_one_window(
        croupier, rates, redis_raw):
    """A croupier's throttle history filled to refuse him for a year: raw
    (a pickle, JSON) it is not read at all; signed (as if by a process that
    held the key, or with its clock a year ahead), its times beyond the
    clock are dropped. A history full of genuine recent times refuses him
    for no longer than the window (2 s here)."""
    rates(api="3/s")
    client = tablet(croupier)
    assert client.get("/api/v1/tables/").status_code == 200
    key = cache.make_key(f"throttle_api_{croupier.pk}")
    assert redis_raw.exists(key)
    year = time.time() + 365 * 86400
    for value in (pickle.dumps([year] * 10), json.dumps([year] * 10).encode(),
                  seal(key, [year] * 10, 365 * 86400)):
        redis_raw.set(key, value)
        assert client.get("/api/v1/tables/").status_code == 200
    now = time.time()
    redis_raw.set(key, seal(key, [now, now, now], 365 * 86400))
    assert client.get("/api/v1/tables/").status_code == 429
    time.sleep(1.1)
    assert client.get("/api/v1/tables/").status_code == 200


def test_deleting_the_sign_in_throttle_lets_no_more_guesses_through(
        api, croupier, rates, settings, redis_raw):
    """Guessing passwords across user names from one tablet, the sign-in
    throttle's keys deleted in Redis before every try: the address's failures
    are counted in the database, and past LOGIN_ADDRESS_FAILURE_LIMIT no one
    signs in from there, the right password of a real croupier included, on
    the API and on the sign-in page alike."""
    rates(login="3/min")
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = 6
    for i in range(6):
        deleted = redis_raw.delete(*redis_raw.keys("*throttle_login_*") or [b"none"])
        assert deleted == (1 if i else 0)  # the throttle counted the last one
        r = api.post("/api/v1/auth/token/", {"username": f"name{i}",
                                             "password": "guess"}, format="json")
        assert r.status_code == 400, r.content
    redis_raw.delete(*redis_raw.keys("*throttle_login_*"))
    r = api.post("/api/v1/auth/token/", {"username": "croupier1",
                                         "password": "pw-croupier1"}, format="json")
    assert r.status_code == 429 and r.json()["code"] == "locked_out"
    assert "whatever the user name" in r.json()["detail"]
    r = api.post("/accounts/login/", {"username": "croupier1",
                                      "password": "pw-croupier1"})
    assert r.status_code == 429
    assert "_auth_user_id" not in api.session
    # from another address he signs in
    r = api.post("/api/v1/auth/token/", {"username": "croupier1",
                                         "password": "pw-croupier1"},
                 format="json", REMOTE_ADDR="10.9.9.9")
    assert r.status_code == 200


# -- the workers' heartbeats -------------------------------------------------------

def test_a_forged_heartbeat_does_not_make_a_dead_worker_alive(redis_raw):
    """A heartbeat written into Redis as the workers wrote them before (a bare
    time), a signed one copied from another worker's key, or one far ahead of
    the clock: the health check still says no worker. A worker's own signed
    beat is counted: the check can see one."""
    from casino.health import HEARTBEAT_PREFIX, _Heartbeat, health_run

    def worker():
        return {r.name: r for r in health_run()}["worker"]

    for key in redis_raw.scan_iter(f"{HEARTBEAT_PREFIX}*"):
        redis_raw.delete(key)
    real = _Heartbeat("real@host")
    real.beat(redis_raw)
    genuine = redis_raw.get(real.key)
    redis_raw.delete(real.key)
    ahead = time.time() + 86400
    forged = HEARTBEAT_PREFIX + "forged@host"
    for value in (f"{time.time():.3f}".encode(), genuine,
                  seal(forged, ahead, 30)):
        redis_raw.set(forged, value, ex=30)
        assert not worker().ok, value
    redis_raw.delete(forged)
    real.beat(redis_raw)
    assert worker().ok and worker().values["workers"] == 1
    redis_raw.delete(real.key)


def test_a_heartbeat_moved_to_another_queue_is_not_counted(redis_raw):
    """A worker's beat names the queues it takes, sealed with it: copied
    under a key that names another queue, it does not read, and the health
    check still says no worker takes that queue."""
    from casino.health import HEARTBEAT_PREFIX, _Heartbeat, health_run

    def worker():
        return {r.name: r for r in health_run()}["worker"]

    for key in redis_raw.scan_iter(f"{HEARTBEAT_PREFIX}*"):
        redis_raw.delete(key)
    heavy = _Heartbeat("heavy@host", ["celery"])
    heavy.beat(redis_raw)
    assert heavy.key.endswith("|celery")
    check = worker()
    assert not check.ok and "clock queue" in check.message
    moved = heavy.key.replace("|celery", "|celery+clock")
    redis_raw.set(moved, redis_raw.get(heavy.key), ex=30)
    check = worker()
    assert not check.ok and check.values["queues"] == {"celery": 1, "clock": 0}
    redis_raw.delete(moved)
    both = _Heartbeat("clock@host", ["clock"])
    both.beat(redis_raw)
    assert worker().ok and worker().values["queues"] == {"celery": 1, "clock": 1}
    for key in (heavy.key, both.key):
        redis_raw.delete(key)


def test_touch_and_incr_keep_the_seal():
    """touch() gives an entry a new signed time; incr() is refused rather
    than letting Redis count a signed value up."""
    cache.set("kept", "v", 1)
    assert cache.touch("kept", 60)
    time.sleep(1.2)
    assert cache.get("kept") == "v"  # past its first time: touched
    assert not cache.touch("never-set", 60)
    cache.set("n", 1, 60)
    with pytest.raises(NotImplementedError):
        cache.incr("n")
