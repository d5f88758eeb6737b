from django.urls import path

from . import accept, coup, lock, views

app_name = "tablet"

urlpatterns = [
    path("", views.tables, name="tables"),
    path("sw.js", coup.service_worker, name="sw"),
    path("tables/<id:table_id>/session/", views.session_start, name="session-start"),
    path("sessions/<id:session_id>/", views.session_hub, name="session"),
    path("sessions/<id:session_id>/shoes/", views.shoe_open, name="shoe-open"),
    path("sessions/<id:session_id>/turns/", views.turn_open, name="turn-open"),
    path("sessions/<id:session_id>/take-bank/", views.bank_take, name="bank-take"),
    path("sessions/<id:session_id>/close/", views.session_close, name="session-close"),
    path("shoes/<id:shoe_id>/", coup.coup_screen, name="coup"),
    path("shoes/<id:shoe_id>/state/", coup.shoe_state_json, name="state"),
    path("shoes/<id:shoe_id>/recent/", coup.recent_coups, name="recent"),
    path("shoes/<id:shoe_id>/close/", views.shoe_close, name="shoe-close"),
    path("turns/<id:turn_id>/pass/", views.turn_pass, name="turn-pass"),
    path("accept/", accept.TabletAcceptView.as_view(), name="accept"),
    path("lock/", lock.lock, name="lock"),
    path("unlock/", lock.unlock, name="unlock"),
    path("preferences/", lock.preferences, name="preferences"),
]
