"""Reports API: thin views over the services and selectors.

A request answers at once (202 with the job's status URL); the file is built
by a Celery task. If the task queue is down the answer is 503, and the job is
kept queued (it is sent when the queue is back).
"""

from __future__ import annotations

from django.db import transaction
from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView, RetrieveAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from casino import replica
from casino.roles import Can

from . import reaudit as reaudit_services
from . import services
from .files import job_file_open, job_name
from .models import ReauditFinding, ReauditRun, ReportJob, Status
from .odds import as_decimal, compute_odds
from .selectors import commission_report
from .serializers import (
    CommissionQuerySerializer,
    OddsQuerySerializer,
    ReauditFindingSerializer,
    ReauditFindingsQuerySerializer,
    ReauditRequestSerializer,
    ReauditRunSerializer,
    ReportJobSerializer,
    ReportRequestSerializer,
)

CONTENT_TYPES = {
    "csv": "text/csv",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
    "zip": "application/zip",
}


def _device(request) -> str:
    return request.headers.get("User-Agent", "")[:200]


def not_dispatched(obj) -> bool:
    """True when the commit ran its callbacks and the broker took nothing.
    Inside an outer transaction (tests) the dispatch has not happened yet."""
    if transaction.get_connection().in_atomic_block:
        return False
    return obj.dispatched_at is None and obj.status == Status.QUEUED


