from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    # Language switch for people not signed in (the login page); a signed-in
    # user's language is their tablet setting.
    path("i18n/", include("django.conf.urls.i18n")),
]
