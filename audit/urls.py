"""The pit boss's pages under /floor/ (names: casino.access.ROUTES)."""

from django.urls import path

from .pages import floor, house, review, sessions, surveillance

app_name = "floor"

urlpatterns = [
    path("", floor.floor, name="index"),
    path("tables/", floor.floor_tables, name="tables"),
    path("queue/", floor.queue, name="queue"),
    path("tables/<id:pk>/open/", floor.session_open, name="session-open"),
    path("flags/<id:pk>/", review.flag_page, name="flag"),
    path("flags/<id:pk>/confirm/", review.flag_confirm, name="flag-confirm"),
    path("flags/<id:pk>/dismiss/", review.flag_dismiss, name="flag-dismiss"),
    path("coups/<id:pk>/", review.coup_page, name="coup"),
    path("coups/<id:pk>/correct/", review.correct, name="correct"),
    path("sessions/<id:pk>/", sessions.session_page, name="session"),
    path("sessions/<id:pk>/close/", sessions.session_close, name="session-close"),
    path("sessions/<id:pk>/croupier/", sessions.croupier, name="croupier"),
    path("sessions/<id:pk>/count/", sessions.count, name="count"),
    path("cagnotte/<id:pk>/attest/", sessions.attest, name="attest"),
    path("stats/", floor.stats_page, name="stats"),
    path("trail/", floor.trail, name="trail"),
    path("rules/", house.rules_index, name="rules"),
    path("tables/<id:pk>/rules/", house.table_rules, name="table-rules"),
    path("shoes/<id:pk>/release/", house.release, name="shoe-release"),
    path("surveillance/", surveillance.surveillance, name="surveillance"),
    path("surveillance/run/", surveillance.surveillance_start,
         name="surveillance-start"),
    path("surveillance/runs/<id:pk>/", surveillance.surveillance_run,
         name="surveillance-run"),
    path("surveillance/progress.json", surveillance.surveillance_progress,
         name="surveillance-progress"),
]
