"""/metrics (audit/metrics.py), at the site's root as Prometheus expects."""

from django.urls import path

from .metrics import metrics_view

urlpatterns = [path("metrics", metrics_view, name="metrics")]