def accepted(data: dict, obj, what: str) -> Response:
    if not_dispatched(obj):
        data = {**data, "detail": f"{services.UNAVAILABLE}; {what} #{obj.pk} is "
                "kept and will be sent when the queue is back."}
        return Response(data, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": "120"})
    return Response(data, status=status.HTTP_202_ACCEPTED,
                    headers={"Location": data["status_url"]})


class ReportListCreate(ListAPIView):
    """Reports requested so far (newest first), or request one."""

    serializer_class = ReportJobSerializer
    queryset = ReportJob.objects.select_related("requested_by")

    def get_permissions(self):
        cap = "report.request" if self.request.method == "POST" else "report.read"
        return [Can(cap)()]

    @extend_schema(request=ReportRequestSerializer,
                   responses={202: ReportJobSerializer,
                              503: OpenApiResponse(description="queue unavailable")})
    def post(self, request):
        data = ReportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        job = services.report_request(
            user=request.user, kind=v["kind"], format=v["format"],
            from_day=v["from_day"], to_day=v["to_day"], group_by=v["group_by"],
            table_ids=v["tables"], device=_device(request),
        )
        job.refresh_from_db()
        return accepted(ReportJobSerializer(job).data, job, "report")


class ReportDetail(RetrieveAPIView):
    """A report job: status, percent and rows, the error if it failed, the stamp."""

    serializer_class = ReportJobSerializer
    queryset = ReportJob.objects.select_related("requested_by")
    permission_classes = [Can("report.read")]


def job_file_response(job: ReportJob, *, user=None,
                      device: str = "") -> FileResponse:
    """The job's file from the path the app derives, once its digest is
    checked against the trail (files.job_file_open): NotFound or
    RecordChanged (409, a critical flag) otherwise."""
    f = job_file_open(job, user=user, device=device)
    return FileResponse(f, as_attachment=True, filename=job_name(job),
                        content_type=CONTENT_TYPES[job.format])


class ReportDownload(APIView):
    permission_classes = [Can("report.read")]

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    def get(self, request, pk: int):
        job = ReportJob.objects.filter(pk=pk).first()
        if job is None:
            raise Http404("no such report")
        return job_file_response(job, user=request.user, device=_device(request))


def report_json(report) -> dict:
    def row(r) -> dict:
        return {
            "key": str(r.key), "label": r.label, "coups": r.coups,
            "banker_wins": r.banker_wins, "punter_wins": r.punter_wins,
            "ties": r.ties, "covered": r.covered, "commission": r.commission,
            "cagnotte_counted": r.counted, "cagnotte_variance": r.cagnotte_variance,
            "expected": r.expected, "band_low": r.band_low, "band_high": r.band_high,
            "z": r.z, "outside_band": r.outside, "findings": r.findings,
        }

    return {
        "from_day": report.from_day, "to_day": report.to_day,
        "group_by": report.group_by, "rows": [row(r) for r in report.rows],
        "total": row(report.total), "flagged": [row(c) for c in report.flagged],
        "days": [{"day": d.key, "commission": d.commission, "expected": d.expected,
                  "band_low": d.band_low, "band_high": d.band_high}
                 for d in report.days],
        "house_rules": report.rules,
    }


class CommissionView(APIView):
    """The commission report as JSON, read at once from the daily rollups."""

    permission_classes = [Can("report.read")]

    @extend_schema(parameters=[CommissionQuerySerializer],
                   responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        q = CommissionQuerySerializer(data=request.query_params)
        q.is_valid(raise_exception=True)
        v = q.validated_data
        start, end = services.check_period(v["from_day"], v["to_day"])
        # From the replica when there is one, saying how far its data goes.
        with replica.reading(), replica.snapshot() as position:
            report = commission_report(from_day=start, to_day=end,
                                       group_by=v["group_by"], table_ids=v["tables"])
        return Response({**report_json(report),
                         "data_position": position.as_dict()})


class OddsView(APIView):
    """Exact banker / punter / tie counts for a shoe, and the expected
    commission per unit covered."""

    permission_classes = [Can("report.read")]

    @extend_schema(parameters=[OddsQuerySerializer],
                   responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        from tables.chemmy import PUNTO_BANCO_TABLEAU
        from tables.errors import Invalid
        from tables.models import TableauVersion

        q = OddsQuerySerializer(data=request.query_params)
        q.is_valid(raise_exception=True)
        v = q.validated_data
        if v["punto_banco"]:
            tableau = PUNTO_BANCO_TABLEAU
        else:
            row = TableauVersion.objects.filter(version=v["tableau"]).first()
            if row is None:
                raise Invalid("tableau", f"unknown tableau {v['tableau']!r}")
            tableau = row.as_engine()
        odds = compute_odds(decks=v["decks"], tableau=tableau,
                            punter_draws_on_5=v["punter_draws_on_5"],
                            banker_optional=v["banker_draws_optional"])
        out = odds.as_dict()
        # exact counts as strings: they exceed a JSON double's integer range
        out["counts"] = {k: str(n) for k, n in out["counts"].items()}
        out["commission_rate"] = str(v["rate"])
        out["expected_commission_per_unit"] = as_decimal(
            odds.expected_commission_per_unit(v["rate"]))
        return Response(out)


class ReauditListCreate(ListAPIView):
    serializer_class = ReauditRunSerializer
    queryset = ReauditRun.objects.all()

    def get_permissions(self):
        cap = "reaudit.run" if self.request.method == "POST" else "report.read"
        return [Can(cap)()]

    @extend_schema(request=ReauditRequestSerializer,
                   responses={202: ReauditRunSerializer,
                              503: OpenApiResponse(description="queue unavailable")})
    def post(self, request):
        data = ReauditRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        run = reaudit_services.reaudit_request(
            user=request.user, from_day=v["from_day"], to_day=v["to_day"],
            tableau_version=v["tableau_version"], chunk_size=v["chunk_size"],
            table_ids=v["tables"], device=_device(request),
        )
        run.refresh_from_db()
        return accepted(ReauditRunSerializer(run).data, run, "re-audit")


class ReauditDetail(RetrieveAPIView):
    serializer_class = ReauditRunSerializer
    queryset = ReauditRun.objects.all()
    permission_classes = [Can("report.read")]


# The query's word -> the stored change (ReauditFinding.Change).
CHANGES = {"appear": ["new"], "disappear": ["cleared"], "kept": ["kept"],
           "changed": ["new", "cleared"]}


class ReauditFindings(ListAPIView):
    """A run's findings that appear (new under its version) and disappear
    (recorded under the version the coup was checked against, gone under its
    version), by gaming day and coup. The findings kept are counted on the
    run (`kept`), not listed (`?change=kept` lists them for older runs)."""

    serializer_class = ReauditFindingSerializer
    permission_classes = [Can("report.read")]

    @extend_schema(parameters=[ReauditFindingsQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema's generator
            return ReauditFinding.objects.none()
        run = ReauditRun.objects.filter(pk=self.kwargs["pk"]).first()
        if run is None:
            raise Http404("no such re-audit")
        q = ReauditFindingsQuerySerializer(data=self.request.query_params)
        q.is_valid(raise_exception=True)
        return (ReauditFinding.objects.filter(
                    run=run, change__in=CHANGES[q.validated_data["change"]])
                .select_related("table", "coup")
                .order_by("gaming_day", "coup_id", "id"))
