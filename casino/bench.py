"""The bare endpoint the coup benchmark is measured against: same stack
(DRF, token auth, a persistent connection), a single INSERT and nothing else."""

from django.utils import timezone
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import BenchRow


class BareInsertView(APIView):
    def post(self, request):
        row = BenchRow.objects.create(at=timezone.now(), note="bench.bare")
        return Response({"id": row.pk}, status=201)
