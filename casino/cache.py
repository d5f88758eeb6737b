"""The shared cache (Redis): data, never code, and never taken on trust.

Django's RedisCache pickles what it stores, and unpickles what it reads: who
can write to Redis (a neighbour on its network, a leaked REDIS_URL) ran code
inside the web process, whose environment holds TRAIL_KEY and the signing key.
`SignedRedisCache` stores JSON instead (no code can come out of it), and
signs each entry with an HMAC keyed from SECRET_KEY (which Redis never
holds), over the entry's own cache key, its value and the time it expires.
An entry read back is used only if its signature holds, at that key, before
that time; anything else (a forged value, a pickle, another key's genuine
entry copied over, an entry made persistent beyond its time) is a cache
miss: a warning in the log and `casino_cache_refused_total` in /metrics, and
the caller computes the value as it would without a cache.

So what a Redis writer can still do is delete an entry (a miss: the value is
computed again), or put back a genuine entry of the same key before its
time ran out (what the cache held moments ago). Who uses the cache, and what
that means for each, is the trust-boundary table of docs/security.md.

What can be stored is what JSON holds: None, bool, int, float, str, lists
(a tuple comes back a list) and dicts with str keys; anything else is a
TypeError at the write, never a silent change. A str alone is stored as its
text (see `seal`). `incr`/`decr` are refused (a
signed entry cannot be counted up by Redis itself); nothing here uses them.
`touch` seals the value again with its new time (a read and a write).
"""

from __future__ import annotations

import hmac
import json
import logging
import time

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from django.utils.crypto import salted_hmac

from .metrics import CACHE_REFUSED

log = logging.getLogger(__name__)

SALT = "casino.cache.SignedRedisCache"
VERSION = b"c1"  # the entry format; another one is a miss
WARN_EVERY = 10.0  # seconds: at most one warning this often per process
_last_warning: float | None = None
_MISS = object()


def _mac(key: str, body: bytes) -> bytes:
    message = key.encode() + b"\n" + body
    return salted_hmac(SALT, message, algorithm="sha256").hexdigest().encode()


def seal(key: str, value, timeout: int | None) -> bytes:
    """`value` as stored under `key`: "c1.<hmac>.<head>\n<payload>", the head
    JSON [expires, kind]; the payload the text itself for a str (kind "s":
    a floor copy is 300 kB of HTML, whose every quote JSON would escape and
    unescape: milliseconds a read), else JSON (kind "j")."""
    expires = None if timeout is None else round(time.time() + timeout, 3)
    if type(value) is str:
        kind, payload = "s", value.encode()
    else:
        kind = "j"
        payload = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    body = json.dumps([expires, kind]).encode() + b"\n" + payload
    return VERSION + b"." + _mac(key, body) + b"." + body


def unseal(key: str, data: bytes | str | int):
    """The value `seal(key, ...)` stored, or _MISS (and the warning) for an
    entry this app did not write at this key or whose time is past. Nothing
    is decoded before its signature holds."""
    if isinstance(data, int):  # redis-py gives bytes; a number is not ours
        data = str(data).encode()
    elif isinstance(data, str):
        data = data.encode()
    version, _, rest = data.partition(b".")
    mac, _, body = rest.partition(b".")
    if version != VERSION or not hmac.compare_digest(mac, _mac(key, body)):
        return _refused(key, "signature")
    head, _, payload = body.partition(b"\n")
    expires, kind = json.loads(head)
    if expires is not None and time.time() > expires:
        return _refused(key, "expired")
    return payload.decode() if kind == "s" else json.loads(payload)


def _refused(key: str, reason: str):
    global _last_warning
    CACHE_REFUSED.labels(reason=reason).inc()
    now = time.monotonic()
    if _last_warning is None or now - _last_warning >= WARN_EVERY:
        _last_warning = now
        what = ("its signature does not hold: not written by this app at this "
                "key" if reason == "signature" else "it is past its time")
        log.warning("cache entry %r refused, %s (read as a miss; someone who "
                    "can write to Redis may be at work)", key, what)
    return _MISS


class SignedRedisCacheClient(RedisCacheClient):
    """Django's client, its values sealed with their key (see the module)."""

    def add(self, key, value, timeout):
        client = self.get_client(key, write=True)
        data = seal(key, value, timeout)
        if timeout == 0:
            if ret := bool(client.set(key, data, nx=True)):
                client.delete(key)
            return ret
        return bool(client.set(key, data, ex=timeout, nx=True))

    def get(self, key, default):
        data = self.get_client(key).get(key)
        if data is None:
            return default
        value = unseal(key, data)
        return default if value is _MISS else value

    def set(self, key, value, timeout):
        client = self.get_client(key, write=True)
        data = seal(key, value, timeout)
        if timeout == 0:
            client.delete(key)
        else:
            client.set(key, data, ex=timeout)

    def get_many(self, keys):
        keys = list(keys)
        found = {}
        for key, data in zip(keys, self.get_client(None).mget(keys), strict=True):
            if data is not None and (value := unseal(key, data)) is not _MISS:
                found[key] = value
        return found

    def set_many(self, data, timeout):
        pipeline = self.get_client(None, write=True).pipeline()
        pipeline.mset({k: seal(k, v, timeout) for k, v in data.items()})
        if timeout is not None:
            for key in data:
                pipeline.expire(key, timeout)
        pipeline.execute()

    def touch(self, key, timeout):
        # the time is inside the signed value: sealed again with the new one
        value = self.get(key, _MISS)
        if value is _MISS:
            return False
        self.set(key, value, timeout)
        return True

    def incr(self, key, delta):
        raise NotImplementedError(
            "SignedRedisCache: incr/decr would let Redis change a signed value; "
            "get and set instead")


class SignedRedisCache(RedisCache):
    """settings.CACHES["default"] with REDIS_URL (casino/settings.py)."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = SignedRedisCacheClient
