"""The Content-Security-Policy (casino/settings.py, casino/csp.py): scripts only
from our own files, none inline, no eval, nothing from another origin.

The every-URL walk (tests/audit/test_access.py) checks that every answer
carries it; the browser tests fail on any console message of a blocked
script, style or request (tests/conftest.py). Here: the policy itself, and
that no template holds what it would block."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
# an inline script: a <script> without src (JSON data blocks run nothing)
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>",
                           re.I)
HANDLER = re.compile(r"<[^>]*\son[a-z]+\s*=", re.I)  # onclick=, onload=...
JS_URL = re.compile(r"""(?:href|src|action)\s*=\s*["']?\s*javascript:""", re.I)


def templates() -> list[Path]:
    found = list((ROOT / "templates").rglob("*.html"))
    for app in ("casino", "tables", "audit"):
        found += (ROOT / app).rglob("templates/**/*.html")
    return found


def test_the_policy_allows_no_inline_script_and_no_other_origin():
    directives = settings.CONTENT_SECURITY_POLICY
    assert directives["script-src"] == ["'self'"]
    assert directives["default-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["base-uri"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]
    for name, sources in directives.items():
        assert not any(s.startswith(("http", "*")) for s in sources), name
        if name != "style-src":
            assert "'unsafe-inline'" not in sources and "'unsafe-eval'" not in sources


def test_no_template_holds_what_the_policy_blocks():
    pages = templates()
    assert len(pages) > 40
    wrong = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for what, pattern in (("inline script", INLINE_SCRIPT),
                              ("event handler", HANDLER), ("javascript: URL", JS_URL)):
            wrong += [f"{page.relative_to(ROOT)}: {what}: {m.group(0)[:60]}"
                      for m in pattern.finditer(text)]
    assert not wrong, "\n".join(wrong)


def test_the_scan_sees_an_inline_script():
    assert INLINE_SCRIPT.search('<p>x</p><script>alert(1)</script>')
    assert not INLINE_SCRIPT.search('<script src="/static/a.js" defer></script>')
    assert not INLINE_SCRIPT.search('<script type="application/json" id="d">')
    assert HANDLER.search('<button type="button" onclick="go()">')
    assert JS_URL.search('<a href="javascript:go()">')


@pytest.mark.django_db
def test_the_api_docs_load_their_script_from_here(client):
    """Swagger UI from our static files (drf-spectacular-sidecar), its start
    script at ?script: nothing inline, nothing from a CDN."""
    r = client.get("/api/docs/")
    assert r.status_code == 200
    page = r.content.decode()
    assert "script-src 'self';" in r.headers["Content-Security-Policy"] + ";"
    assert not INLINE_SCRIPT.search(page)
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', page)
    assert sources and all(s.startswith("/") for s in sources), sources
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert "SwaggerUIBundle" in script.content.decode()


@pytest.mark.django_db
def test_the_policy_is_on_refusals_and_errors_too(client, api, croupier):
    for r in (client.get("/no/such/page/"), api.get("/api/v1/no-such/"),
              api.get("/api/v1/tables/"), client.get("/floor/")):
        assert r.status_code in (302, 401, 403, 404), r.status_code
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]


def test_the_header_is_the_policy_and_a_view_may_set_its_own(rf):
    from django.http import HttpResponse

    from casino.csp import ContentSecurityPolicyMiddleware, policy_text

    text = policy_text({"default-src": ["'self'"], "upgrade-insecure-requests": []})
    assert text == "default-src 'self'; upgrade-insecure-requests"
    plain = ContentSecurityPolicyMiddleware(lambda r: HttpResponse("x"))
    answer = plain(rf.get("/"))
    assert answer["Content-Security-Policy"] == policy_text(
        settings.CONTENT_SECURITY_POLICY)
    assert "script-src 'self';" in answer["Content-Security-Policy"]

    def own(request):
        response = HttpResponse("x")
        response["Content-Security-Policy"] = "default-src 'none'"
        return response

    assert ContentSecurityPolicyMiddleware(own)(rf.get("/"))[
        "Content-Security-Policy"] == "default-src 'none'"
