from django.urls import path

from . import api

app_name = "reports-api"

urlpatterns = [
    path("", api.ReportListCreate.as_view(), name="jobs"),
    path("<id:pk>/", api.ReportDetail.as_view(), name="job"),
    path("<id:pk>/download/", api.ReportDownload.as_view(), name="download"),
    path("commission/", api.CommissionView.as_view(), name="commission"),
    path("odds/", api.OddsView.as_view(), name="odds"),
    path("reaudit/", api.ReauditListCreate.as_view(), name="reaudits"),
    path("reaudit/<id:pk>/", api.ReauditDetail.as_view(), name="reaudit"),
    path("reaudit/<id:pk>/findings/", api.ReauditFindings.as_view(),
         name="reaudit-findings"),
]
