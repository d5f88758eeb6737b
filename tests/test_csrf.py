"""CSRF on every form: every POST form of the templates carries the token, and
every URL of the project refuses a cookie-authenticated POST without it.

The URLs come from Django's resolver (tests/audit/test_access.py walks them
the same way), so a URL added tomorrow is checked tomorrow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from tests.audit.test_access import all_urls
from tests.conftest import make_user

# Not cookie-authenticated, so CSRF does not apply: the token endpoint takes a
# user name and password in the body and sets no session.
NO_COOKIE_AUTH = {"api-token"}
FORM = re.compile(r"<form\b[^>]*>.*?</form>", re.S | re.I)
POST = re.compile(r"""method\s*=\s*["']?post""", re.I)


def post_forms():
    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in Path(folder).rglob("*.html"):
            for form in FORM.findall(path.read_text()):
                opening = form.split(">", 1)[0]
                if POST.search(opening):
                    yield path.relative_to(folder), form


def test_every_post_form_carries_the_token():
    forms = list(post_forms())
    assert len(forms) >= 10, "the walk found the project's forms"
    missing = [str(path) for path, form in forms if "{% csrf_token %}" not in form]
    assert not missing, f"POST forms without {{% csrf_token %}}: {missing}"


SECRET = "csrfsecretcsrfsecretcsrfsecret12"  # 32 characters: a cookie secret


@pytest.mark.django_db
def test_every_url_refuses_a_post_without_the_token():
    """Each URL, posted by an admin with a session cookie: refused (403)
    without the token, let through with it (or refused then for a reason of
    its own, the first refusal naming CSRF). The pair proves the refusal is
    the CSRF check. Each pair has a fresh session, so
    that a POST that signs out or locks a tablet does not change the next."""
    admin = make_user("csrf-admin", None, is_superuser=True, is_staff=True)
    checked, problems = 0, []
    for url in all_urls():
        if url.path is None or url.key in NO_COOKIE_AUTH:
            continue
        client = Client(enforce_csrf_checks=True)
        client.force_login(admin)
        client.cookies[settings.CSRF_COOKIE_NAME] = SECRET
        # A JSON body: the API parses nothing else (a form body gets its 415
        # first), and a page then finds no token in the form either.
        refused = client.post(url.path, "{}", content_type="application/json")
        if refused.status_code == 405:
            continue  # takes no POST at all
        checked += 1
        allowed = client.post(url.path, "{}", content_type="application/json",
                              HTTP_X_CSRFTOKEN=SECRET)
        # With the token, a 403 can only be the view's own refusal (the
        # admin's read-only models: no "add"); then the body of the first
        # must name the CSRF check.
        csrf_named = b"CSRF" in refused.content
        if refused.status_code != 403 or (
            allowed.status_code == 403 and not csrf_named
        ):
            problems.append(
                f"{url.key} {url.path}: {refused.status_code} without the token, "
                f"{allowed.status_code} with it"
            )
    assert checked >= 40, checked
    assert not problems, problems
