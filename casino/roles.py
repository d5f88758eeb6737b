"""Roles are Django groups. One table says which role may do what; the API
permission classes and the pages read it, and a test walks it."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

CROUPIER = "croupier"
PITBOSS = "pitboss"
MANAGER = "manager"
AUDITOR = "auditor"
ROLES = (CROUPIER, PITBOSS, MANAGER, AUDITOR)

# capability -> roles allowed (superusers — the admin role — may do everything)
PERMISSIONS: dict[str, frozenset[str]] = {
    "table.read": frozenset({CROUPIER, PITBOSS, MANAGER, AUDITOR}),
    "table.manage": frozenset({MANAGER}),
    "session.open": frozenset({CROUPIER, PITBOSS}),
    "session.close": frozenset({PITBOSS}),
    "shoe.manage": frozenset({CROUPIER, PITBOSS}),
    "turn.manage": frozenset({CROUPIER, PITBOSS}),
    "coup.record": frozenset({CROUPIER, PITBOSS}),
    "coup.read": frozenset({CROUPIER, PITBOSS, MANAGER, AUDITOR}),
    "engine.check": frozenset({CROUPIER, PITBOSS, MANAGER, AUDITOR}),
}


def user_roles(user) -> frozenset[str]:
    if not user or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_casino_roles", None)
    if cached is None:
        cached = frozenset(user.groups.values_list("name", flat=True))
        user._casino_roles = cached
    return cached


def has_capability(user, capability: str) -> bool:
    if not user or not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return bool(user_roles(user) & PERMISSIONS[capability])


def Can(capability: str) -> type[BasePermission]:  # noqa: N802 - reads like a class
    """DRF permission class for one capability of the table above."""

    class _Can(BasePermission):
        message = f"Your role does not allow {capability}."

        def has_permission(self, request, view) -> bool:
            return has_capability(request.user, capability)

    _Can.__name__ = f"Can[{capability}]"
    return _Can
