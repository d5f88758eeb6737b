"""Pages. The tablet screens come with the tablet issue; this is the front door."""

from django.shortcuts import render

from .models import Table


def home(request):
    tables = Table.objects.select_related("rules__tableau").order_by("name")
    return render(request, "home.html", {"tables": tables})
