"""The casino's public keys (casino/signing.py), for anyone: a regulator, an
auditor, the standalone verifier. Unauthenticated on purpose: a public key
is public, and whoever checks the casino's evidence must not need an account
of the casino's."""

from __future__ import annotations

from django.http import JsonResponse
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
