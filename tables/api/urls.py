from django.urls import path

from . import house
from . import views as v

urlpatterns = [
    path("auth/token/", v.TokenView.as_view(), name="api-token"),
    path("tables/", v.TableListView.as_view(), name="api-tables"),
    path("tables/<id:pk>/", v.TableDetailView.as_view(), name="api-table"),
    path(
        "tables/<id:pk>/rules/",
        house.TableRulesView.as_view(),
        name="api-table-rules",
    ),
    path(
        "tables/<id:pk>/sessions/",
        v.SessionOpenView.as_view(),
        name="api-session-open",
    ),
    path("sessions/", v.SessionListView.as_view(), name="api-sessions"),
    path("sessions/<id:pk>/", v.SessionDetailView.as_view(), name="api-session"),
    path(
        "sessions/<id:pk>/close/",
        v.SessionCloseView.as_view(),
        name="api-session-close",
    ),
    path("sessions/<id:pk>/shoes/", v.ShoeOpenView.as_view(), name="api-shoe-open"),
    path("sessions/<id:pk>/turns/", v.TurnOpenView.as_view(), name="api-turn-open"),
    path("shoes/<id:pk>/", v.ShoeDetailView.as_view(), name="api-shoe"),
    path("shoes/<id:pk>/close/", v.ShoeCloseView.as_view(), name="api-shoe-close"),
    path(
        "shoes/<id:pk>/release/",
        house.ShoeReleaseView.as_view(),
        name="api-shoe-release",
    ),
    path("shoes/<id:pk>/coups/", v.CoupRecordView.as_view(), name="api-coup-record"),
    path(
        "shoes/<id:pk>/coups/accept/",
        v.CoupAcceptView.as_view(),
        name="api-coup-accept",
    ),
    path("turns/<id:pk>/", v.TurnDetailView.as_view(), name="api-turn"),
    path("turns/<id:pk>/pass/", v.TurnPassView.as_view(), name="api-turn-pass"),
    path("coups/", v.CoupListView.as_view(), name="api-coups"),
    path("coups/<id:pk>/", v.CoupDetailView.as_view(), name="api-coup"),
    path("check/", v.CheckView.as_view(), name="api-check"),
]
