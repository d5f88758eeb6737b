"""The screen theme follows the person, like the language: "day" (light) or
"night" (dark, high contrast, for a dim gaming room).

Chosen in the tablet's Settings and kept on the user's TabletProfile; at
sign-in it goes into the session (tables/tablet/sign_in.py), and every page
(tablet, floor, reports) reads it from there through the context processor
below, so the page is rendered with ``<html data-theme="night">`` from its
first byte: no flash of the light theme, and no query on the coup's hot path.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

SESSION_KEY = "ui_theme"
DAY = "day"
NIGHT = "night"
CHOICES = [(DAY, _("Day (light)")), (NIGHT, _("Night (dark, high contrast)"))]
SUPPORTED = {code for code, _label in CHOICES}


def remember(request, theme: str) -> None:
    """Keep the choice for this session (day, the default, is not stored)."""
    if theme == NIGHT:
        request.session[SESSION_KEY] = NIGHT
    else:
        request.session.pop(SESSION_KEY, None)


def current(request) -> str:
    session = getattr(request, "session", None)
    theme = session.get(SESSION_KEY) if session is not None else None
    return theme if theme in SUPPORTED else DAY


def context(request) -> dict:
    """Template context processor: ``ui_theme`` for ``<html data-theme>``."""
    return {"ui_theme": current(request)}
