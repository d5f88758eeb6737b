"""The Content-Security-Policy header on every response (casino/settings.py
says the policy and why).

A constant: the policy is one string for every page (no nonce, no page of
its own), made once per process. django-csp builds it at every response,
which cost a coup about half a million instructions (bench/count_coup.py)
for the same string each time. A response that already carries the header
keeps its own.
"""

from __future__ import annotations

from django.conf import settings

HEADER = "Content-Security-Policy"


def policy_text(directives: dict[str, list[str]]) -> str:
    """{"script-src": ["'self'"], ...} -> "script-src 'self'; ..."."""
    return "; ".join(f"{name} {' '.join(sources)}".strip()
                     for name, sources in directives.items())


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response
        self.policy = policy_text(settings.CONTENT_SECURITY_POLICY)

    def __call__(self, request):
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = self.policy
        return response
