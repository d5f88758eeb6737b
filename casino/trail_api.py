"""The trail's Merkle log for outsiders (issue 37): the latest checkpoint with
its cosignatures, for anyone (a witness's operator, a regulator), and one
coup's proof for the auditors (casino/prove.py)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from .access import ByRoute
from .merkle import current_epoch, log_vkey
from .models import Checkpoint
from .prove import ProofUnavailable, coup_prove


def trail_checkpoint(request):
    """The latest checkpoint as a signed note, the witnesses' cosignature
    lines after the log's signature (c2sp.org/tlog-cosignature's example
    form), and the log's verifier key in a header."""
    epoch = current_epoch()[0]
    cp = Checkpoint.objects.filter(epoch=epoch).order_by("-id").first()
    if cp is None:
        return HttpResponse("no checkpoint yet\n", status=404,
                            content_type="text/plain; charset=utf-8")
    lines = "".join(c.line for c in cp.cosignatures.order_by("witness"))
    response = HttpResponse(cp.note + lines, content_type="text/plain; charset=utf-8")
    response["X-Log-Key"] = log_vkey(epoch)
    response["Cache-Control"] = "no-cache"
    return response


class CoupProofView(APIView):
    """One coup's proof: its rows, the log rows that wrote them, their
    inclusion proofs to a cosigned checkpoint and the signatures; check it
    with `python tools/verify_evidence.py coup-proof FILE`."""

    permission_classes = [ByRoute]

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        try:
            return Response(coup_prove(coup_id=pk))
        except ProofUnavailable as exc:
            return Response({"detail": str(exc), "code": "not_proven"}, status=404)
