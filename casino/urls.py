from django.conf import settings
from django.contrib import admin
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from casino.api import IdConverter
from casino.health import health, health_details
from casino.tokens import TokenRevokeView
from casino.trail_api import CoupProofView, trail_checkpoint
from casino.views import favicon, trail_keys

# `<id:pk>`: an object id the database can hold (a longer one is a 404, not a
# 500). Registered here, before the includes below are imported.
register_converter(IdConverter, "id")

# JSON 404s under /api/ (the tablets parse them), the HTML page elsewhere.
handler404 = "casino.api.not_found"

urlpatterns = [
    path("admin/", admin.site.urls),
    # operations: a load balancer's probe, monitoring (casino/health.py,
    # audit/metrics.py)
    path("health/", health, name="health"),
    path("health/details/", health_details, name="health-details"),
    path("", include("audit.metrics_urls")),  # /metrics
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # its script at ?script, not inline (the Content-Security-Policy)
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema"),
        name="api-docs",
    ),
    path(
        "api/v1/users/<id:pk>/token/revoke/",
        TokenRevokeView.as_view(),
        name="api-token-revoke",
    ),
    path("api/v1/", include("tables.api.urls")),
    path("api/v1/", include("tables.api.tableaux_urls")),
    path("api/v1/", include("audit.api_urls")),
    path("api/v1/reports/", include("audit.reports.api_urls")),
    path("tablet/", include("tables.tablet.urls")),
    path("floor/", include("audit.urls")),
    path("reports/", include("audit.reports.urls")),
    path("tableaux/", include("audit.tableaux_urls")),
    # the casino's public signing keys (casino/signing.py): for anyone
    path("trail/keys.json", trail_keys, name="trail-keys"),
    path("trail/checkpoint", trail_checkpoint, name="trail-checkpoint"),
    path("api/v1/coups/<id:pk>/proof/", CoupProofView.as_view(),
         name="api-coup-proof"),
    # what every browser asks for first (casino/views.py)
    path("favicon.ico", favicon, name="favicon"),
    path("", include("tables.urls")),
]

if settings.BENCH_BARE_ENDPOINT:
    # Only for bench/: the yardstick a coup is measured against.
    from casino.bench import BareInsertView

    urlpatterns.append(path("api/v1/bench/bare/", BareInsertView.as_view()))
