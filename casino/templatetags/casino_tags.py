"""Template helpers every page may use (the header, the menus).

`may_open` asks the permission table (casino.access.ROUTES, then
casino.roles.PERMISSIONS) whether a user's GET of a named URL would be let
through: a menu shows a link only when it would be, so no role is ever shown
a link that answers 403 (tests/audit/test_links.py walks them)."""

from __future__ import annotations

from django import template

from casino.access import allows, requirement

register = template.Library()


@register.filter
def may_open(user, view_name: str) -> bool:
    """Show a link to `view_name`? To a signed-out visitor, yes: it leads to
    the sign-in page. To a signed-in user, only when his role opens it."""
    if not getattr(user, "is_authenticated", False):
        return True
    return allows(user, requirement(view_name, "GET"))
