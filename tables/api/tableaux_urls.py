"""Tableau versions (tables.api.tableaux), under /api/v1/."""

from django.urls import path

from . import tableaux as t

urlpatterns = [
    path("tableaux/", t.TableauListView.as_view(), name="api-tableaux"),
    path("tableaux/<id:pk>/", t.TableauDetailView.as_view(), name="api-tableau"),
    path("tableaux/<id:pk>/diff/", t.TableauDiffView.as_view(),
         name="api-tableau-diff"),
    path("tables/<id:pk>/tableau/", t.TableTableauView.as_view(),
         name="api-table-tableau"),
]
