"""A manager's tableau pages (docs/rules.md, "Tableau versions"): the
versions, a grid editor that makes a new one from another, the difference with
the version in force at a table, the assignment to a table from a gaming day
and the re-audit it offers. Thin: the same services as the API
(tables.services.tableaux); permissions in casino.access.ROUTES."""

from __future__ import annotations

from datetime import date, timedelta

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from casino.access import route_page
from casino.api import parse_id
from casino.bounds import check_day
from casino.errors import Invalid
from casino.roles import has_capability
from tables.api.views import device_of
from tables.errors import ServiceError
from tables.models import Table, TableauVersion
from tables.services.floor import gaming_day_for
from tables.services.tableaux import (
    BANKER_TOTALS,
    COLUMN_NAMES,
    cell_key,
    tableau_assign,
    tableau_derive,
    tableau_diff,
    tableau_in_force,
)

CELL_PREFIX = "cell:"


def grid(rows: dict, source: dict | None = None, changed: set | None = None):
    """Rows of cells for the template: key, value, the source's value, and
    whether the cell differs from it."""
    out = []
    for t in BANKER_TOTALS:
        cells = []
        for c in range(len(COLUMN_NAMES)):
            value = rows[str(t)][c]
            was = source[str(t)][c] if source else value
            key = cell_key(t, c)
            cells.append({"key": key, "value": value, "was": was,
                          "changed": value != was or key in (changed or ())})
        out.append({"total": t, "cells": cells})
    return out


def _tables():
    return Table.objects.filter(active=True).select_related("rules__tableau")


@route_page
def tableau_list(request):
    rows = TableauVersion.objects.order_by("created_at", "id")
    in_force: dict[int, list[str]] = {}
    for t in _tables():
        tv = tableau_in_force(t)
        if tv is not None:
            in_force.setdefault(tv.pk, []).append(t.name)
    return render(request, "audit/tableaux.html", {
        "versions": [{"row": r, "tables": in_force.get(r.pk, [])} for r in rows],
        "can_manage": has_capability(request.user, "table.manage"),
    })


@route_page
def tableau_new(request):
    """GET: the editor on a copy of ?from= (a version id; the standard one
    by default). POST: the new version, or the editor again saying why not."""
    p = request.POST if request.method == "POST" else request.GET
    source_id = parse_id(p.get("from", ""))
    source = (TableauVersion.objects.filter(pk=source_id).first() if source_id
              else TableauVersion.objects.order_by("created_at", "id").first())
    if source is None:
        messages.error(request, _("There is no tableau to start from."))
        return redirect("tableaux:list")
    rows = {k: list(v) for k, v in source.rows.items()}
    form = {"version": "", "description": "", "reason": ""}
    error = None
    if request.method == "POST":
        form = {k: p.get(k, "") for k in form}
        cells = {}
        for name, value in p.items():
            if name.startswith(CELL_PREFIX):
                cells[name[len(CELL_PREFIX):]] = value
        try:
            row = tableau_derive(
                from_version=source.version, version=form["version"],
                cells=cells, user=request.user, reason=form["reason"],
                description=form["description"], device=device_of(request))
        except ServiceError as exc:
            error = exc
            for key, value in cells.items():  # the manager's cells, kept
                total, _sep, col = key.partition("/")
                if total in rows and col in COLUMN_NAMES and value in "DSO" \
                        and len(value) == 1:
                    rows[total][COLUMN_NAMES.index(col)] = value
        else:
            messages.success(request, _("Tableau %(name)s saved.")
                             % {"name": row.version})
            return redirect("tableaux:detail", pk=row.pk)
    return render(request, "audit/tableau_edit.html", {
        "source": source, "grid": grid(rows, source.rows), "columns": COLUMN_NAMES,
        "form": form, "error": error,
        "versions": TableauVersion.objects.order_by("created_at", "id"),
    }, status=400 if error else 200)


def _default_period(start: date) -> tuple[date, date]:
    return start - timedelta(days=30), start - timedelta(days=1)


@route_page
def tableau_detail(request, pk: int):
    """The version's grid; the cells where it differs from the version in
    force at a chosen table; the assignment form; the re-audit offer."""
    row = get_object_or_404(TableauVersion, pk=pk)
    tables = list(_tables())
    table = None
    if table_id := parse_id(request.GET.get("table", "")):
        table = next((t for t in tables if t.pk == table_id), None)
    elif tables:
        table = tables[0]
    against = tableau_in_force(table) if table else None
    changes = tableau_diff(against, row) if against else []
    changed = {c["cell"] for c in changes}
    tomorrow = gaming_day_for(
        timezone.now(), table.rules.gaming_day_cutoff if table and table.rules
        else 6) + timedelta(days=1)
    assigned = parse_id(request.GET.get("assigned", ""))
    start = None
    if assigned:
        try:
            start = date.fromisoformat(request.GET.get("from", ""))
            check_day("from", start)
        except (ValueError, Invalid):  # a hint for the re-audit offer only
            start = None
    from_day, to_day = _default_period(start or tomorrow)
    return render(request, "audit/tableau.html", {
        "row": row, "grid": grid(row.rows, against.rows if against else None,
                                 changed),
        "columns": COLUMN_NAMES, "tables": tables, "table": table,
        "against": against, "changes": changes, "tomorrow": tomorrow,
        "assigned": assigned and table and assigned == table.pk,
        "assigned_from": start, "from_day": from_day, "to_day": to_day,
        "can_manage": has_capability(request.user, "table.manage"),
        "can_reaudit": has_capability(request.user, "reaudit.run"),
        "here": request.get_full_path(),
    })


@require_POST
@route_page
def tableau_assign_page(request, pk: int):
    row = get_object_or_404(TableauVersion, pk=pk)
    p = request.POST
    table = Table.objects.filter(pk=parse_id(p.get("table", "")) or 0).first()
    back = reverse("tableaux:detail", args=[row.pk])
    if table is None:
        messages.error(request, _("table: choose a table."))
        return redirect(back)
    day = None
    if p.get("effective_from"):
        try:
            day = date.fromisoformat(p["effective_from"])
        except ValueError:
            messages.error(request, _("effective_from: not a date."))
            return redirect(f"{back}?table={table.pk}")
    try:
        rules = tableau_assign(
            table=table, tableau_version=row.version, effective_from=day,
            reason=p.get("reason", ""), user=request.user,
            device=device_of(request))
    except ServiceError as exc:
        messages.error(request, f"{exc.field}: {exc.message}")
        return redirect(f"{back}?table={table.pk}")
    start = rules.effective_from or gaming_day_for(
        timezone.now(), rules.gaming_day_cutoff)
    messages.success(request, _(
        "%(table)s plays %(tableau)s from gaming day %(day)s (house rules "
        "version %(version)s).") % {"table": table.name, "tableau": row.version,
                                    "day": start, "version": rules.version})
    return redirect(f"{back}?table={table.pk}&assigned={table.pk}&from={start}")
