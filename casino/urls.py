from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema"),
        name="api-docs",
    ),
    path("api/v1/", include("tables.api.urls")),
    path("api/v1/", include("audit.api_urls")),
    path("api/v1/reports/", include("audit.reports.api_urls")),
    path("tablet/", include("tables.tablet.urls")),
    path("floor/", include("audit.urls")),
    path("reports/", include("audit.reports.urls")),
    path("", include("tables.urls")),
]

if settings.BENCH_BARE_ENDPOINT:
    # Only for bench/: the yardstick a coup is measured against.
    from casino.bench import BareInsertView

    urlpatterns.append(path("api/v1/bench/bare/", BareInsertView.as_view()))
