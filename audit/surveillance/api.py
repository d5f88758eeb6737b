"""The surveillance API: ask for a run over any period (202 with its status
URL; progress there), read a run, list the alerts it found. Permissions come
from casino.access.ROUTES (ByRoute): managers and auditors."""

from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response

from casino.access import ByRoute
from tables.api.views import device_of

from ..models import Flag, SurveillanceRun
from ..selectors import hidden_from
from . import runs
from . import serializers as s
from .selectors import run_alerts

UNAVAILABLE = OpenApiResponse(description="the task queue is unavailable: the "
                              "run is kept and sent when it is back")


def _not_dispatched(run: SurveillanceRun) -> bool:
    if transaction.get_connection().in_atomic_block:
        return False  # the dispatch waits for the commit (tests)
    return run.dispatched_at is None and run.status == SurveillanceRun.Status.QUEUED


class RunListCreate(generics.ListAPIView):
    """Surveillance runs, newest first; POST asks for one (202)."""

    permission_classes = [ByRoute]
    serializer_class = s.RunSerializer
    queryset = SurveillanceRun.objects.select_related("requested_by")

    @extend_schema(request=s.RunRequestSerializer,
                   responses={202: s.RunSerializer, 503: UNAVAILABLE})
    def post(self, request):
        data = s.RunRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = runs.surveillance_request(
            user=request.user, from_day=v["from_day"], to_day=v["to_day"],
            table_ids=v["tables"], fdr=v["fdr"], device=device_of(request))
        run.refresh_from_db()
        body = s.RunSerializer(run).data
        if _not_dispatched(run):
            body = {**body, "detail": f"{runs.UNAVAILABLE}; run #{run.pk} is kept "
                    "and will be sent when the queue is back."}
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": "120"})
        return Response(body, status=status.HTTP_202_ACCEPTED,
                        headers={"Location": body["status_url"]})


class RunDetail(generics.RetrieveAPIView):
    """A run: status, stage, percent, counts, timings, the error if failed."""

    permission_classes = [ByRoute]
    serializer_class = s.RunSerializer
    queryset = SurveillanceRun.objects.select_related("requested_by")


class RunAlerts(generics.ListAPIView):
    """The alerts a run found, as flags in the pit boss's queue (with their
    evidence and review status)."""

    permission_classes = [ByRoute]
    serializer_class = s.AlertSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema's generator
            return Flag.objects.none()
        run = get_object_or_404(SurveillanceRun, pk=self.kwargs["pk"])
        return run_alerts(run, hidden=hidden_from(self.request.user))
