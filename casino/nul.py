"""No NUL byte reaches a view: a 400 that names the parameter, not a 500.

PostgreSQL refuses a NUL (0x00) in any text it is sent, so a view that
filters on `?action=%00` or looks up `?against=%00` raised a 500 there
(SQLite takes it). No value a person types holds one, so this middleware
refuses, for every page and every API call alike, a request whose query
string or form body carries a NUL in a value or a name, before any view
reads it. The API's answer has the shape of its other 4xx
(casino.api.exception_handler): {"<parameter>": ["<message>"], "detail":
"<parameter>: <message>", "code": "invalid"}; a page's is a line of text
that names the parameter. A JSON body is the serializers' to check (DRF's
CharField refuses a NUL; tests/hostile fuzzes the API).
"""

from __future__ import annotations

from django.core.exceptions import (
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError

NUL = "\x00"
MESSAGE = "must not contain a NUL byte (%00)"
# The bodies Django parses into request.POST (a form, a file upload).
FORM_TYPES = {"application/x-www-form-urlencoded", "multipart/form-data"}
# A body Django cannot parse: left for the view to meet (and answer) as before.
UNPARSED = (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent,
            MultiPartParserError, OSError)


class NulByteMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        name = nul_parameter(request)
        if name is None:
            return self.get_response(request)
        return refusal(request, name)


def nul_parameter(request) -> str | None:
    """The first query-string or form parameter holding a NUL (in its value
    or its name), as it may be printed; None when there is none."""
    for name, values in _parameters(request):
        if NUL in name or any(NUL in v for v in values):
            return name.replace(NUL, "%00")
    return None


def _parameters(request):
    yield from request.GET.lists()
    if request.method == "POST" and request.content_type in FORM_TYPES:
        try:
            form = request.POST
        except UNPARSED:
            return
        yield from form.lists()


def refusal(request, name: str):
    if request.path.startswith("/api/"):
        return JsonResponse({name: [MESSAGE], "detail": f"{name}: {MESSAGE}",
                             "code": "invalid"}, status=400)
    return HttpResponseBadRequest(f"Bad request: the parameter {name!r} {MESSAGE}.\n",
                                  content_type="text/plain; charset=utf-8")
