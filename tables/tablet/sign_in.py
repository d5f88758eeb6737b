"""At sign-in, the person's saved language and theme go into the new session
(one read of their TabletProfile): every page then reads them from the
session, and the coup's hot path makes no query for them.

Above ``models``, ``language`` and ``theme``, which import nothing of each
other: the choices live in those two, the saved values in the model."""

from __future__ import annotations

from django.utils import translation

from . import language as languages
from . import theme as themes
from .models import TabletProfile


def on_login(sender, request, user, **kwargs) -> None:
    """user_logged_in: the saved language (if any) and theme (day if none)."""
    if request is None or not hasattr(request, "session"):
        return
    saved = (
        TabletProfile.objects.filter(user=user)
        .values_list("language", "theme")
        .first()
    )
    language, theme = saved or ("", "")
    if language:
        languages.remember(request, language)
        translation.activate(language)
        request.LANGUAGE_CODE = language
    themes.remember(request, theme or themes.DAY)
