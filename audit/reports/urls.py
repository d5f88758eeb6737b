from django.urls import path

from . import views

app_name = "reports"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("request/", views.request_report, name="request"),
    path("jobs/<id:pk>/", views.job_page, name="job"),
    path("jobs/<id:pk>/download/", views.job_download, name="download"),
    path("progress.json", views.progress, name="progress"),
    path("reaudit/", views.reaudit_start, name="reaudit-start"),
    path("reaudit/<id:pk>/", views.reaudit_page, name="reaudit"),
]
