"""Browser sessions that reading the database does not give away
(SESSION_ENGINE; issue 33, item 7).

Django's database store keeps the cookie's value, the session key, as the
row's primary key: whoever can read `django_session` (the runtime role) sends
a signed-in manager's key back and is him. This store, Django's otherwise:

- **The row's key is a digest of the cookie's** (SHA-256; its first 160 bits,
  as hex, since the column holds 40 characters), as the API tokens are
  stored (casino/tokenauth.py). A key is 32 random characters (~165 bits):
  the digest cannot be turned back into a cookie.
- **The row's data is bound to that digest**: signed with SECRET_KEY (as
  Django signs session data) under a salt that names the digest. The runtime
  role may INSERT any row, but data copied under the digest of a key of his
  choosing does not verify there: that cookie opens an empty session (signed
  out), and he cannot sign data of his own without the key.
- **A session lasts SESSION_COOKIE_AGE from its creation** (a sign-in makes
  a new one: Django cycles the key), whatever the row's `expire_date` says:
  the creation time is inside the signed data, checked at every load, and
  the signature's own time stamp must be younger than that age too. An
  expiry set to 2099 by hand keeps a dead row, never a live session.
- **Sign-out deletes the row** (Django's flush), and no copy of a session
  can work under another key, so nothing of it is left. Other sessions of the
  same person stay (his office PC and the floor's are his; a password change
  or a deactivation ends them all, through Django's session auth hash and
  `is_active`).

What a writer of `django_session` can still do: delete rows (everyone signed
out: a refusal), and put back a row he deleted or saved earlier, which only
helps whoever holds that very cookie, within its age from sign-in.

Upgrading from Django's store signs everyone out once: migration casino 0014
deletes the old rows (their keys were the cookies), and an old cookie finds
no row.
"""

from __future__ import annotations

import hashlib
import logging
import time
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.sessions.backends import db
from django.core import signing
from django.utils import timezone

log = logging.getLogger("django.security.SuspiciousSession")


def stored_key(session_key: str) -> str:
    """The row's key for a cookie's session key."""
    return hashlib.sha256(session_key.encode()).hexdigest()[:40]


class SessionStore(db.SessionStore):
    # When the session was created (epoch seconds): read from its signed
    # data, or set when a new key is made.
    _born: int | None = None

    def _salt(self, stored: str) -> str:
        return f"{self.key_salt}:{stored}"

    def _open(self, row) -> dict | None:
        """The row's data if it was signed for this row's key, and the session
        is younger than SESSION_COOKIE_AGE; else None."""
        age = settings.SESSION_COOKIE_AGE
        try:
            box = signing.loads(row.session_data, salt=self._salt(row.session_key),
                                serializer=self.serializer, max_age=age)
        except signing.BadSignature:  # SignatureExpired too
            log.warning("Session data not signed for its key, or too old")
            return None
        except Exception:  # noqa: BLE001 (Django's store: a bad row is no session)
            return None
        born = box.get("born") if isinstance(box, dict) else None
        if type(born) is not int or not isinstance(box.get("data"), dict):
            return None
        if born + age <= time.time():
            return None
        self._born = born
        return box["data"]

    def load(self):
        key = self.session_key
        row = None
        if key is not None:
            row = self.model.objects.filter(
                session_key=stored_key(key), expire_date__gt=timezone.now()
            ).first()
        data = self._open(row) if row is not None else None
        if data is None:
            self._session_key = None
            return {}
        return data

    def exists(self, session_key):
        return self.model.objects.filter(session_key=stored_key(session_key)).exists()

    def create(self):
        self._born = None  # a new key: a new session, its age from now
        super().create()

    def create_model_instance(self, data):
        stored = stored_key(self._get_or_create_session_key())
        if self._born is None:
            self._born = int(time.time())
        end = datetime.fromtimestamp(self._born + settings.SESSION_COOKIE_AGE, UTC)
        return self.model(
            session_key=stored,
            session_data=signing.dumps(
                {"born": self._born, "data": data}, salt=self._salt(stored),
                serializer=self.serializer, compress=True),
            expire_date=min(self.get_expiry_date(), end),
        )

    def delete(self, session_key=None):
        if session_key is None:
            if self.session_key is None:
                return
            session_key = self.session_key
        self.model.objects.filter(session_key=stored_key(session_key)).delete()

    # The async API (Django's asave, aflush, acycle_key...) goes through the
    # same digests: only the pieces that touch a key or the data differ.
    async def aload(self):
        return await sync_to_async(self.load)()

    async def aexists(self, session_key):
        return await sync_to_async(self.exists)(session_key)

    async def acreate(self):
        self._born = None
        await super().acreate()

    async def acreate_model_instance(self, data):
        return await sync_to_async(self.create_model_instance)(data)

    async def adelete(self, session_key=None):
        await sync_to_async(self.delete)(session_key)
