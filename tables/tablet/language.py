"""The language follows the person, not the tablet.

At sign-in the user's saved language goes into the session; the middleware
(after AuthenticationMiddleware) activates it on every request. Reading the
session, not the profile row, keeps the coup hot path free of a query.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import translation

SESSION_KEY = "tablet_language"
SUPPORTED = {code for code, _ in settings.LANGUAGES}


def remember(request, language: str) -> None:
    """Store the choice for this session ("" forgets it: the browser decides)."""
    if language in SUPPORTED:
        request.session[SESSION_KEY] = language
    else:
        request.session.pop(SESSION_KEY, None)


class UserLanguageMiddleware:
    """Activate the signed-in user's language (LocaleMiddleware has already
    chosen one from the cookie or the browser; the person's setting wins)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        language = session.get(SESSION_KEY) if session is not None else None
        if language in SUPPORTED:
            translation.activate(language)
            request.LANGUAGE_CODE = language
        return self.get_response(request)
