"""Public pages of the casino itself, for anyone. The public keys
(casino/signing.py): a regulator, an auditor, the standalone verifier.
Unauthenticated on purpose: a public key is public, and whoever checks the
casino's evidence must not need an account of the casino's. The icon every
browser asks for."""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from .access import route_page
from .signing import keys_document


@require_GET
@route_page
def trail_keys(request):
    """`{"algorithm": "Ed25519", "keys": [{"id", "public_key_pem",
    "public_key_b64", "from", "until"}]}`: the current key first, then the
    retired ones with the dates they signed."""
    response = JsonResponse(keys_document(), json_dumps_params={"indent": 1})
    response["Cache-Control"] = "public, max-age=300"
    response["Access-Control-Allow-Origin"] = "*"
    return response


@cache
def _icon() -> bytes:
    return (settings.BASE_DIR / "static" / "favicon.png").read_bytes()


@require_GET
@route_page
def favicon(request):
    """`/favicon.ico`, which every browser asks for on a first load: the
    house's icon (a PNG, as browsers take it), never a 404 in the console."""
    response = HttpResponse(_icon(), content_type="image/png")
    response["Cache-Control"] = "public, max-age=86400"
    return response
