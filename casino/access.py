"""Which capability every URL needs, per HTTP method: the other half of the
permission table (`casino.roles.PERMISSIONS` says which roles hold a
capability).

tests/audit/test_access.py walks every URL pattern of the project (Django's
resolver, so a new URL is covered the day it is added) for every role, and
asserts each answer — allowed or denied — against these two tables. A URL
missing here fails that test: add it, with the capability its view checks.

Views of the floor read this table directly (`ByRoute` for the API,
`route_page` for pages), so for them the table is the only place a rule is
written. Object-level rules come on top (a croupier at his own session only,
four eyes) and are enforced by the services and views.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ImproperlyConfigured
from django.shortcuts import render
from rest_framework.permissions import BasePermission

from .roles import PERMISSIONS, has_capability

PUBLIC = "public"  # anyone, signed in or not
SIGNED_IN = "signed_in"  # any signed-in user, whatever his role
STAFF = "staff"  # the Django admin: staff accounts (the admin role)
SPECIAL = (PUBLIC, SIGNED_IN, STAFF)

R = "table.read"
ROUTES: dict[str, dict[str, str]] = {
    # front door, sign-in, language, API schema
    "home": {"GET": PUBLIC},
    "set_language": {"POST": PUBLIC},
    "login": {"GET": PUBLIC, "POST": PUBLIC},
    "logout": {"POST": PUBLIC},
    "password_change": {"GET": SIGNED_IN, "POST": SIGNED_IN},
    "password_change_done": {"GET": SIGNED_IN},
    "password_reset": {"GET": PUBLIC, "POST": PUBLIC},
    "password_reset_done": {"GET": PUBLIC},
    "password_reset_confirm": {"GET": PUBLIC},
    "password_reset_complete": {"GET": PUBLIC},
    "api-schema": {"GET": PUBLIC},
    # operations (casino/health.py, audit/metrics.py): the load balancer's
    # probe for anyone (no detail); the checks and /metrics for staff (and
    # /metrics for whoever bears METRICS_TOKEN)
    "health": {"GET": PUBLIC},
    "health-details": {"GET": STAFF},
    "metrics": {"GET": STAFF},
    "api-docs": {"GET": PUBLIC},
    # the casino's public signing keys: whoever checks its evidence
    "trail-keys": {"GET": PUBLIC},
    # the trail's latest checkpoint and cosignatures (casino/trail_api.py),
    # for whoever watches the log; one coup's proof, for the auditors
    "trail-checkpoint": {"GET": PUBLIC},
    "api-coup-proof": {"GET": "trail.read"},
    # the icon every browser asks for on a first load
    "favicon": {"GET": PUBLIC},
    # the floor's REST API (tables/api)
    "api-token": {"POST": PUBLIC},
    "api-tables": {"GET": R, "POST": "table.manage"},
    "api-table": {"GET": R},
    "api-table-rules": {"GET": R, "POST": "table.manage"},
    "api-session-open": {"POST": "session.open"},
    "api-sessions": {"GET": R},
    "api-session": {"GET": R},
    "api-session-close": {"POST": "session.close"},
    "api-shoe-open": {"POST": "shoe.manage"},
    "api-turn-open": {"POST": "turn.manage"},
    "api-shoe": {"GET": R},
    "api-shoe-close": {"POST": "shoe.manage"},
    "api-shoe-release": {"POST": "shoe.release"},
    "api-coup-record": {"POST": "coup.record"},
    "api-coup-accept": {"POST": "coup.accept"},
    "api-turn": {"GET": R},
    "api-turn-pass": {"POST": "turn.manage"},
    "api-coups": {"GET": "coup.read"},
    "api-coup": {"GET": "coup.read"},
    "api-check": {"POST": "engine.check"},
    # tableau versions (docs/rules.md, "Tableau versions"): everyone who reads
    # tables reads them; a manager makes one and assigns it to a table
    "api-tableaux": {"GET": R, "POST": "table.manage"},
    "api-tableau": {"GET": R},
    "api-tableau-diff": {"GET": R},
    "api-table-tableau": {"POST": "table.manage"},
    # his own tokens, or a lower role's (token.revoke): casino/tokens.py
    "api-token-revoke": {"POST": SIGNED_IN},
    # the croupier's tablet (issue 3)
    "tablet:tables": {"GET": "coup.record"},
    "tablet:sw": {"GET": PUBLIC},
    "tablet:session-start": {"POST": "session.open"},
    "tablet:session": {"GET": "coup.record"},
    "tablet:shoe-open": {"POST": "shoe.manage"},
    "tablet:turn-open": {"POST": "turn.manage"},
    "tablet:bank-take": {"POST": "turn.manage"},
    "tablet:session-close": {"POST": "session.close"},
    "tablet:coup": {"GET": "coup.record"},
    "tablet:state": {"GET": R},
    "tablet:recent": {"GET": R},
    "tablet:shoe-close": {"POST": "shoe.manage"},
    "tablet:turn-pass": {"POST": "turn.manage"},
    # the croupier's tablet sends it; the pit boss signs it with his password
    "tablet:accept": {"POST": "coup.record"},
    "tablet:lock": {"POST": PUBLIC},
    "tablet:unlock": {"GET": PUBLIC, "POST": PUBLIC},
    "tablet:preferences": {"GET": SIGNED_IN, "POST": SIGNED_IN},
    # the pit boss's floor (issue 4): pages
    "floor:index": {"GET": "floor.view"},
    "floor:tables": {"GET": "floor.view"},
    "floor:session-open": {"POST": "session.open"},
    "floor:queue": {"GET": "flag.read"},
    "floor:flag": {"GET": "flag.read"},
    "floor:flag-confirm": {"POST": "flag.review"},
    "floor:flag-dismiss": {"POST": "flag.review"},
    "floor:coup": {"GET": "flag.read"},
    "floor:correct": {"GET": "coup.correct", "POST": "coup.correct"},
    "floor:session": {"GET": "cagnotte.read"},
    "floor:session-close": {"POST": "session.close"},
    "floor:croupier": {"POST": "session.assign"},
    "floor:count": {"POST": "cagnotte.count"},
    "floor:attest": {"POST": "cagnotte.attest"},
    "floor:stats": {"GET": "stats.read"},
    "floor:trail": {"GET": "trail.read"},
    "floor:rules": {"GET": "floor.view"},
    "floor:table-rules": {"GET": "floor.view", "POST": "table.manage"},
    "floor:shoe-release": {"POST": "shoe.release"},
    # statistical surveillance (issue 14): pages
    "floor:surveillance": {"GET": "surveillance.read"},
    "floor:surveillance-start": {"POST": "surveillance.run"},
    "floor:surveillance-run": {"GET": "surveillance.read"},
    "floor:surveillance-progress": {"GET": "surveillance.read"},
    # the pit boss's floor: API
    "audit-api-floor": {"GET": "floor.view"},
    "audit-api-flags": {"GET": "flag.read"},
    "audit-api-flag-counts": {"GET": "flag.read"},
    "audit-api-flag": {"GET": "flag.read"},
    "audit-api-flag-confirm": {"POST": "flag.review"},
    "audit-api-flag-dismiss": {"POST": "flag.review"},
    "audit-api-correction-preview": {"POST": "coup.correct"},
    "audit-api-correction": {"POST": "coup.correct"},
    "audit-api-revisions": {"GET": "coup.read"},
    "audit-api-cagnotte": {"GET": "cagnotte.read", "POST": "cagnotte.count"},
    "audit-api-attest": {"POST": "cagnotte.attest"},
    "audit-api-croupier": {"POST": "session.assign"},
    "audit-api-stats": {"GET": "stats.read"},
    "audit-api-trail": {"GET": "trail.read"},
    "audit-api-trail-verify": {"GET": "trail.read"},
    "audit-api-surveillance-runs": {"GET": "surveillance.read",
                                    "POST": "surveillance.run"},
    "audit-api-surveillance-run": {"GET": "surveillance.read"},
    "audit-api-surveillance-alerts": {"GET": "surveillance.read"},
    # manager reports (issue 5)
    "reports:dashboard": {"GET": "report.read"},
    "reports:request": {"POST": "report.request"},
    "reports:job": {"GET": "report.read"},
    "reports:download": {"GET": "report.read"},
    "reports:progress": {"GET": "report.read"},
    "reports:reaudit-start": {"POST": "reaudit.run"},
    "reports:reaudit": {"GET": "report.read"},
    "reports-api:jobs": {"GET": "report.read", "POST": "report.request"},
    "reports-api:job": {"GET": "report.read"},
    "reports-api:download": {"GET": "report.read"},
    "reports-api:commission": {"GET": "report.read"},
    "reports-api:odds": {"GET": "report.read"},
    "reports-api:reaudits": {"GET": "report.read", "POST": "reaudit.run"},
    "reports-api:reaudit": {"GET": "report.read"},
    "reports-api:reaudit-findings": {"GET": "report.read"},
    # a manager's tableau pages: managers and auditors read, a manager writes
    "tableaux:list": {"GET": "report.read"},
    "tableaux:new": {"GET": "table.manage", "POST": "table.manage"},
    "tableaux:detail": {"GET": "report.read"},
    "tableaux:assign": {"POST": "table.manage"},
}
# Whole namespaces guarded by one rule (the admin site checks staff itself).
NAMESPACES: dict[str, dict[str, str]] = {
    "admin": {"GET": STAFF, "POST": STAFF},
}


def requirement(view_name: str, method: str) -> str | None:
    """The capability (or PUBLIC / SIGNED_IN / STAFF) for a view and method;
    None when the table does not say — which the URL walk reports."""
    method = "GET" if method in ("HEAD", "OPTIONS") else method
    entry = ROUTES.get(view_name)
    if entry is None and view_name and ":" in view_name:
        entry = NAMESPACES.get(view_name.split(":", 1)[0])
    return None if entry is None else entry.get(method)


def allows(user, need: str | None) -> bool:
    if need is None:
        return bool(user and user.is_authenticated and user.is_superuser)
    if need == PUBLIC:
        return True
    if not user or not user.is_authenticated or not user.is_active:
        return False
    if need == SIGNED_IN:
        return True
    if need == STAFF:
        return user.is_staff
    return has_capability(user, need)


def _view_name(request) -> str:
    match = getattr(request, "resolver_match", None)
    return match.view_name if match else ""


class ByRoute(BasePermission):
    """DRF permission: what ROUTES says for this URL name and method."""

    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        need = requirement(_view_name(request), request.method)
        if need is not None and need not in SPECIAL:
            self.message = f"Your role does not allow {need}."
        return allows(request.user, need)


def route_page(view):
    """Page views: signed out -> the sign-in page; a role without the
    capability ROUTES names for this URL and method -> 403."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        need = requirement(_view_name(request), request.method)
        if need == PUBLIC:
            return view(request, *args, **kwargs)
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not allows(request.user, need):
            return render(request, "audit/forbidden.html",
                          {"capability": need}, status=403)
        return view(request, *args, **kwargs)

    return wrapped


def check_table() -> None:
    """Every capability named in ROUTES exists in PERMISSIONS."""
    for name, methods in {**ROUTES, **NAMESPACES}.items():
        for method, need in methods.items():
            if need not in SPECIAL and need not in PERMISSIONS:
                raise ImproperlyConfigured(
                    f"casino.access.ROUTES[{name!r}][{method!r}]: unknown "
                    f"capability {need!r} (add it to casino.roles.PERMISSIONS)"
                )
