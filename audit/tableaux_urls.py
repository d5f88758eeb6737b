"""A manager's tableau pages under /tableaux/ (names: casino.access.ROUTES)."""

from django.urls import path

from .pages import tableaux

app_name = "tableaux"

urlpatterns = [
    path("", tableaux.tableau_list, name="list"),
    path("new/", tableaux.tableau_new, name="new"),
    path("<id:pk>/", tableaux.tableau_detail, name="detail"),
    path("<id:pk>/assign/", tableaux.tableau_assign_page, name="assign"),
]
