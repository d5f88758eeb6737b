"""With the cache (Redis in production) unreachable, the floor keeps working:
coups are recorded and read; only what needs Redis (reports) says so."""

from decimal import Decimal

import pytest
import redis.exceptions

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
