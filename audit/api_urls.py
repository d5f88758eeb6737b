"""The pit boss's API under /api/v1/ (names: casino.access.ROUTES)."""

from django.urls import path

from .api import views as v
from .surveillance import api as surveillance

urlpatterns = [
    path("floor/", v.FloorView.as_view(), name="audit-api-floor"),
    path("flags/", v.FlagListView.as_view(), name="audit-api-flags"),
    path("flags/counts/", v.FlagCountsView.as_view(), name="audit-api-flag-counts"),
    path("flags/<id:pk>/", v.FlagDetailView.as_view(), name="audit-api-flag"),
    path("flags/<id:pk>/confirm/", v.FlagConfirmView.as_view(),
         name="audit-api-flag-confirm"),
    path("flags/<id:pk>/dismiss/", v.FlagDismissView.as_view(),
         name="audit-api-flag-dismiss"),
    path("coups/<id:pk>/correction/preview/", v.CorrectionPreviewView.as_view(),
         name="audit-api-correction-preview"),
    path("coups/<id:pk>/correction/", v.CorrectionView.as_view(),
         name="audit-api-correction"),
    path("coups/<id:pk>/revisions/", v.RevisionsView.as_view(),
         name="audit-api-revisions"),
    path("sessions/<id:pk>/cagnotte/", v.CagnotteView.as_view(),
         name="audit-api-cagnotte"),
    path("sessions/<id:pk>/croupier/", v.CroupierView.as_view(),
         name="audit-api-croupier"),
    path("cagnotte/<id:pk>/attest/", v.AttestView.as_view(), name="audit-api-attest"),
    path("stats/", v.StatsView.as_view(), name="audit-api-stats"),
    path("trail/", v.TrailView.as_view(), name="audit-api-trail"),
    path("trail/verify/", v.TrailVerifyView.as_view(), name="audit-api-trail-verify"),
    path("surveillance/runs/", surveillance.RunListCreate.as_view(),
         name="audit-api-surveillance-runs"),
    path("surveillance/runs/<id:pk>/", surveillance.RunDetail.as_view(),
         name="audit-api-surveillance-run"),
    path("surveillance/runs/<id:pk>/alerts/", surveillance.RunAlerts.as_view(),
         name="audit-api-surveillance-alerts"),
]
