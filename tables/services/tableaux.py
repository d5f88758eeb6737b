"""A new banker's tableau (a house variant). Tableaux are versioned data: a
variant is a new row, never an edit; a table moves to it through
house_rules_change, and every coup keeps the version it was checked against."""

from __future__ import annotations

from django.db import transaction

from casino.changelog import log_action

from .. import chemmy
from ..errors import Invalid
from ..models import TableauVersion


def tableau_create(
    *, version: str, rows: dict, user, reason: str, description: str = "",
    device: str = "",
) -> TableauVersion:
    reason = (reason or "").strip()
    if not reason:
        raise Invalid("reason", "a new tableau needs a reason")
    version = (version or "").strip()
    if not version or len(version) > 64:
        raise Invalid("version", "a name of 1 to 64 characters")
    try:
        engine = chemmy.Tableau.from_dict({"version": version, "rows": rows})
    except ValueError as exc:
        raise Invalid("rows", str(exc)) from None
    with transaction.atomic():
        if TableauVersion.objects.filter(version=version).exists():
            raise Invalid("version", f"tableau {version!r} already exists")
        row = TableauVersion.objects.create(
            version=version, description=description[:200],
            rows=engine.to_dict()["rows"])
        log_action(action="tables.tableau.created", user=user, device=device,
                   obj=row, reason=reason,
                   new={"version": version, "rows": row.rows,
                        "description": row.description})
    return row
